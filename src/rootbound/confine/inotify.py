"""inotify through ctypes: the kernel's change notification, which Python has no binding for.

Why here: the search index (:mod:`rootbound.search.index`) stays fresh by it, and it is a syscall wrapper
like :mod:`rootbound.confine.syscalls`. Only the three calls and the event format; what an event means is the
caller's. A watch is added through ``/proc/self/fd/N/NAME`` where the caller holds the parent directory, so the
path is resolved beneath that fd (``IN_DONT_FOLLOW``: a symlink in its place is not watched).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from typing import Final, NamedTuple

__all__ = [
    "IN_ATTRIB",
    "IN_CLOSE_WRITE",
    "IN_CREATE",
    "IN_DELETE",
    "IN_DELETE_SELF",
    "IN_IGNORED",
    "IN_ISDIR",
    "IN_MODIFY",
    "IN_MOVED_FROM",
    "IN_MOVED_TO",
    "IN_MOVE_SELF",
    "IN_Q_OVERFLOW",
    "Inotify",
    "InotifyEvent",
    "available",
]

IN_MODIFY: Final = 0x002
IN_ATTRIB: Final = 0x004
IN_CLOSE_WRITE: Final = 0x008
IN_MOVED_FROM: Final = 0x040
IN_MOVED_TO: Final = 0x080
IN_CREATE: Final = 0x100
IN_DELETE: Final = 0x200
IN_DELETE_SELF: Final = 0x400
IN_MOVE_SELF: Final = 0x800
IN_Q_OVERFLOW: Final = 0x4000
IN_IGNORED: Final = 0x8000
IN_ISDIR: Final = 0x40000000
IN_ONLYDIR: Final = 0x01000000
IN_DONT_FOLLOW: Final = 0x02000000
CHANGES: Final = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)
"""Every event that can change what a directory lists or what its files hold (reads are not asked for)."""
_HEADER: Final = struct.Struct("iIII")  # wd, mask, cookie, len
_READ_SIZE: Final = 1 << 16

_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL | None:
    global _libc
    if _libc is None:
        # The process's own symbols (libc is loaded): find_library would run ldconfig or a compiler through a
        # temporary file, which the kernel sandbox refuses.
        lib = ctypes.CDLL(None, use_errno=True)
        if not hasattr(lib, "inotify_init1"):
            return None
        lib.inotify_init1.argtypes = [ctypes.c_int]
        lib.inotify_init1.restype = ctypes.c_int
        lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        lib.inotify_add_watch.restype = ctypes.c_int
        lib.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.inotify_rm_watch.restype = ctypes.c_int
        _libc = lib
    return _libc


def available() -> bool:
    return _lib() is not None


class InotifyEvent(NamedTuple):
    wd: int
    mask: int
    cookie: int
    name: str
    """The entry's name in the watched directory; ``""`` for the directory itself."""


class Inotify:
    """One non-blocking inotify instance; :meth:`read` returns what is queued, never waits."""

    def __init__(self) -> None:
        lib = _lib()
        if lib is None:
            raise OSError(errno.ENOSYS, "inotify is not available (no libc inotify_init1)")
        fd = lib.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self.fd = fd
        self._lib = lib

    def watch_entry(self, dir_fd: int, name: str = "", mask: int = CHANGES) -> int:
        """Watch the directory ``name`` of the held directory ``dir_fd`` (``""``: that directory itself), not
        following a symlink in its place; the watch descriptor. Raises :class:`OSError` (``ENOSPC``: the user's
        watch limit, ``fs.inotify.max_user_watches``)."""
        path = f"/proc/self/fd/{dir_fd}" + (f"/{name}" if name else "")
        # The fd's own magic link must be followed (it is the held directory); a name must not be.
        mask |= IN_ONLYDIR | (IN_DONT_FOLLOW if name else 0)
        wd = self._lib.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        return int(wd)

    def watch_path(self, directory: os.PathLike[str] | str, mask: int = CHANGES) -> int:
        """Watch the directory at a path (not following a final symlink); raises :class:`OSError` naming it."""
        wd = self._lib.inotify_add_watch(self.fd, os.fsencode(directory), mask | IN_ONLYDIR | IN_DONT_FOLLOW)
        if wd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(directory))
        return int(wd)

    def unwatch(self, wd: int) -> None:
        self._lib.inotify_rm_watch(self.fd, wd)  # an already removed watch (EINVAL) is nothing to report

    def read(self, most: int) -> tuple[list[InotifyEvent], bool]:
        """The events queued now, at most about ``most`` (whole reads), and whether the kernel's queue overflowed
        (``IN_Q_OVERFLOW``: events were lost)."""
        events: list[InotifyEvent] = []
        overflowed = False
        while len(events) < most:
            try:
                data = os.read(self.fd, _READ_SIZE)
            except (BlockingIOError, InterruptedError):
                break
            if not data:
                break
            at = 0
            while at + _HEADER.size <= len(data):
                wd, mask, cookie, length = _HEADER.unpack_from(data, at)
                raw = data[at + _HEADER.size : at + _HEADER.size + length]
                at += _HEADER.size + length
                if mask & IN_Q_OVERFLOW:
                    overflowed = True
                    continue
                events.append(InotifyEvent(wd, mask, cookie, os.fsdecode(raw.split(b"\0", 1)[0])))
        return events, overflowed

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
