"""Unified diffs of two texts, as ``diff -u`` and git write them, for ``edit_file`` answers.

Why its own module: rendering a change is a separate concern from finding where an edit applies
(:mod:`rootbound.text.edit`), with its own rules: line endings kept as they are, git's ``\\ No newline at end of file``
marker, and common leading and trailing lines set aside before :class:`difflib.SequenceMatcher` runs, so a small
edit to a large file stays cheap.
"""

from __future__ import annotations

import difflib
from typing import Final

from rootbound.core.call_budget import checkpoint

__all__ = ["unified_diff"]

MATCHED_PAIRS: Final = 4_000_000
"""Above this many (old line, new line) pairs in the changed middle, :class:`difflib.SequenceMatcher` (quadratic
at worst, and deaf to the call's budget) is not run: the middle is shown as one hunk, removed then added (#48)."""


def _split_keep(text: str) -> list[str]:
    pieces = text.split("\n")
    lines = [p + "\n" for p in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def unified_diff(before: str, after: str, path: str = "file", *, context: int = 3) -> str:
    """``diff -u``-style text from ``before`` to ``after``: a relative ``path`` is labelled ``a/path`` and
    ``b/path`` (git's repository form); an absolute one is shown as it is on both lines (``diff -u``'s form, which
    ``patch -p0`` applies), never glued to ``a/`` (``a//srv/x`` or ``a/srv/x`` names no file).

    Line endings are kept as they are (a CRLF line shows its ``\\r``); a last line without a newline gets git's
    ``\\ No newline at end of file`` marker. Common leading and trailing lines are set aside before
    :class:`difflib.SequenceMatcher` runs, so a small edit to a large file stays cheap.
    """
    if before == after:
        return ""
    a, b = _split_keep(before), _split_keep(after)
    prefix = 0
    limit = min(len(a), len(b))
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    lo = max(0, prefix - context)
    a_hi, b_hi = len(a) - max(0, suffix - context), len(b) - max(0, suffix - context)
    checkpoint(prefix + suffix)
    old, new = (path, path) if path.startswith("/") else (f"a/{path}", f"b/{path}")
    out = [f"--- {old}\n", f"+++ {new}\n"]
    if (len(a) - prefix - suffix) * (len(b) - prefix - suffix) > MATCHED_PAIRS:
        out.append(f"@@ -{_range(lo, a_hi)} +{_range(lo, b_hi)} @@\n")
        out.extend(_mark(" ", a[lo:prefix]))
        out.extend(_mark("-", a[prefix : len(a) - suffix]))
        out.extend(_mark("+", b[prefix : len(b) - suffix]))
        out.extend(_mark(" ", a[len(a) - suffix : a_hi]))
        return "".join(out)
    matcher = difflib.SequenceMatcher(None, a[lo:a_hi], b[lo:b_hi])
    for group in matcher.get_grouped_opcodes(context):
        checkpoint()
        first, last = group[0], group[-1]
        i1, i2, j1, j2 = first[1] + lo, last[2] + lo, first[3] + lo, last[4] + lo
        out.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out.extend(_mark(" ", a[lo + a1 : lo + a2]))
                continue
            if tag in ("replace", "delete"):
                out.extend(_mark("-", a[lo + a1 : lo + a2]))
            if tag in ("replace", "insert"):
                out.extend(_mark("+", b[lo + b1 : lo + b2]))
    return "".join(out)


def _range(start: int, stop: int) -> str:
    """A hunk range as ``diff -u`` writes it (1-based start; an empty range names the line before it)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _mark(sign: str, lines: list[str]) -> list[str]:
    out = [sign + line for line in lines]
    if out and not out[-1].endswith("\n"):
        out[-1] += "\n\\ No newline at end of file\n"
    return out
