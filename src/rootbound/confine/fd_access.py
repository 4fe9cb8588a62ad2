"""The wall's fd-level entry points for the layers above it: what they may do beneath fds the wall handed out.

Why: outside ``confine/`` no module opens a path, calls a syscall wrapper or imports the ``os.open`` family
(``tests/test_wall.py``). Where a layer above legitimately works at the fd level (listing a directory fd it was
given, the ``lstat`` of a name listed in it, the flags :meth:`Handle.open_entry` and :meth:`Handle.reopen` take, the
opener a scan helper process uses for the entries of the directory fds it was sent), it does so through these
names, so the wall stays the one place that decides how a name becomes an fd.
"""

from __future__ import annotations

import os
from typing import Final

from rootbound.confine.resolvers import DIR_READ, O_PATH, OpenerSpec, listed_opener
from rootbound.confine.resolvers import READ as READ_FLAGS
from rootbound.confine.syscalls import name_thread

__all__ = [
    "DIR_READ",
    "O_PATH",
    "READ_ENTRY",
    "READ_FLAGS",
    "OpenerSpec",
    "listed_opener",
    "lstat_entry",
    "name_thread",
    "scandir_fd",
    "task_count",
]

READ_ENTRY: Final = READ_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC
"""A listed regular file opened for reading by :meth:`Handle.open_entry`: its name is never followed."""


def scandir_fd(fd: int) -> os._ScandirIterator[str]:
    """The entries of a directory fd the wall handed out (``os.scandir`` on the fd: never a path)."""
    if not isinstance(fd, int):
        raise TypeError("scandir_fd takes a directory fd, not a path")
    return os.scandir(fd)


def lstat_entry(dir_fd: int, name: str) -> os.stat_result:
    """``lstat`` of a name listed in the directory fd ``dir_fd`` (never followed)."""
    return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)


def task_count() -> int | None:
    """This process's threads as the kernel counts them (``/proc/self/task``: C code's too, which Python's count
    misses); ``None`` when it cannot be read (no /proc, or a sandbox already applied hides it)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None
