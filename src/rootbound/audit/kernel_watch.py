"""Evidence from the kernel: inotify on the trap's outside directories, so that a server that opens, lists,
writes, removes or moves a canary is seen doing it, whatever it answers (a PDF reader, a converter, a tool that
answers only metadata or nothing at all).

Python has no inotify binding: the ctypes calls are :mod:`rootbound.confine.inotify`'s; the
events are read from the descriptor with ``os.read``. Only directories are watched (and each canary file's event
arrives on its directory's watch, with its name): a hard link in W to an outside inode is therefore not seen as
an access of the outside directory (hard links are the ``hardlink`` class, reported from the answer).

The auditor opens a window around each call (:meth:`KernelWatch.window`): events read at its start happened
between windows (the audit's own snapshots, or the server in the background) and are set aside; events read at
its end happened during the call. Nothing here is a finding by itself: the runner decides which locations are
outside the roots and which names count.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Protocol

from rootbound.audit.kernel_events import IN_Q_OVERFLOW, MASK, MAX_EVENTS, KernelEvent, Windows
from rootbound.audit.trap import OUTSIDE_DIRS, Trap
from rootbound.confine.inotify import Inotify
from rootbound.confine.inotify import available as inotify_available

__all__ = ["KernelEvent", "KernelWatch", "Watch", "available", "watch_trap"]

_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len


def available() -> bool:
    return inotify_available()


class Watch(Protocol):
    """What the auditor needs of a kernel watch (inotify, or fanotify with process ids)."""

    method: str
    marker: str
    others: int
    overflowed: bool
    background: list[KernelEvent]

    def add(self, directory: Path, location: str) -> None: ...
    def drain(self) -> list[KernelEvent]: ...
    def settle(self) -> None: ...
    def begin(self) -> None: ...
    def end(self) -> list[KernelEvent]: ...
    def close(self) -> None: ...


class KernelWatch(Windows):
    """One inotify instance over a set of directories, each with its location label."""

    method = "inotify"

    def __init__(self) -> None:
        self._notify = Inotify()
        self.fd = self._notify.fd
        self.where: dict[int, str] = {}
        self.marker = ""
        self.others = 0  # inotify gives no process id: nothing is counted
        self.overflowed = False
        self.background: list[KernelEvent] = []  # seen between windows (the server at start or in the background)

    def add(self, directory: Path, location: str) -> None:
        """Watch ``directory`` (never following a link to it); raises OSError if the kernel refuses."""
        self.where[self._notify.watch_path(directory, MASK)] = location

    def drain(self) -> list[KernelEvent]:
        """Every event queued so far (at most :data:`MAX_EVENTS`; a queue overflow is remembered)."""
        events: list[KernelEvent] = []
        while len(events) < MAX_EVENTS:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                break
            if not data:
                break
            at = 0
            while at + _HEADER.size <= len(data):
                wd, mask, _cookie, length = _HEADER.unpack_from(data, at)
                raw = data[at + _HEADER.size : at + _HEADER.size + length]
                at += _HEADER.size + length
                if mask & IN_Q_OVERFLOW:
                    self.overflowed = True
                    continue
                location = self.where.get(wd)
                if location is None:
                    continue
                name = os.fsdecode(raw.split(b"\0", 1)[0])
                events.append(KernelEvent(location, name, mask))
        return events

    def close(self) -> None:
        self._notify.close()
        self.fd = -1


def _dirs(trap: Trap) -> list[tuple[Path, str]]:
    out = [(trap.base, "trap"), (trap.workspace, "ws")]
    out += [(trap.base / loc, loc) for loc in OUTSIDE_DIRS if loc != "cwd" or trap.cwd == trap.base / "cwd"]
    return out + [(where, loc) for loc, where in trap.extra_dirs.items()]


def watch_trap(trap: Trap, notes: list[str], *, fanotify: bool = True) -> Watch | None:
    """A kernel watch on every outside directory of the trap, the trap base, W and the canaries beyond the trap:
    fanotify (events with process ids) where the kernel allows it on every one of them, else inotify; None (and a
    note) where the kernel offers neither."""
    if fanotify:
        from rootbound.audit.fanotify_watch import open_fanotify

        group = open_fanotify()
        if group is not None:
            try:
                for directory, loc in _dirs(trap):
                    group.add(directory, loc)
            except OSError:
                group.close()  # a file system without file handles: inotify for all of them
            else:
                return group
    try:
        watch = KernelWatch()
    except OSError as exc:
        notes.append(f"no kernel evidence: inotify unavailable ({exc.strerror or exc}); answers only")
        return None
    try:
        for directory, loc in _dirs(trap):
            watch.add(directory, loc)
    except OSError as exc:
        notes.append(f"kernel evidence partial: inotify refused a watch ({exc.strerror or exc})")
    return watch
