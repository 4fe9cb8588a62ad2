"""This process's ``/proc/<pid>/fd``, held open: reopening an fd's object and naming an fd, without a path.

Reopening an O_PATH fd for reading (the READ intent) and naming an opened fd (display paths) go through procfs.
Resolving "/proc/self/fd/N" from the process root on every call costs ~1 us more than looking "N" up in a held dirfd
of the directory. That dirfd names *one process's* fd table: a child of fork() inherits it, and reopening "N" there
would reopen the parent's fd N (any object, anywhere). So it is tied to the pid that opened it: replaced right after
os.fork() (a fork hook), and checked against os.getpid() on every use (a fork that bypasses Python's hooks, e.g.
from C). Without procfs the dirfd is -1 and every use takes the slow path, exactly as before.
"""

from __future__ import annotations

import os
import threading
from typing import Final

__all__ = ["has_procfs", "proc_name", "proc_open"]

O_CLOEXEC: Final = os.O_CLOEXEC
DIR_PATH: Final = getattr(os, "O_PATH", 0) | os.O_DIRECTORY  # where O_PATH is missing, so is procfs

_PROC_SELF_FD: Final = "/proc/self/fd"
_FD_NAMES: Final = [b"%d" % fd for fd in range(1024)]  # the names of the usual fds, made once (bytes: no encode)
_getpid = os.getpid  # bound once: proc_open is on the hot path of every read
_open = os.open
_proc_lock = threading.Lock()
_proc_fd = -1
_proc_pid = -1


def _open_proc_fd_dir() -> None:
    """(Re)open the dirfd of this process's ``/proc/<pid>/fd`` (``-1`` without procfs), closing an inherited one."""
    global _proc_fd, _proc_pid
    with _proc_lock:
        old = _proc_fd
        try:
            fd = os.open(_PROC_SELF_FD, DIR_PATH | O_CLOEXEC)
        except OSError:
            fd = -1
        _proc_fd, _proc_pid = fd, os.getpid()
        if old >= 0:
            os.close(old)  # in a child: its copy of the parent's dirfd


def _after_fork_in_child() -> None:
    global _proc_lock
    _proc_lock = threading.Lock()  # a lock held by another thread of the parent stays held forever in the child
    _open_proc_fd_dir()


_open_proc_fd_dir()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def proc_open(fd: int, flags: int) -> int:
    """A new fd with ``flags`` on the object ``fd`` refers to, through this process's ``/proc/<pid>/fd``: the
    object itself is reopened, no path is resolved again. :class:`OSError` as the kernel says (no procfs:
    :class:`FileNotFoundError`)."""
    if _proc_pid != _getpid():
        _open_proc_fd_dir()  # forked without Python's fork hooks
    proc = _proc_fd
    if proc >= 0:
        return _open(_FD_NAMES[fd] if fd < 1024 else b"%d" % fd, flags | O_CLOEXEC, dir_fd=proc)
    return _open(f"{_PROC_SELF_FD}/{fd}", flags | O_CLOEXEC)


def proc_name(fd: int) -> str | None:
    """The kernel's name for ``fd`` (``/proc/<pid>/fd``), or ``None`` without procfs."""
    if _proc_pid != os.getpid():
        _open_proc_fd_dir()
    try:
        proc = _proc_fd
        if proc >= 0:
            return os.readlink(str(fd), dir_fd=proc)
        return os.readlink(f"{_PROC_SELF_FD}/{fd}")
    except OSError:
        return None


def has_procfs() -> bool:
    """Whether this process sees its ``/proc/<pid>/fd`` (then a failed :func:`proc_open` means the fd is gone, not
    that procfs is missing)."""
    return os.path.isdir(_PROC_SELF_FD)
