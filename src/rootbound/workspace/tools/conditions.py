"""Conditional writes (issue 49): ``if_match`` (a SHA-256 digest the file must have) and ``if_none_match: "*"``
(create only) on the writing tools, and the refusal that carries the file's current digest.

Why a module of its own: the same two arguments, their schemas and the same refusal serve several tools, and the
check itself is the wall's (``RootedFS.edit_file``'s and ``write_bytes``' ``expected_hash``: read beneath the held
directory, read again once the new content is durable, inode, size and mtime last before the rename), so a
mismatch changes nothing. ``expected_sha256``, the older spelling on ``edit_file``, means the same as ``if_match``.
Published as part of our extension (``docs/resources.md``, "Conditional writes").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rootbound.core.errors import RootsError, TooLarge
from rootbound.search.rooted_fs import RootedFS
from rootbound.text.edit import content_hash
from rootbound.text.patch_grammar import MAX_FILES, Patch
from rootbound.workspace.tools.calls import ToolError
from rootbound.workspace.tools.specs import _object

__all__ = [
    "DIGEST_CAP",
    "IF_MATCH",
    "IF_NONE_MATCH",
    "PATCH_IF_MATCH",
    "changed",
    "changed_since_read",
    "create_only",
    "expected_digest",
    "patch_digests",
]

DIGEST_CAP: Final = 16 * 1024 * 1024
"""The largest file whose current digest a refusal computes (the resources' digest bound)."""
IF_MATCH: Final = {
    "type": "string",
    "pattern": "^(sha256:)?[0-9a-fA-F]{64}$",
    "description": (
        "Refuse unless the file's SHA-256 is this (sha256:<hex> as resources/read gives it, or the 64 hex digits): "
        "the write is lost-update safe; a refusal gives the current digest and changes nothing."
    ),
}
IF_NONE_MATCH: Final = {
    "type": "string",
    "enum": ["*"],
    "description": 'With "*": create only; refuse if the file exists (as overwrite: false).',
}

PATCH_IF_MATCH: Final = {
    "type": "array",
    "maxItems": MAX_FILES,
    "items": _object({"path": {"type": "string", "minLength": 1}, "sha256": IF_MATCH}, ["path", "sha256"]),
    "description": (
        "Per file: [{path, sha256}], path exactly as the patch writes it after '*** Update File: ' or "
        "'*** Delete File: '. The whole patch is refused, nothing changed, unless each named file still has that "
        "digest; a refusal gives the current one."
    ),
}


def _digest(value: object, name: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        hexes = value.removeprefix("sha256:")
        if len(hexes) == 64 and all(c in "0123456789abcdefABCDEF" for c in hexes):
            return hexes.lower()
    if name == "if_match":
        raise ToolError("argument 'if_match' must be a SHA-256 digest: 64 hex digits, or sha256:<64 hex digits>")
    raise ToolError("argument 'expected_sha256' must be 64 hex digits")


def expected_digest(args: Mapping[str, Any], *, legacy: bool = False) -> str | None:
    """The digest the file must have (``if_match``, or ``expected_sha256`` where ``legacy``), or ``None``."""
    wanted = _digest(args.get("if_match"), "if_match")
    if legacy:
        older = _digest(args.get("expected_sha256"), "expected_sha256")
        if wanted is not None and older is not None and wanted != older:
            raise ToolError("if_match and expected_sha256 differ: send one of them")
        wanted = wanted or older
    return wanted


def create_only(args: Mapping[str, Any], *, one_file: bool = True) -> bool:
    """``if_none_match: "*"``; where both name ``one_file``, refused together with ``if_match`` (one file cannot
    be both; a move's ``if_match`` is its source's, its ``if_none_match`` its destination's)."""
    value = args.get("if_none_match")
    if value is None:
        return False
    if value != "*":
        raise ToolError("argument 'if_none_match' must be \"*\" (create only)")
    if one_file and args.get("if_match") is not None:
        raise ToolError("if_match and if_none_match exclude each other: send one")
    return True


def patch_digests(args: Mapping[str, Any], patch: Patch) -> dict[str, str]:
    """``apply_patch``'s ``if_match``: ``[{path, sha256}]``, each path one the patch updates, moves or deletes, as
    it writes it."""
    value = args.get("if_match")
    if value is None:
        return {}
    if not isinstance(value, list) or len(value) > MAX_FILES:
        raise ToolError(
            f"argument 'if_match' of apply_patch must be a list of at most {MAX_FILES} entries: "
            "[{path: as the patch writes it, sha256: its digest}]"
        )
    sources = {op.path for op in patch.ops if op.kind != "add"}
    digests: dict[str, str] = {}
    for index, entry in enumerate(value, 1):
        path = entry.get("path") if isinstance(entry, Mapping) else None
        if path not in sources or path in digests:
            raise ToolError(
                f"if_match entry {index} names no file the patch updates, moves or deletes (or one named before): "
                "use the path exactly as written after '*** Update File: ' or '*** Delete File: ', once"
            )
        wanted = _digest(entry.get("sha256"), "if_match")
        if wanted is None or not isinstance(path, str):
            raise ToolError(f"if_match entry {index} needs sha256: the digest the file must have")
        digests[path] = wanted
    return digests


def changed_since_read(fs: RootedFS, path: object) -> str:
    """Why a write whose precondition failed was refused, and what the file is now (its digest)."""
    return str(changed(fs, path)).removeprefix("nothing changed: ")


def changed(fs: RootedFS, path: object) -> ToolError:
    """The refusal of a write whose precondition failed: nothing was written, and what the file is now."""
    try:
        now = f"its sha256 is now sha256:{content_hash(fs.read_bytes(path, max_size=DIGEST_CAP))}"
    except TooLarge:
        now = f"it is now over {DIGEST_CAP} bytes (no digest computed)"
    except (RootsError, OSError):
        now = "it does not exist now (or cannot be read)"
    return ToolError(
        f"nothing changed: the file changed since it was read: it is not the one if_match names ({now}); read it "
        "again, then retry with if_match set to its current digest"
    )
