"""How many roots a client may make the server hold open: a cap per snapshot and a global descriptor budget.

Each effective root is held by an open descriptor for as long as its snapshot lives (a handshake-era session's
whole life), so roots are a resource a client spends on the server's behalf. One HTTP session declaring 1,024
file roots pinned 1,023 fds at the common 1,024 limit: ``accept()`` failed and every other client went
unanswered. Two limits, each refusing with a clear message instead of failing somewhere later:

* :attr:`RootBudget.max_roots` roots per snapshot (``--max-roots``): a larger snapshot is refused whole (taking
  some and silently dropping the rest would serve a different workspace than the client declared);
* a process-wide budget: a new snapshot is taken in only while the open descriptors stay below
  :attr:`RootBudget.fraction` of ``RLIMIT_NOFILE``, so sockets, files being read and the listener keep room.

At start the soft ``RLIMIT_NOFILE`` is raised to the hard limit (:func:`raise_fd_limit`), as servers usually do.

Counting (issue 24 #2): the Landlock sandbox refuses opening ``/proc/self/fd``, so the count goes through a
directory fd opened at import, before any sandbox (reading an open directory is not an open). A snapshot nobody
has used for :attr:`RootBudget.idle_release` seconds (an abandoned session's: the SDK keeps a session 10
minutes after its last request) is released when a new one does not fit, and taken in again on its next use,
with any root whose object changed meanwhile dropped (:class:`SnapshotUse`), as a held root would be.
"""

from __future__ import annotations

import os
import resource
import threading
import time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from rootbound.confine.held_roots import EffectiveRoot

__all__ = ["RootBudget", "RootsRefused", "SnapshotUse", "open_fds", "raise_fd_limit"]

FDS_PER_ROOT: Final = 2
"""A file root holds its parent directory and the file; a directory root one fd (the worst case is counted)."""


class RootsRefused(Exception):
    """A snapshot the server will not hold; the message is fixed text safe to show the client."""


_FD_TABLE: Final = "/proc/self/fd"
_table_lock = threading.Lock()
_table_fd = -1
_table_pid = -1


def _open_fd_table() -> None:
    """(Re)open this process's fd table directory for reading; ``-1`` without procfs or once sandboxed."""
    global _table_fd, _table_pid
    old = _table_fd
    try:
        fd = os.open(_FD_TABLE, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        fd = -1
    _table_fd, _table_pid = fd, os.getpid()
    if old >= 0:
        os.close(old)  # in a child: the parent's table, not ours


def _after_fork_in_child() -> None:
    global _table_lock
    _table_lock = threading.Lock()
    _open_fd_table()


_open_fd_table()  # at import: before the CLI applies its sandbox
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def open_fds() -> int:
    """Descriptors this process has open now (``0`` if it cannot tell: no procfs and no ``/dev/fd``)."""
    with _table_lock:
        if _table_pid != os.getpid():
            _open_fd_table()  # forked without Python's fork hooks
        if _table_fd >= 0:
            try:
                return len(os.listdir(_table_fd)) - 1  # listdir's own duplicate of the held fd
            except OSError:
                pass
    for directory in (_FD_TABLE, "/dev/fd"):
        try:
            return len(os.listdir(directory)) - 1  # the listing's own descriptor
        except OSError:
            continue
    return 0


def fd_limit() -> int:
    """The soft ``RLIMIT_NOFILE`` (a large number when unlimited)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def raise_fd_limit(cap: int = 65_536) -> int:
    """Raise the soft ``RLIMIT_NOFILE`` towards the hard limit (at most ``cap``); the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft
        return target
    return soft


IDLE_RELEASE: Final = 60.0
"""Seconds a held snapshot must have been unused before the budget may release it to make room."""


@dataclass(frozen=True)
class RootBudget:
    max_roots: int = 256
    fraction: float = 0.75
    idle_release: float = IDLE_RELEASE
    """A snapshot unused this long may be released when a new one would not fit (see :class:`SnapshotUse`)."""
    limit: int | None = None
    """The descriptor limit the fraction is of; ``None``: the process's soft ``RLIMIT_NOFILE``."""

    def __post_init__(self) -> None:
        if self.max_roots <= 0 or not 0 < self.fraction <= 1 or self.idle_release < 0:
            raise ValueError("max_roots must be positive, fraction in (0, 1] and idle_release not negative")

    def admit(self, roots: int) -> None:
        """Raise :class:`RootsRefused` unless a new snapshot of ``roots`` roots may be taken in now."""
        if roots > self.max_roots:
            raise RootsRefused(
                f"refused: the client declared {roots} roots; this server holds at most {self.max_roots} per "
                "client (--max-roots)"
            )
        budget = int((self.limit or fd_limit()) * self.fraction)
        if open_fds() + FDS_PER_ROOT * roots > budget:
            raise RootsRefused(
                "refused: the server is holding as many roots as its file-descriptor budget allows; "
                "try again later or declare fewer roots"
            )


class SnapshotUse:
    """Which held snapshots are in use, since when the others have been idle, and what a released one held.

    Keys are the snapshots (held weakly: a snapshot its session dropped leaves nothing). The owner calls
    :meth:`enter` and :meth:`leave` around every use, asks :meth:`idle` which to release when the budget is
    short, records each release with :meth:`released`, and on taking a released snapshot in again asks
    :meth:`changed` which roots now name another object than before: those are dropped, never followed.
    """

    def __init__(self, idle_release: float) -> None:
        self.idle_release = idle_release
        self._lock = threading.Lock()
        self._users: weakref.WeakKeyDictionary[Any, list[float]] = weakref.WeakKeyDictionary()  # [uses, idle since]
        self._released: weakref.WeakKeyDictionary[Any, dict[Path, tuple[int, int]]] = weakref.WeakKeyDictionary()

    def enter(self, key: Any) -> None:
        with self._lock:
            users = self._users.get(key)
            if users is None:
                self._users[key] = [1, 0.0]
            else:
                users[0] += 1

    def leave(self, key: Any) -> None:
        with self._lock:
            users = self._users.get(key)
            if users is not None:
                users[0] -= 1
                users[1] = time.monotonic()

    def idle(self, keys: Iterable[Any]) -> list[Any]:
        """Those of ``keys`` unused for :attr:`idle_release` seconds, longest idle first."""
        cutoff = time.monotonic() - self.idle_release
        with self._lock:
            found = [(users[1], id(key), key) for key in keys if (users := self._users.get(key, [0, 0.0]))[0] <= 0]
        return [key for since, _, key in sorted(found, key=lambda item: (item[0], item[1])) if since <= cutoff]

    def released(self, key: Any, roots: Iterable[EffectiveRoot]) -> None:
        self._released[key] = {root.path: (root.dev, root.ino) for root in roots}

    def changed(self, key: Any, roots: Iterable[EffectiveRoot]) -> list[EffectiveRoot]:
        """Roots of a snapshot taken in again after a release that are not the objects it held before."""
        before = self._released.pop(key, None)
        if before is None:
            return []
        return [root for root in roots if before.get(root.path) != (root.dev, root.ino)]
