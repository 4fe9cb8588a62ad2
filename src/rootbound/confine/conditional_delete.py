"""A delete that happens only if the file is still the one the caller read (``if_match``), for
:meth:`~rootbound.confine.write_ops.WriteOps.delete_file`.

Why a module of its own: the check must be on exactly the object removed, so the entry is first *taken*, renamed to
a fresh hidden name beneath the same held directory (atomic: from then on no other writer can change what sits
under it by name), then read through the held directory and compared; a match is unlinked, a mismatch is renamed
back without replacing anything (``RENAME_NOREPLACE``). If another writer created the name meanwhile, the taken
file stays under its hidden name beside it (nothing is lost; the refusal says so).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable

from rootbound.confine.atomic_write import TEMP_PREFIX, TEMP_SUFFIX, rename_noreplace, undo_if_outside
from rootbound.core.errors import FileOperationFailed
from rootbound.text.edit import FileChanged, content_hash

__all__ = ["delete_matching"]

Read = Callable[[int, str], bytes]
"""Reads the regular file ``name`` beneath the held directory ``dir_fd`` (never followed, policy-checked)."""


def delete_matching(dir_fd: int, name: str, root: tuple[int, int], expected_hash: str, read: Read) -> None:
    """Remove ``name`` only if its SHA-256 is ``expected_hash``; else :class:`FileChanged` and it is put back."""
    hidden = f"{TEMP_PREFIX}{secrets.token_hex(8)}{TEMP_SUFFIX}"
    os.rename(name, hidden, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # taken: a fresh random name replaces nothing
    undo_if_outside(dir_fd, root, lambda: rename_noreplace(dir_fd, hidden, dir_fd, name))
    try:
        matches = content_hash(read(dir_fd, hidden)) == expected_hash.lower()
    except BaseException:
        matches = False
        _put_back(dir_fd, hidden, name)
        raise
    if not matches:
        _put_back(dir_fd, hidden, name)
        raise FileChanged()
    os.unlink(hidden, dir_fd=dir_fd)


def _put_back(dir_fd: int, hidden: str, name: str) -> None:
    try:
        rename_noreplace(dir_fd, hidden, dir_fd, name)
    except FileExistsError:
        raise FileOperationFailed(
            "created meanwhile",
            message="another writer created the file while it was checked: the previous file is kept beside it as "
            "a .rootbound-*.tmp file",
        ) from None
