"""Kernel evidence with the process that caused it: fanotify (directory-entry events with file handles and names,
``FAN_REPORT_DFID_NAME``), where the kernel allows it (Linux 5.9+, ``CAP_SYS_ADMIN``). Same interface and the same
event bits as :class:`rootbound.audit.kernel_watch.KernelWatch` (fanotify's mask bits are inotify's), plus each
event's process id: the audit's own accesses (its snapshots and restores read every canary) are dropped by pid.
Events of a process that does not carry the run's marker in its environment are counted (the report says how
many) but kept: a server's child that cleared its environment, or left its process group, must not escape the
evidence that way; they are judged like inotify's (window, causality, differential).

Python has no fanotify binding: ``fanotify_init``, ``fanotify_mark`` and ``name_to_handle_at`` through ctypes.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
from pathlib import Path

from rootbound.audit.kernel_events import MASK, MAX_EVENTS, KernelEvent, Windows

__all__ = ["FanotifyWatch", "open_fanotify"]

_FAN_CLASS_NOTIF = 0x0
_FAN_CLOEXEC = 0x1
_FAN_NONBLOCK = 0x2
_FAN_REPORT_FID = 0x200
_FAN_REPORT_DIR_FID = 0x400
_FAN_REPORT_NAME = 0x800
_FAN_MARK_ADD = 0x1
_FAN_EVENT_ON_CHILD = 0x08000000
_FAN_ONDIR = 0x40000000
_FAN_Q_OVERFLOW = 0x4000
_INFO_FID, _INFO_DFID_NAME, _INFO_DFID = 1, 2, 3
_AT_FDCWD = -100
_META = struct.Struct("IBBHQii")  # event_len, vers, reserved, metadata_len, mask, fd, pid
_INFO = struct.Struct("BBH")  # info_type, pad, len
_HANDLE = struct.Struct("Ii")  # handle_bytes, handle_type
_MAX_HANDLE = 128


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fanotify_init.argtypes = [ctypes.c_uint, ctypes.c_uint]
    libc.fanotify_init.restype = ctypes.c_int
    libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
    libc.fanotify_mark.restype = ctypes.c_int
    libc.name_to_handle_at.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_int),
        ctypes.c_int,
    ]
    libc.name_to_handle_at.restype = ctypes.c_int
    return libc


def _handle(libc: ctypes.CDLL, path: Path) -> bytes:
    """A directory's file handle (type and bytes), as fanotify reports it."""
    buf = ctypes.create_string_buffer(_HANDLE.size + _MAX_HANDLE)
    struct.pack_into("I", buf, 0, _MAX_HANDLE)
    mount = ctypes.c_int()
    if libc.name_to_handle_at(_AT_FDCWD, os.fsencode(path), buf, ctypes.byref(mount), 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    size, kind = _HANDLE.unpack_from(buf.raw, 0)
    return struct.pack("i", kind) + buf.raw[_HANDLE.size : _HANDLE.size + size]


class FanotifyWatch(Windows):
    """One fanotify group over a set of directories, each with its location label; events carry the pid."""

    method = "fanotify"

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self.fd = fd
        self.where: dict[bytes, str] = {}
        self.overflowed = False
        self.background: list[KernelEvent] = []
        self.marker = ""  # the run's marker (ROOTBOUND_AUDIT_RUN=...)
        self.others = 0  # events of processes without the marker (kept, counted)
        self._server: dict[int, bool] = {}

    def add(self, directory: Path, location: str) -> None:
        mask = MASK | _FAN_ONDIR | _FAN_EVENT_ON_CHILD
        if self._libc.fanotify_mark(self.fd, _FAN_MARK_ADD, mask, _AT_FDCWD, os.fsencode(directory)) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self.where[_handle(self._libc, directory)] = location

    def _marked(self, pid: int) -> bool:
        """Whether a pid carries the run's marker (a process gone already counts as marked: it cannot be asked)."""
        known = self._server.get(pid)
        if known is not None:
            return known
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read(1 << 20)
        except OSError:
            return True  # exited (or unreadable): judged by window, causality and differential alone
        mine = not self.marker or f"ROOTBOUND_AUDIT_RUN={self.marker}".encode() in env.split(b"\0")
        if len(self._server) < 4096:
            self._server[pid] = mine
        return mine

    def drain(self) -> list[KernelEvent]:
        events: list[KernelEvent] = []
        while len(events) < MAX_EVENTS:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                break
            if not data:
                break
            at = 0
            while at + _META.size <= len(data):
                length, _vers, _res, meta_len, mask, fd, pid = _META.unpack_from(data, at)
                if length < _META.size:
                    break
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
                if mask & _FAN_Q_OVERFLOW:
                    self.overflowed = True
                else:
                    found = self._record(data[at + meta_len : at + length])
                    if found is not None and pid != os.getpid():  # the audit's own accesses: never evidence
                        location, name = found
                        events.append(KernelEvent(location, name, mask & (MASK | _FAN_ONDIR)))
                        if not self._marked(pid):
                            self.others += 1
                at += length
        return events

    def _record(self, info: bytes) -> tuple[str, str] | None:
        """(location, name) from the event's info records: the directory's handle and the entry's name."""
        at = 0
        while at + _INFO.size <= len(info):
            kind, _pad, size = _INFO.unpack_from(info, at)
            if size < _INFO.size:
                return None
            body = info[at + _INFO.size : at + size]
            if kind in (_INFO_DFID_NAME, _INFO_DFID, _INFO_FID) and len(body) >= 8 + _HANDLE.size:
                handle_bytes, handle_type = _HANDLE.unpack_from(body, 8)
                start = 8 + _HANDLE.size
                key = struct.pack("i", handle_type) + body[start : start + handle_bytes]
                location = self.where.get(key)
                if location is not None:
                    name = ""
                    if kind == _INFO_DFID_NAME:
                        name = os.fsdecode(body[start + handle_bytes :].split(b"\0", 1)[0])
                    return location, "" if name == "." else name
            at += size
        return None

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1


def open_fanotify() -> FanotifyWatch | None:
    """A fanotify group reporting directory handles and names, or None where the kernel refuses one."""
    try:
        libc = _libc()
    except (OSError, AttributeError):
        return None
    flags = _FAN_CLASS_NOTIF | _FAN_CLOEXEC | _FAN_NONBLOCK | _FAN_REPORT_FID | _FAN_REPORT_DIR_FID | _FAN_REPORT_NAME
    fd = libc.fanotify_init(flags, os.O_RDONLY | os.O_CLOEXEC)
    if fd < 0:
        return None
    return FanotifyWatch(libc, fd)
