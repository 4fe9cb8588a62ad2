"""One index per operator directory, shared by every session; where it lives on disk and when it is rebuilt.

Why shared: sessions come and go, the tree is the operator's. A session reaches an index only through a start
directory it opened through its own boundary, and only when that directory is the very one the index holds at that
path (same device and inode): the index never widens what a session may open.

The cache: ``$XDG_CACHE_HOME/rootbound/index`` (else ``~/.cache/...``), one folder per server process
(:func:`own_folder`, ``PID``: the only place the kernel sandbox lets ``serve`` write besides ``--writable`` DIRs)
and in it one per index build (``N``), removed when that index closes; a process's folder whose process is gone is
stale and removed when the next server starts (:func:`remove_stale`), and ``rootbound serve --clear-index``
removes every folder of servers not running and every saved index. Between servers, each DIR's index is kept in
``saved/`` (:func:`saved_store`, :mod:`~rootbound.search.index.saved`): a new server takes it up at start, in the
background, and trusts only the files the kernel's times say are unchanged.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from rootbound.confine.cache_folder import hold_secure, make_private, open_secure, remove_matching
from rootbound.search.index.calls import Calls
from rootbound.search.index.saved import SavedStore
from rootbound.search.index.tree_index import UNAVAILABLE, IndexLimits, TreeIndex

__all__ = ["IndexRegistry", "cache_root", "clear_all", "close_all", "own_folder", "remove_stale", "saved_store"]

RETRY_AFTER: Final = 60.0
"""Seconds after a failed build (events lost, watch limit) before another is tried."""


CACHE_ENV: Final = "ROOTBOUND_CACHE_HOME"
"""Where rootbound's cache goes instead of ``$XDG_CACHE_HOME`` (rootbound's alone: a test suite or an operator
moves it without moving every other program's cache)."""


def cache_root() -> Path:
    """``$ROOTBOUND_CACHE_HOME/rootbound/index``, else ``$XDG_CACHE_HOME/rootbound/index``, else
    ``~/.cache/rootbound/index``."""
    base = (
        os.environ.get(CACHE_ENV) or os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    )
    return Path(base) / "rootbound" / "index"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_MADE: Final = 2  # "rootbound/index": the cache path's components rootbound makes (0700, its own)


def remove_stale(root: Path) -> int:
    """Remove the cache folders of server processes that are gone; how many. ``root`` is reached one component at
    a time, links never followed (``confine/cache_folder``); nothing is removed when it cannot be."""
    try:
        with open_secure(root, made=_MADE) as fd:
            return remove_matching(fd, _stale)
    except OSError:
        return 0


def _stale(name: str) -> bool:
    """A cache folder (``PID`` or ``PID-...``) of a server process that is gone."""
    pid, _, _ = name.partition("-")
    return pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid))


def own_folder(root: Path) -> Path | None:
    """A new folder for this process's indexes under ``root`` (stale folders removed first), or ``None`` when it
    cannot be made a folder of its own (the indexes then keep their postings in memory): every component reached
    without following links and safe (``cache_folder.open_secure``), the folder created here, mode 0700, this
    user's (issue 48 #8)."""
    name = str(os.getpid())
    try:
        with open_secure(root, made=_MADE) as fd:
            remove_matching(fd, _stale)
            made = make_private(fd, name)  # a process that had this number before us: its folder goes first
    except OSError:
        return None
    return root / name if made else None


SAVED: Final = "saved"
"""The folder of saved indexes in the cache root (:mod:`~rootbound.search.index.saved`): one file per DIR."""


def saved_store(root: Path) -> SavedStore | None:
    """The saved indexes' folder, held open (before the kernel sandbox), or ``None`` when it cannot be made safe
    (then nothing is kept between servers)."""
    fd = hold_secure(root / SAVED, made=_MADE + 1)
    return None if fd is None else SavedStore(fd)


def clear_all(root: Path) -> tuple[int, int]:
    """``--clear-index``: every cache folder of servers not running (a running one keeps its own), and every
    saved index; how many of each."""
    removed = remove_stale(root)
    store = saved_store(root)
    if store is None:
        return removed, 0
    try:
        return removed, store.clear()
    finally:
        store.close()


_OPEN: Final[weakref.WeakSet[IndexRegistry]] = weakref.WeakSet()


def close_all() -> None:
    """Close every registry still open (a server exiting with ``os._exit``, which runs no ``atexit`` hook): the
    builds stop and the cache folders are removed."""
    for registry in list(_OPEN):
        registry.close()


atexit.register(close_all)  # a library user's interpreter exiting normally


class _Slot:
    """One directory's index, and the rebuild that will replace it."""

    __slots__ = ("current", "failed_at", "next")

    def __init__(self, current: TreeIndex) -> None:
        self.current = current
        self.next: TreeIndex | None = None
        self.failed_at = 0.0


class IndexRegistry:
    """The indexes of the operator directories ``dirs`` (canonical paths). ``cache``: this process's own folder
    (:func:`own_folder`; ``None``: postings in memory). ``at_start``: build every index now rather than at its
    first query (or at :meth:`start_all`)."""

    def __init__(
        self,
        dirs: Iterable[Path],
        *,
        cache: Path | None = None,
        limits: IndexLimits = IndexLimits(),  # noqa: B008 - frozen
        at_start: bool = False,
        saved: SavedStore | None = None,
    ) -> None:
        self.cache = cache
        self.saved = saved
        self.limits = limits
        self.calls = Calls()  # grep and search_files under way (``searching.py``): the builds make way for them
        self.lock = threading.Lock()
        self.closed = False
        self._serial = 0
        _OPEN.add(self)
        self.slots = {Path(d): _Slot(self._new(Path(d))) for d in dirs}
        if at_start:
            self.start_all()

    def start_all(self) -> None:
        """Start building every index now (``serve --index-at-start``, once the sandbox is applied)."""
        for slot in self.slots.values():
            slot.current.start()

    def start_saved(self) -> None:
        """Start taking up every DIR's saved index now, in the background (at start, once the sandbox is applied):
        a DIR with none waits for its first query (or ``--index-at-start``)."""
        taking = [slot.current for path, slot in self.slots.items() if self.saved is not None and self.saved.has(path)]
        for index in taking:  # every child first: a fork after a thread has started would copy its locks
            index.expect_saved = True
            index.fork_checker()
        for index in taking:
            index.start()

    def _new(self, path: Path) -> TreeIndex:
        self._serial += 1
        folder = None if self.cache is None else self.cache / str(self._serial)
        return TreeIndex(path, cache=folder, limits=self.limits, saved=self.saved, calls=self.calls)

    def find(self, prefix: str) -> tuple[TreeIndex | None, str, str]:
        """The index for a start directory whose display path is ``prefix`` (ending in ``/``): the index (``None``
        when none covers it or it is not ready: the caller scans), the start's path in it, and a status for the
        answer (``index``, ``building index 40%``, ``not indexed: ...``)."""
        best: tuple[Path, _Slot] | None = None
        for path, slot in self.slots.items():
            top = str(path).rstrip("/") + "/"
            if prefix.startswith(top) and (best is None or len(top) > len(str(best[0]))):
                best = (path, slot)
        if best is None or self.closed:
            return None, "", "not indexed: outside the operator's directories"
        path, slot = best
        start_rel = prefix[len(str(path).rstrip("/")) + 1 :].rstrip("/")
        index = self._current(slot)
        if index.state == "new":
            index.start()
        if index.expect_saved and index.state == "building" and not index.usable():
            index.take_up_now()  # in this call's thread: never waiting for the build thread's turn (issue 51)
        if index.usable():
            return index, start_rel, "index"
        if start_rel:  # a start below the DIR may be all its session sees: nothing about the rest (issue 48 #7)
            return None, start_rel, "index not ready" if index.state in ("new", "building") else "not indexed"
        return None, start_rel, index.progress()

    def _current(self, slot: _Slot) -> TreeIndex:
        """The slot's index, swapping in a finished rebuild and starting one when the index asks for it."""
        with self.lock:
            current, pending = slot.current, slot.next
            if pending is not None and pending.state == "ready":
                slot.current, slot.next = pending, None
                threading.Thread(target=current.close, name="rootbound-index-close", daemon=True).start()
                return pending
            if pending is not None and pending.state == "failed":
                slot.next, slot.failed_at = None, time.monotonic()
                threading.Thread(target=pending.close, name="rootbound-index-close", daemon=True).start()
            if (
                slot.next is None
                and current.state in ("ready", "failed")
                and current.needs_rebuild()
                and time.monotonic() - slot.failed_at > RETRY_AFTER
                and not self.closed
            ):
                if current.state == "failed" and (current.why.startswith("over ") or current.why == UNAVAILABLE):
                    return current  # too large for the walk's cap, or numpy cannot load: rebuilding cannot help
                slot.next = self._new(current.path)
                slot.next.start()
            return slot.current

    def status(self) -> list[tuple[Path, str, int, float]]:
        """Per directory: its state line, the bytes its postings take, and its last build's seconds."""
        return [(p, s.current.progress(), s.current.bytes, s.current.build_seconds) for p, s in self.slots.items()]

    def close(self) -> None:
        """Stop every build and remove every cache folder (the server is stopping)."""
        with self.lock:
            self.closed = True
            indexes = [s.current for s in self.slots.values()] + [s.next for s in self.slots.values() if s.next]
        for index in indexes:
            index.close()
