"""The index of one operator directory: what every file held when it was read, and what changed since.

Why it can be trusted to narrow: it never answers by itself. It proposes files (:meth:`TreeIndex.plan`); the grep
opens each beneath the session's own held start directory and searches it with RE2. It is never stale because
the kernel says what changed: every directory it read is watched (inotify, added before the directory is listed),
and the queue is drained at the start of each query, under the index's lock. A file named in an event is *dirty*
(its postings no longer describe it) and is searched directly by every query until the index is rebuilt; an entry
created, removed or moved, a changed ignore file, or a directory's own event drops the walk results (:class:`View`)
under that directory, so the next query walks there again. A lost event (queue overflow, a watch the kernel
refused) makes the whole index unusable until a rebuild: queries scan meanwhile.

Not protected: a write through a hard link made *after* indexing from outside the tree (the kernel reports it only
to watches on the file itself or the other link's directory). A file with more than one link when read, or that
gains one inside the tree, is searched directly on every query.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from rootbound.confine.boundary import LIST, LSTAT, Boundary
from rootbound.confine.fd_access import name_thread
from rootbound.confine.inotify import (
    IN_ATTRIB,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_ISDIR,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    Inotify,
)
from rootbound.confine.rooted_files import RootedFiles
from rootbound.core.errors import LimitExceeded, RootsError
from rootbound.search.ignore_rules import IGNORE_FILES, PathFilter
from rootbound.search.ignore_walk import READ_FILE, WalkLimits, walking
from rootbound.search.index.calls import Calls, import_failure, say_once
from rootbound.search.index.checker import Checker, Report, take_child, take_report, walk_ahead
from rootbound.search.index.kept_files import Known, Vouched, kept, load_known, save_index
from rootbound.search.index.literals import required_literals
from rootbound.search.index.pattern_memo import PatternMemo
from rootbound.search.index.reading import Reading, Stopped
from rootbound.search.index.view import (
    ALWAYS,
    TEXT,
    Plan,
    View,
    below,
    count_view,
    patch_view,
    walk_view,
)

if TYPE_CHECKING:  # numpy is imported by the first build, never at start: its import starts BLAS threads, and the
    # kernel sandbox (applied at start) must be the only thread then
    import numpy as np
    import numpy.typing as npt

    from rootbound.search.index.postings import Segment, SegmentBuilder
    from rootbound.search.index.saved import SavedStore

__all__ = ["THREAD_NAME", "UNAVAILABLE", "IndexLimits", "TreeIndex"]

THREAD_NAME: Final = "rootbound-index"
"""The build thread's name, in Python and in the kernel (``/proc/PID/task/TID/comm``)."""

_STRUCTURE: Final = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF
_WATCHED_NAMES: Final = frozenset((*IGNORE_FILES, ".git"))
"""Entries whose change changes what a walk yields below their directory."""
MAX_STALE: Final = 64
"""Changed directories a recorded walk may collect before it is dropped (and walked whole) instead."""


@dataclass(frozen=True)
class IndexLimits:
    """``max_entries``: the walk's entry cap for the build (a larger tree is not indexed); ``max_bytes``: postings
    written to disk before giving up; ``max_events``: events one drain reads (more is handled as an overflow);
    ``rebuild_dirty``: dirty files that start a rebuild in the background; ``max_file_size``: the grep's cap."""

    max_entries: int = 200_000
    max_bytes: int = 1 << 30
    max_events: int = 16_384
    rebuild_dirty: int = 2_000
    max_file_size: int = 4 * 1024 * 1024
    max_views: int = 16
    max_view_entries: int = 400_000
    """Entries all recorded walks hold together (about 470 bytes each): the oldest walks are dropped past it."""
    max_memos: int = 32


class TreeIndex:
    """The index of one directory (``path``, canonical), built in a background thread, fresh by inotify."""

    def __init__(
        self,
        path: Path,
        *,
        cache: Path | None,
        limits: IndexLimits = IndexLimits(),
        saved: SavedStore | None = None,
        calls: Calls | None = None,
    ) -> None:
        self.path = path
        self.saved = saved
        self.calls = calls or Calls()  # the server's calls under way: the build makes way for them
        self.known: Known = {}  # a saved index's records, while it is taken up (queries check files by them)
        self.expect_saved = False  # started to take up a saved index: the first query takes it up if not done
        self.preparing = threading.Lock()
        self.prepared: Known | None = None
        self.stats: dict[str, tuple[int, ...]] = {}  # per file read or kept: its stat as read (until saved)
        self.count = 0  # file numbers given (a saved index's numbers of files changed since stay unused)
        self.reused = 0  # files kept from the saved index without a read
        self.loaded = False
        self.checking = False  # a saved index taken up: usable while its files are checked (:meth:`usable`)
        self.prefix = str(path).rstrip("/") + "/"
        self.cache = cache
        self.limits = limits
        self.lock = threading.Lock()
        self.state = "new"  # new, building, ready, failed, closed
        self.why = ""
        self.done = 0
        self.total = 0
        self.identity: tuple[int, int] | None = None
        self.segments: list[Segment] = []
        self.names: list[list[str]] = []  # per segment: its files' paths
        self.numbers: dict[str, int] = {}  # an indexed text file's path: its number (segment's first + place in it)
        self.memos: dict[tuple[str, bool, bool], PatternMemo] = {}  # what queries of a pattern learned
        self.kinds: dict[str, str] = {}
        self.kinds_version = 0
        self.inodes: dict[str, int] = {}
        self.dirty: set[str] = set()
        self.watches: dict[int, str] = {}
        self.views: dict[tuple[object, ...], View] = {}
        self.boundary: Boundary | None = None
        self.notify: Inotify | None = None
        self.thread: threading.Thread | None = None
        self.bytes = 0
        self.recent: list[str] = []  # directories with a structural change since a view walk began
        self.built_at = 0.0
        self.ahead = False  # a short hold of the lock a query waits for: the walks ahead of it, the save
        self.checker: Checker | None = None  # the take up's walk in a child (:meth:`fork_checker`), until read
        self.walking: Checker | None = None  # that child once its report is awaited (a first query may stop it)
        self.report: Report | None = None  # what it saw, until the build has gone through it
        self.from_child = 0  # files the child's report gave the take up (0: this process walked)
        self.build_seconds = 0.0

    # -- lifetime -------------------------------------------------------------------------------------------------

    def fork_checker(self) -> None:
        """Walk the DIR for the take up in a child process (``checker.py``): forked before any thread starts."""
        if self.state == "new" and self.checker is None:
            self.checker = Checker.fork(self.path, self.limits.max_entries)

    def start(self) -> None:
        """Start the build in a background thread (once)."""
        with self.lock:
            if self.state != "new":
                return
            self.state = "building"
        self.thread = threading.Thread(target=self._build, name=THREAD_NAME, daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop the build (it checks between files), release the fds and the watches, remove the cache."""
        with self.lock:
            self.state = "closed"
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        for checker in (self.checker, self.walking):  # a child never read (the index closed before it was), reaped
            if checker is not None:
                checker.close()
        if self.checker is not None:
            self.checker.notify.close()
        with self.lock:
            if self.notify is not None:
                self.notify.close()
                self.notify = None
            if self.boundary is not None:
                self.boundary.close()
                self.boundary = None
            self.segments, self.names, self.views = [], [], {}
            if self.cache is not None:
                shutil.rmtree(self.cache, ignore_errors=True)

    def progress(self) -> str:
        """How the index stands, for the answer's last line: ``building index 40%`` or why it is not used."""
        if self.state == "building":
            share = int(100 * self.done / self.total) if self.total else 0
            return f"building index {min(share, 99)}%"
        if self.state == "failed":
            return f"not indexed: {self.why}"
        return "index " + self.state

    # -- the build ------------------------------------------------------------------------------------------------

    def _build(self) -> None:
        began = time.monotonic()
        name_thread(THREAD_NAME)  # the kernel's name too: top -H, and the tests that count a server's CPU
        try:
            self.calls.wait_idle(lambda: self.state != "building")  # started by a call: after it (calls.py)
            self._build_inner()
        except LimitExceeded:
            self._fail(f"over {self.limits.max_entries} entries or {self.limits.max_bytes >> 20} MiB of postings")
        except Stopped:
            return
        except ImportError as exc:  # numpy cannot load (a missing BLAS library, a wheel for another CPU)
            self._fail(UNAVAILABLE)
            say_once(f"search index off, grep and search_files scan every file: {import_failure(exc)}")
        except (OSError, RootsError, MemoryError) as exc:
            # A fixed reason, never the exception's text (it may name paths): errno's name, or the failure's kind.
            code = exc.errno if isinstance(exc, OSError) else None
            self._fail(os.strerror(code) if code else "the index could not be built")
        except Exception as exc:  # a bug: the index is off until its retry, queries scan, one line, no traceback
            self._fail("the index could not be built")
            say_once(f"search index build failed ({type(exc).__name__}); grep and search_files scan meanwhile")
        else:
            with self.lock:
                if self.state == "building":
                    self.state, self.checking, self.known = "ready", False, {}
                    self.built_at = time.monotonic()
                    self.build_seconds = self.built_at - began
            walk_ahead(self)
            self.ahead = True  # the save holds the lock a moment (its records): a query waits rather than scan
            try:
                save_index(self)
            except (OSError, ValueError, MemoryError):
                self.stats = {}  # not kept: the next server builds afresh
            finally:
                self.ahead = False

    def _fail(self, why: str) -> None:
        with self.lock:
            if self.state != "closed":
                self.state, self.why = "failed", why

    def prepare(self) -> Known:
        """The build's first step, once: numpy imported, the DIR held and watched, the saved index taken up (its
        records, :func:`load_known`; a query may use it from then on). Done by the build thread at the thread's
        own priority (lowered only after it), or by the first query that finds it not done (:meth:`take_up_now`),
        so a new server's first grep never waits for a thread the kernel runs last. Raises what it meets."""
        with self.preparing:
            if self.prepared is None:
                import rootbound.search.index.postings  # noqa: F401  numpy first: fail before walking

                if self.cache is not None:
                    self.cache.mkdir(parents=True, exist_ok=True, mode=0o700)
                for held in (self.boundary, self.notify):  # of a first try that failed half way
                    if held is not None:
                        held.close()
                self.boundary = boundary = Boundary([self.path])
                with boundary.open(str(self.path), LIST) as top:
                    st = top.fstat()
                    self.identity = (st.st_dev, st.st_ino)
                checker, self.checker = self.checker, None
                self.walking = checker
                taken = take_child(self, checker) if checker is not None else None  # its report, if it holds
                self.notify = notify = taken.notify if taken is not None else Inotify()
                with boundary.open(str(self.path), LIST) as top:  # the child watched it already: the same watch
                    self.watches[notify.watch_entry(top.fd)] = ""
                if taken is None:
                    self.prepared = load_known(self)
                else:  # the child's watches and views adopted, its files kept before any query may use the index
                    self.prepared = load_known(self, taken.snap, taken.first, taken.known)
                self.report = taken.report if taken is not None and self.prepared else None
            return self.prepared

    def take_up_now(self) -> None:
        """:meth:`prepare` in a query's thread (a failure is the build's to report: the query scans); a take up's
        child still walking is stopped first (a large tree's walk outlasts the imports: this process checks)."""
        for child in (self.checker, self.walking):  # not yet taken by the build thread, or awaited by it
            if child is not None and child.running():
                child.stop()
        with contextlib.suppress(ImportError, OSError, RootsError, MemoryError):
            self.prepare()

    def _build_inner(self) -> None:
        known = self.prepare()
        if self.report is None:  # a walk that reads: lowered; a child's report is gone through at once (no reads)
            self.lower_priority()
        boundary, notify = self.boundary, self.notify
        assert boundary is not None
        assert notify is not None
        fs = RootedFiles(boundary, read_only=True)
        self.total = len(known) if known else self._count(fs)  # a saved index knows it: no walk just to count
        reading = Reading(self)
        report, self.report = self.report, None
        if report is not None:  # the take up's walk was done by a child (checker.py): its stats, checked here
            take_report(self, report, reading)
            reading.flush()
            return
        where = PathFilter(gitignore=False)
        walk_limits = WalkLimits(max_entries=self.limits.max_entries)
        with walking(fs, str(self.path), where, limits=walk_limits) as (handle, entries):
            open_entry = handle.entry_opener()
            for prefix, entry, dir_fd, _ in entries:
                if self.state != "building":
                    raise Stopped
                rel = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    with self.lock:
                        self.watches[notify.watch_entry(dir_fd, entry.name)] = rel
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue
                self.pace()
                if known and kept(self, known, rel, dir_fd, entry.name):
                    continue
                reading.add(rel, open_entry(dir_fd, entry.name, entry.inode(), READ_FILE))
        reading.flush()

    def lower_priority(self) -> None:
        """This thread only, on Linux (once it reads files: before, a lowered thread holding the interpreter's lock
        while the kernel runs others would stall the server's start-up or a call)."""
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)

    def pace(self) -> None:
        """One more file for the build: a call goes first (calls.py), and the kernel's queue is kept short."""
        self.done += 1
        if self.done % 64 == 0:
            self.calls.wait_idle(lambda: self.state != "building")
        if self.done % 2048 == 0:
            self.drain()

    def _take(self, builder: SegmentBuilder, names: list[str]) -> None:
        segment = builder.flush()
        if segment is None:
            return
        self.bytes += segment.nbytes()
        if self.bytes > self.limits.max_bytes:
            raise LimitExceeded()
        with self.lock:
            self.segments.append(segment)
            self.names.append(names)
            first = self.count - len(names)  # the numbers given since the last segment, in order
            for at, rel in enumerate(names):  # a query may read these while a saved index is taken up:
                self.numbers[rel] = first + at  # the number first, then the kind that says it is searchable
                self.kinds[rel] = TEXT

    def _count(self, fs: RootedFiles) -> int:
        """How many files the build will read, for the progress line (one walk without opens)."""
        count = 0
        where = PathFilter(gitignore=False)
        with walking(fs, str(self.path), where, limits=WalkLimits(max_entries=self.limits.max_entries)) as (_, it):
            for _, entry, _, _ in it:
                if self.state != "building":
                    raise Stopped
                count += entry.is_file(follow_symlinks=False)
                if count % 64 == 0:
                    self.calls.wait_idle(lambda: self.state != "building")
        return count

    # -- freshness ------------------------------------------------------------------------------------------------

    def drain(self) -> bool:
        """Apply every queued event; ``False`` when events were lost (the index is then unusable)."""
        with self.lock:
            return self._drain_locked()

    def _drain_locked(self) -> bool:
        notify = self.notify
        if notify is None:
            return False
        events, overflowed = notify.read(self.limits.max_events)
        if overflowed or len(events) >= self.limits.max_events:
            self._lost("the kernel's event queue overflowed")
            return False
        for event in events:
            base = self.watches.get(event.wd)
            if base is None:
                continue
            if event.mask & IN_IGNORED:
                self.watches.pop(event.wd, None)
                continue
            if not event.name:  # the directory itself: moved, removed, its mode changed
                self._structure(base)
                continue
            rel = f"{base}/{event.name}" if base else event.name
            if event.mask & IN_ISDIR:
                self._structure(base, listing_only=not event.mask & IN_ATTRIB)
                if event.mask & (IN_DELETE | IN_MOVED_FROM):
                    self._forget(rel)
                elif event.mask & (IN_CREATE | IN_MOVED_TO):
                    self._adopt(rel)
                elif event.mask & IN_ATTRIB:
                    self._structure(rel)
                continue
            self.dirty.add(rel)
            if event.mask & _STRUCTURE or event.name in _WATCHED_NAMES:
                self._structure(base, listing_only=event.name not in _WATCHED_NAMES)
                if event.mask & (IN_CREATE | IN_MOVED_TO):
                    self._check_links(rel)
        return self.state == "ready" or self.state == "building"

    def _lost(self, why: str) -> None:
        if self.state in ("ready", "building"):
            self.state, self.why = "failed", why

    def _structure(self, rel: str, *, listing_only: bool = False) -> None:
        """A change in what the directory ``rel`` lists (``listing_only``: an entry created, removed or renamed
        there, nothing that alters what is below its other subdirectories): the views at or above it list it again
        before they answer (:func:`~rootbound.search.index.view.patch_view`); the views below it are
        dropped (an ignore file above a view's start, or the start itself moved)."""
        if len(self.recent) < 64:
            self.recent.append(rel)
        for key, view in list(self.views.items()):
            start = view.start
            if below(rel, start):
                inner = rel[len(start) + 1 :] if start else rel
                if len(view.stale) + len(view.relisted) >= MAX_STALE:
                    del self.views[key]
                elif listing_only:
                    view.relisted = view.relisted | {inner}
                else:
                    view.stale = view.stale | {inner}
            elif below(start, rel):
                del self.views[key]

    def _forget(self, rel: str) -> None:
        """A directory removed or moved away: stop watching it and what is below it."""
        notify = self.notify
        for wd, where in list(self.watches.items()):
            if below(where, rel):
                del self.watches[wd]
                if notify is not None:
                    notify.unwatch(wd)

    def _adopt(self, rel: str) -> None:
        """A directory created or moved in: watch it and everything below it; its files are dirty (not indexed)."""
        boundary, notify = self.boundary, self.notify
        if boundary is None or notify is None:
            return
        fs = RootedFiles(boundary, read_only=True)
        try:
            with boundary.open(str(self.path / rel), LIST) as top:
                self.watches[notify.watch_entry(top.fd)] = rel
            where = PathFilter(gitignore=False)
            with walking(fs, str(self.path / rel), where, limits=WalkLimits(self.limits.max_entries)) as (_, entries):
                for prefix, entry, dir_fd, _ in entries:
                    sub = f"{rel}/{prefix}{entry.name}"
                    if entry.is_dir(follow_symlinks=False):
                        self.watches[notify.watch_entry(dir_fd, entry.name)] = sub
                    else:
                        self.dirty.add(sub)
        except (OSError, RootsError) as exc:
            if isinstance(exc, OSError) and exc.errno is not None and exc.errno == 28:  # ENOSPC: the watch limit
                self._lost("the inotify watch limit (fs.inotify.max_user_watches) was reached")

    def _check_links(self, rel: str) -> None:
        """A file that appeared: if it is a second link to a file already indexed, read that one on every query."""
        boundary = self.boundary
        if boundary is None:
            return
        try:
            with boundary.open(str(self.path / rel), LSTAT) as handle:  # beneath the root, like every other open
                st = handle.fstat()
        except (OSError, RootsError):
            return
        if st.st_nlink > 1:
            for other, inode in self.inodes.items():
                if inode == st.st_ino:
                    self.kinds[other] = ALWAYS
                    self.kinds_version += 1

    # -- queries --------------------------------------------------------------------------------------------------

    def usable(self) -> bool:
        """Ready, or taking up a saved index (:attr:`checking`): each query checks the files the take up has not
        reached by their saved records itself (``kept_files.Vouched``) and opens those that differ."""
        return self.state == "ready" or (self.state == "building" and self.checking)

    def same_directory(self, start_rel: str, identity: tuple[int, int]) -> bool:
        """Whether the directory at ``start_rel`` in the index is the one a session opened (device and inode)."""
        boundary = self.boundary
        if boundary is None:
            return False
        try:
            with boundary.open(str(self.path / start_rel) if start_rel else str(self.path), LIST) as handle:
                st = handle.fstat()
        except (OSError, RootsError):
            return False
        return (st.st_dev, st.st_ino) == identity

    def plan(
        self,
        fs: RootedFiles,
        start: object,
        start_rel: str,
        where: PathFilter,
        where_key: tuple[object, ...],
        walk_limits: WalkLimits,
        check: Callable[[int], None] | None,
        pattern: tuple[str, bool, bool] | None = None,
    ) -> Plan | None:
        """The view of a walk below ``start`` (at ``start_rel`` in the index) and, for ``pattern`` (``(text, regex,
        ignore_case)``), the files a grep must open; ``None`` when the index cannot answer now (not ready, events
        lost, a change while it walked, another query holds it: the caller scans). Raises what the walk raises."""
        # Another query holding the index: scan rather than queue behind it. The walks ahead of the first query are
        # waited for: they are the walk this query would make itself, and they end it (bounded: AHEAD_WAIT).
        if not (self.lock.acquire(timeout=AHEAD_WAIT) if self.ahead else self.lock.acquire(blocking=False)):
            return None
        try:
            if not self.usable() or not self._drain_locked():
                return None
            key = (start_rel, where_key, walk_limits, fs.boundary.cross_mounts)
            view = self.views.get(key)
            if view is not None and (view.stale or view.relisted):
                self.recent = []
                try:
                    view = patch_view(view, fs, start, where, walk_limits, check)
                finally:
                    del self.views[key]  # patched or not, the stale view answers no more
                if view is not None:
                    if self._changed_while_walked(start_rel):
                        return None  # scan this time, walk it whole next time
                    self._keep(key, view, self.checking)
            vouched = Vouched(self.known, self.kinds, self.numbers) if self.checking else None
            if view is None:
                self.recent = []
                view = walk_view(fs, start, start_rel, where, walk_limits, check, vouched.check if vouched else None)
                if self._changed_while_walked(start_rel):
                    return None  # scan this time
                self._keep(key, view, self.checking)
            if pattern is None:
                return Plan(view, None, frozenset(self.dirty))
            if vouched is not None:  # the files this query checked itself count as the take up's (not kept)
                view.counted = count_view(view, vouched.kinds, vouched.numbers, self.count, self.kinds_version)
            elif view.counted is None or view.counted.version != self.kinds_version:
                view.counted = count_view(view, self.kinds, self.numbers, self.count, self.kinds_version)
            if self.checking:  # numbers still being given: no memo (sized by them) until the take up is done
                return Plan(view, self._candidates(*pattern), frozenset(self.dirty))
            return Plan(view, self._candidates(*pattern), frozenset(self.dirty), self._memo(pattern), self._locked)
        finally:
            self.lock.release()

    def _changed_while_walked(self, start_rel: str) -> bool:
        """Whether, since :attr:`recent` was emptied before a walk from ``start_rel``, events were lost or a
        directory below or above that start changed (more than :attr:`recent` holds counts as one)."""
        return (
            not self._drain_locked()
            or len(self.recent) >= 64
            or any(below(rel, start_rel) or below(start_rel, rel) for rel in self.recent)
        )

    def _keep(self, key: tuple[object, ...], view: View, checking: bool = False) -> None:
        """Keep ``view`` for the next queries, dropping the oldest views past the caps (one larger than the
        entries' cap by itself serves only the query that recorded it)."""
        size, cap = len(view.entries), self.limits.max_view_entries
        if size > cap or checking:  # while a saved index is taken up, directories not yet watched: walk each time
            return
        held = sum(len(kept.entries) for kept in self.views.values())
        while self.views and (len(self.views) >= self.limits.max_views or held + size > cap):
            held -= len(self.views.pop(next(iter(self.views))).entries)
        self.views[key] = view

    def _candidates(self, pattern: str, regex: bool, ignore_case: bool) -> npt.NDArray[np.int64] | None:
        """The numbers of the indexed files that hold every trigram of the pattern's literals (``None``: no
        literal, every file)."""
        literals = required_literals(pattern, regex=regex, ignore_case=ignore_case)
        if not literals:
            return None
        from rootbound.search.index.postings import holding

        return holding(self.segments, literals)

    def _memo(self, pattern: tuple[str, bool, bool]) -> PatternMemo:
        """What earlier queries of ``pattern`` learned (:mod:`pattern_memo`; the least recently used pattern's memo
        is dropped past :attr:`IndexLimits.max_memos`)."""
        memo = self.memos.pop(pattern, None)
        if memo is None:
            memo = PatternMemo(self.count)
            if len(self.memos) >= self.limits.max_memos:
                self.memos.pop(next(iter(self.memos)))
        self.memos[pattern] = memo
        return memo

    def _locked(self, update: Callable[[], None]) -> None:
        with self.lock:
            update()

    def needs_rebuild(self) -> bool:
        return self.state == "failed" or len(self.dirty) >= self.limits.rebuild_dirty


AHEAD_WAIT: Final = 5.0
"""How long a query waits for a walk made ahead of it (``checker.walk_ahead``) before it scans."""

UNAVAILABLE: Final = "its modules could not be imported"
"""Why an index failed when its own modules (numpy) cannot be imported: never retried in this process."""
