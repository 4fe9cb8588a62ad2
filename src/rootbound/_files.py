"""Regular files on held fds: the type and hard-link policy, bounded reads, and atomic writes beside a held parent.

Why its own module: reading (``RootedFS.read_*`` and grep) and writing share these steps, and each has one
subtle rule: a read trusts ``fstat``'s size only as a hint (files grow), and a write never opens the final name
(temp name ``O_EXCL|O_NOFOLLOW``, ``fsync``, ``rename`` over it, all relative to the parent fd).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from typing import Final, Literal, TypeAlias

from ._resolve import O_CLOEXEC, O_NOFOLLOW
from .errors import HardLinked, IsADirectory, NotAFile, PathExists, TooLarge

__all__ = ["HardlinkPolicy", "check_file", "create_file", "read_fd", "read_rest", "replace_file"]

HardlinkPolicy: TypeAlias = Literal["read-only", "refuse", "allow"]
Data: TypeAlias = "bytes | bytearray | memoryview"

_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC


def check_file(st: os.stat_result, hardlinks: HardlinkPolicy, *, writing: bool) -> None:
    """The fstat after opening: type must fit, and the hard-link policy applies to regular files."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectory()
    if not stat.S_ISREG(mode):
        raise NotAFile()
    if st.st_nlink > 1 and (hardlinks == "refuse" or (writing and hardlinks == "read-only")):
        raise HardLinked()


def read_fd(fd: int, st: os.stat_result, limit: int) -> bytes:
    """All of the file ``fd`` (``st`` its fstat), refused past ``limit`` bytes."""
    size = st.st_size
    if size > limit:
        raise TooLarge()
    first = os.read(fd, size + 1 if size < limit else limit + 1)
    if len(first) == size:
        return first  # exactly the size fstat saw: done (the usual case, one read)
    return read_rest(fd, first, limit)


def read_rest(fd: int, first: bytes, limit: int) -> bytes:
    """Keep reading after ``first`` until EOF; more than ``limit`` bytes in all is :class:`TooLarge`."""
    chunks = [first]
    total = len(first)
    while chunks[-1]:
        if total > limit:
            raise TooLarge()
        chunk = os.read(fd, min(limit + 1 - total, 65536))
        total += len(chunk)
        chunks.append(chunk)
    if total > limit:
        raise TooLarge()
    return b"".join(chunks)


def _write_all(fd: int, data: Data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def create_file(parent_fd: int, name: str, data: Data, permissions: int) -> None:
    """Create ``name`` in ``parent_fd`` with ``O_EXCL`` (any existing entry, links included, is refused)."""
    try:
        fd = os.open(name, _CREATE, permissions, dir_fd=parent_fd)
    except FileExistsError:
        raise PathExists() from None
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)
    os.fsync(parent_fd)


def replace_file(parent_fd: int, name: str, data: Data, permissions: int, existing: os.stat_result | None) -> None:
    """Atomically replace (or create) ``name`` in ``parent_fd``: temp + fsync + rename; keeps existing bits."""
    temp = f".rootbound-{secrets.token_hex(8)}.tmp"
    fd = os.open(temp, _CREATE, 0o600 if existing is not None else permissions, dir_fd=parent_fd)
    try:
        try:
            if existing is not None and stat.S_ISREG(existing.st_mode):
                os.fchmod(fd, stat.S_IMODE(existing.st_mode) & 0o777)
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=parent_fd)
        raise
    os.fsync(parent_fd)
