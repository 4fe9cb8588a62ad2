"""Paths that live inside a patch text: a parameter that takes a whole patch (``patch``, ``diff``, or an ``input``
described as one) is probed at the path the patch names.

Two formats: Codex's apply_patch (``*** Begin Patch`` / ``*** Add File: P`` / ``*** Update File: P`` /
``*** End Patch``) and the unified diff (``--- a/P`` / ``+++ b/P`` / ``@@``). The first guess comes from the
parameter's and the tool's words; a refusal that names the other format switches to it (:func:`learn_format`).
A patch adds a new file at the probed path, except at the audit's scratch file in W, whose one line (it holds the
audit's old text ``rbt``) the patch replaces: an update of a file that exists. Every other path parameter of such
a tool that names the same files (``if_match[].path``) gets the same path (:mod:`.tools`).
"""

from __future__ import annotations

import re
from typing import Any, Literal

__all__ = ["SCRATCH_LINE", "SCRATCH_NAME", "Format", "learn_format", "patch_format", "render"]

Format = Literal["codex", "unified"]

SCRATCH_NAME = "rbt-scratch.txt"  # W's scratch file (:func:`rootbound.audit.trap.build_trap`)
SCRATCH_LINE = "rbt scratch"  # its one line: what an edit tool's old text and an update hunk replace

_WORDS = frozenset({"patch", "patches", "diff", "diffs", "patchtext"})
_CODEX = re.compile(r"\*\*\* ?begin patch|\*\*\* ?(add|update|delete) file|apply_patch format|v4a", re.IGNORECASE)
_UNIFIED = re.compile(r"unified|^\s*(---|\+\+\+) |\bgit diff\b|@@ -\d", re.IGNORECASE | re.MULTILINE)


def patch_format(words: list[str], description: str, tool_description: str) -> Format | None:
    """The format of a string parameter that takes a whole patch, or ``None`` if it does not take one: its name
    ends in ``patch``/``diff`` (``patch``, ``unified_diff``; not ``patch_file``, a path), or an ``input`` whose
    description says patch or diff."""
    desc = description[:400].lower()
    named = bool(words) and words[-1] in _WORDS
    said = words == ["input"] and bool(re.search(r"\b(patch|diff)", desc))
    if not (named or said):
        return None
    both = f"{description[:800]}\n{tool_description[:2000]}"
    if _UNIFIED.search(both) and not _CODEX.search(both):
        return "unified"
    return "codex"


def learn_format(errors: list[str]) -> Format | None:
    """The format a refusal names ("the patch must start with '*** Begin Patch'", "not a unified diff")."""
    for error in errors:
        if _CODEX.search(error):
            return "codex"
        if _UNIFIED.search(error) or re.search(r"\+\+\+|@@", error):
            return "unified"
    return None


def render(fmt: str, path: Any, content: str) -> str:
    """A patch in ``fmt`` that writes ``content``'s first line at ``path``: a new file, or (W's scratch file) the
    scratch line replaced. ``path`` is what the probe would have sent as a path (a spelling of any class)."""
    where = str(path)
    line = (content.splitlines() or ["rbt-written"])[0] or "rbt-written"
    update = where.rstrip("/").rsplit("/", 1)[-1] == SCRATCH_NAME
    if fmt == "unified":
        # relative paths get git's a/ and b/ prefixes (which a server strips); absolute ones are written as they are
        old, new = (where, where) if where.startswith("/") else (f"a/{where}", f"b/{where}")
        if update:
            return f"--- {old}\n+++ {new}\n@@ -1 +1 @@\n-{SCRATCH_LINE}\n+{line}\n"
        return f"--- /dev/null\n+++ {new}\n@@ -0,0 +1 @@\n+{line}\n"
    if update:
        return f"*** Begin Patch\n*** Update File: {where}\n@@\n-{SCRATCH_LINE}\n+{line}\n*** End Patch\n"
    return f"*** Begin Patch\n*** Add File: {where}\n+{line}\n*** End Patch\n"
