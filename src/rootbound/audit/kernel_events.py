"""What the kernel saw, as the audit's watches report it: inotify's event bits (fanotify reports the same ones) and
one event of a watched directory. Its own module so that both watchers (:mod:`kernel_watch`, inotify, and
:mod:`fanotify_watch`) and the judging modules share it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CREATED", "IN_CREATE", "IN_ISDIR", "MASK", "MAX_EVENTS", "KernelEvent", "Windows"]

IN_ACCESS = 0x001
IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_OPEN = 0x020
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_ISDIR = 0x40000000
_READS = IN_ACCESS | IN_OPEN
_WRITES = IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
MASK = _READS | _WRITES
CREATED = IN_CREATE | IN_MOVED_TO  # an entry that appeared in a watched directory
MAX_EVENTS = 10_000  # per read: a server flooding the trap cannot make a window's events unbounded


@dataclass(frozen=True)
class KernelEvent:
    location: str  # the watched directory's location ("far", "tmp", "cwd", ...)
    name: str  # the entry's name in that directory; "" for the directory itself
    mask: int

    @property
    def kind(self) -> str:
        """write (created, changed, removed, moved), list (the directory itself opened or read), read (a file)."""
        if self.mask & _WRITES:
            return "write"
        if not self.name or self.mask & IN_ISDIR:
            return "list"
        return "read"

    @property
    def what(self) -> str:
        names = [
            (IN_CREATE, "created"),
            (IN_DELETE | IN_DELETE_SELF, "deleted"),
            (IN_MOVED_FROM | IN_MOVED_TO | IN_MOVE_SELF, "moved"),
            (IN_MODIFY, "modified"),
            (IN_ATTRIB, "changed attributes of"),
            (IN_ACCESS, "read"),
            (IN_OPEN, "opened"),
        ]
        return next((word for bit, word in names if self.mask & bit), "touched")


class Windows:
    """The windows both watchers (inotify, fanotify) open around a call: what is queued when one opens happened
    outside any call (set aside, bounded); what is queued when it closes happened during the call."""

    background: list[KernelEvent]

    def drain(self) -> list[KernelEvent]:
        raise NotImplementedError

    def settle(self) -> None:
        """Discard what the audit itself caused (its snapshots read every canary)."""
        self.drain()

    def begin(self) -> None:
        """Open a window: what is queued now happened outside any call."""
        self.background.extend(self.drain()[: max(0, 1000 - len(self.background))])

    def end(self) -> list[KernelEvent]:
        """Close the window: what happened during the call."""
        return self.drain()
