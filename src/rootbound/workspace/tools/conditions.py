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
from rootbound.workspace.tools.calls import ToolError

__all__ = ["DIGEST_CAP", "IF_MATCH", "IF_NONE_MATCH", "changed", "create_only", "expected_digest"]

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


def create_only(args: Mapping[str, Any]) -> bool:
    """``if_none_match: "*"``; refused together with ``if_match`` (one file cannot be both)."""
    value = args.get("if_none_match")
    if value is None:
        return False
    if value != "*":
        raise ToolError("argument 'if_none_match' must be \"*\" (create only)")
    if args.get("if_match") is not None:
        raise ToolError("if_match and if_none_match exclude each other: send one")
    return True


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
