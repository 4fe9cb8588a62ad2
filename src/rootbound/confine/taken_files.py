"""Taking a file away from its name before acting on it: a delete or a move that happens only if the file is
still the one the caller read (``if_match``), and the plain delete without a kernel wall, for
:class:`~rootbound.confine.write_ops.WriteOps`.

Why a module of its own: the check must be on exactly the object removed or moved, so the entry is first *taken*,
renamed to a fresh hidden name beneath the same held directory (atomic: from then on no other writer can change
what sits under it by name), then read through the held directory and compared; a match is unlinked or moved on
from the hidden name, a mismatch (or a failed move) is renamed back without replacing anything
(``RENAME_NOREPLACE``). If another writer created the name meanwhile, the taken file stays under its hidden name
beside it (nothing is lost; the refusal says so).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator

from rootbound.confine.atomic_write import TEMP_PREFIX, TEMP_SUFFIX, rename_noreplace, undo_if_outside
from rootbound.core.errors import FileOperationFailed
from rootbound.text.edit import FileChanged, content_hash

__all__ = ["delete_matching", "hidden_name", "taken_matching", "unlink_checked"]

Read = Callable[[int, str], bytes]
"""Reads the regular file ``name`` beneath the held directory ``dir_fd`` (never followed, policy-checked)."""


def hidden_name() -> str:
    """A fresh random temp name: renaming to it replaces nothing."""
    return f"{TEMP_PREFIX}{secrets.token_hex(8)}{TEMP_SUFFIX}"


@contextlib.contextmanager
def taken_matching(dir_fd: int, name: str, root: tuple[int, int], expected_hash: str, read: Read) -> Iterator[str]:
    """``name`` taken to a hidden name (yielded) if its SHA-256 is ``expected_hash``, else :class:`FileChanged`.

    The body moves or removes the hidden name; if it raises (or the content does not match), the file is put back
    under ``name``."""
    hidden = hidden_name()
    os.rename(name, hidden, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # taken: a fresh random name replaces nothing
    undo_if_outside(dir_fd, root, lambda: rename_noreplace(dir_fd, hidden, dir_fd, name))
    try:
        if content_hash(read(dir_fd, hidden)) != expected_hash.lower():
            raise FileChanged()
        yield hidden
    except BaseException:
        _put_back(dir_fd, hidden, name)
        raise


def delete_matching(dir_fd: int, name: str, root: tuple[int, int], expected_hash: str, read: Read) -> None:
    """Remove ``name`` only if its SHA-256 is ``expected_hash``; else :class:`FileChanged` and it is put back."""
    with taken_matching(dir_fd, name, root, expected_hash, read) as hidden:
        os.unlink(hidden, dir_fd=dir_fd)


def unlink_checked(dir_fd: int, name: str, root: tuple[int, int], *, undo: bool) -> None:
    """Remove ``name``; with ``undo`` (no kernel wall) it is first renamed to a fresh hidden name and removed only
    once its directory is proven beneath the root again (else renamed back): what is removed is the entry that
    was inside when the rename ran, never a file in a directory outside."""
    if not undo:
        os.unlink(name, dir_fd=dir_fd)  # a directory swapped in meanwhile fails (EISDIR)
        return
    hidden = hidden_name()
    os.rename(name, hidden, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # a fresh random name: nothing to replace
    undo_if_outside(dir_fd, root, lambda: rename_noreplace(dir_fd, hidden, dir_fd, name))
    try:
        os.unlink(hidden, dir_fd=dir_fd)
    except IsADirectoryError:
        rename_noreplace(dir_fd, hidden, dir_fd, name)  # a directory swapped in meanwhile: put back, refuse
        raise


def _put_back(dir_fd: int, hidden: str, name: str) -> None:
    try:
        rename_noreplace(dir_fd, hidden, dir_fd, name)
    except FileNotFoundError:
        return  # the body already moved or removed it (its own undo failed later): nothing to put back
    except FileExistsError:
        raise FileOperationFailed(
            "created meanwhile",
            message="another writer created the file while it was checked: the previous file is kept beside it as "
            "a .rootbound-*.tmp file",
        ) from None
