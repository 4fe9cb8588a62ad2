"""A tree's grep on two cores: the walk cut into chunks of files, each read and searched here or by a scan helper
process (:mod:`scan_helper`), the answers merged in walk order (issue 36: "both cores for the cold scan").

Why chunks and not subtrees: the walk stays one walk in this process (its order, ignore rules, entry cap, checks
and ``not_entered`` are the scan's own), and only the per-file work, four syscalls, a copy and a search, which is
what one core cannot do fast enough, moves. A chunk names its files as ``(directory, name, inode)`` with the
directories' fds (duplicated from the walk's, kept here until the chunk is answered, so a helper that dies costs
time, never an answer: its chunks are searched here again).

Why the answer is a scan's: a chunk is searched as if it were the whole tree (:func:`search_items`, the scan's own
:class:`~agent_grep._Batches` and :func:`~agent_grep.read_listed`), recording in order what it counted and which
files matched (:class:`OrderedReport`); :class:`Merge` replays those events in walk order into the call's report,
cutting each file's lines to the room left (:func:`fit`). A chunk alone never has less room than the whole scan at
that point, so cutting is all a merge needs: the lines kept, their context and the truncation point are a scan's.
"""

from __future__ import annotations

import collections
import contextlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any, Final, Protocol, TypeAlias

from rootbound.confine.boundary import Handle
from rootbound.confine.fd_access import OpenerSpec, listed_opener
from rootbound.confine.regular_files import HardlinkPolicy
from rootbound.confine.rooted_files import RootedFiles
from rootbound.core.errors import NotADirectory, PatternTooSlow
from rootbound.search.agent_grep import (
    GrepLimits,
    GrepReport,
    LineHit,
    _Batches,
    grep_tree,
    read_listed,
)
from rootbound.search.grep_query import GrepQuery
from rootbound.search.grep_scan import LineScanner
from rootbound.search.ignore_walk import WalkLimits, walking
from rootbound.search.safe_regex import BytesPattern, compile_bytes

__all__ = [
    "CHUNK_DIRS",
    "CHUNK_FILES",
    "Chunk",
    "ChunkStopped",
    "Driver",
    "Job",
    "Lease",
    "Merge",
    "OrderedReport",
    "answer_fits",
    "fit",
    "grep_shared",
    "search_items",
]

CHUNK_FILES: Final = 128
"""Files (and counted links) a chunk names: small enough that the two processes stay busy to the end of a walk and a
cap stops both soon (~1 ms of work), large enough that the messages cost little beside the files' own syscalls.
Chosen by ``bench/search_index.py`` on 122k files: 48 files 0.99 s, 64 0.88 s, 128 0.83 s, 256 0.82 s."""
CHUNK_DIRS: Final = 64
"""Directory fds one chunk may carry (one message; the kernel's limit is 253)."""
IN_FLIGHT: Final = 3
"""Chunks sent to the helper and not yet answered: one it works on and two waiting, so it never idles while this
process searches a chunk of its own (2 measured 3% slower, more no faster)."""
LOCAL_FIRST: Final = 4
"""A call's first chunks (512 files) are searched here: a small tree never waits for the helper's round trips.
Measured (median of 30 greps, ms, one process / shared): with only the first chunk here, 400 files 4.0 / 5.4;
with four, 400 files 3.9 / 4.1, 1,000 files 9.6 / 9.9, 3,000 files 29.7 / 21.7."""
MAX_PENDING: Final = 16
"""Chunks searched or sent and not yet merged: past this, the walk waits for the oldest (a helper slowed by a hard
pattern must not let this process run ahead through the whole tree, holding every chunk's answer)."""
WAIT_STEP: Final = 0.05
"""Seconds between checks (cancellation, deadline) while waiting for the helper's answer."""

Job: TypeAlias = tuple[Any, ...]
"""One call's search, as plain data for the helper (``marshal``): see :func:`job_of`."""
Item: TypeAlias = tuple[int, str, int]
"""A chunk's entry: ``(directory slot, name, inode)``, a file to open and search; or ``(-1, reason, count)``: files
counted where they stand and not opened (a symlink; the files the search index vouches for)."""
Event: TypeAlias = tuple[Any, ...]
"""What a chunk's search found, in order: ``("c", reason, count)``, ``("h", item, hits, more)`` with ``hits`` as
``(number, text, match, gap)`` tuples, or ``("x", kind, message)``: it stopped (``slow``: the pattern is too slow
on a line, ``late``: past the deadline, ``stop``: told to stop)."""


class ChunkStopped(Exception):
    """The helper was told to stop, or the deadline passed, while searching a chunk (raised by its checks)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def job_of(query: GrepQuery, hardlinks: HardlinkPolicy, opener: OpenerSpec) -> Job:
    """A call's search as plain data: the pattern as given (``pattern, regex, ignore_case``: compiled again by the
    helper, with the same :func:`~safe_regex.compile_bytes`), its required literal, the caps, the root's opener."""
    assert query.source is not None, "a shared search needs the pattern as given"
    limits = query.limits
    return (
        *query.source,
        query.required,
        query.line_local,
        limits.max_matches,
        limits.max_per_file,
        limits.context,
        limits.max_line,
        limits.max_file_size,
        query.files_only,
        query.max_files,
        hardlinks,
        tuple(opener),
        query.deadline,
    )


class OrderedReport(GrepReport):
    """A chunk's report that also records, in order, what was counted and which files matched (:data:`Event`), so
    a merge can stop where a scan of the whole tree would."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[Event] = []

    def count(self, reason: str, count: int = 1) -> None:
        events = self.events
        if events and events[-1][0] == "c" and events[-1][1] == reason:
            events[-1] = ("c", reason, events[-1][2] + count)
        elif count:
            events.append(("c", reason, count))
        super().count(reason, count)

    def record(self, display: str, hits: list[LineHit], more: bool, files_only: bool, limits: GrepLimits) -> None:
        self.events.append(("h", int(display), [(h.number, h.text, h.match, h.gap) for h in hits], more))
        super().record(display, hits, more, files_only, limits)


class Searcher:
    """One job's compiled search, kept by the helper across the chunks of a call."""

    __slots__ = (
        "files_only",
        "hardlinks",
        "job",
        "limits",
        "line_local",
        "max_files",
        "open_entry",
        "pattern",
        "required",
        "scanner",
    )

    def __init__(self, job: Job, pattern: BytesPattern | None = None) -> None:
        (text, regex, ignore_case, required, line_local, max_matches, per_file, context, max_line, max_size) = job[:10]
        files_only, max_files, hardlinks, opener, _ = job[10:]
        if hardlinks not in ("read-only", "refuse", "allow"):
            raise ValueError("not a hard-link policy")
        self.job = job
        self.pattern = pattern if pattern is not None else compile_bytes(text, regex=regex, ignore_case=ignore_case)
        self.required, self.line_local = required, line_local
        self.limits = GrepLimits(
            max_matches=max_matches, max_per_file=per_file, max_file_size=max_size, max_line=max_line, context=context
        )
        self.files_only, self.max_files = files_only, max_files
        self.hardlinks: HardlinkPolicy = hardlinks
        self.open_entry = listed_opener(opener)
        self.scanner: LineScanner | None = None  # one for the call: its windows keep the pace they learned

    def scanner_for(self, check: Callable[[int], None] | None, deadline: float | None) -> LineScanner:
        scanner = self.scanner
        if scanner is None or scanner.check is not check:
            scanner = self.scanner = LineScanner(
                search=self.pattern,
                required=self.required,
                max_file_size=self.limits.max_file_size,
                check=check,
                deadline=deadline,
            )
        return scanner


def search_items(
    searcher: Searcher,
    items: list[Item],
    fds: list[int],
    *,
    check: Callable[[int], None] | None,
    deadline: float | None,
    stopped: Callable[[], bool] | None = None,
) -> list[Event]:
    """Read and search a chunk's files as a scan of them alone would (the scan's reader and batches), and say in
    order what was counted and found. ``check`` runs between search windows (this process: the call's budget);
    ``stopped`` between files (the helper: the stop flag and the deadline), which ends the events with an
    ``x`` event instead of raising."""
    report = OrderedReport()
    scanner = searcher.scanner_for(check, deadline)
    batches = _Batches(
        scanner,
        report,
        searcher.limits,
        searcher.files_only,
        searcher.max_files,
        searcher.required,
        searcher.line_local,
    )
    read, add, skip, open_entry, hardlinks = (
        scanner.read,
        batches.add,
        batches.skip,
        searcher.open_entry,
        searcher.hardlinks,
    )
    try:
        for position, (slot, name, inode) in enumerate(items):
            if slot < 0:
                skip(name, inode)  # (-1, reason, count)
                continue
            if stopped is not None and stopped():
                raise ChunkStopped("late" if deadline is not None and time.monotonic() > deadline else "stop")
            data = read_listed(open_entry, fds[slot], name, inode, hardlinks, read, skip)
            if data is not None and add(str(position), data):
                return report.events
        batches.flush()
    except ChunkStopped as stop:
        report.events.append(("x", stop.kind, ""))
    except PatternTooSlow as error:
        report.events.append(("x", "slow", str(error)))
    return report.events


_REASONS: Final = frozenset(("searched", "too_large", "binary", "links", "unreadable"))
_STOPS: Final = frozenset(("slow", "late", "stop"))


def answer_fits(events: object, items: int) -> bool:
    """Whether a helper's answer for a chunk of ``items`` entries is events of the shapes :data:`Event` says (a
    helper is trusted no further: anything else is taken as a helper gone wrong, and the chunk is searched here)."""
    if not isinstance(events, list):
        return False
    for event in events:
        if not isinstance(event, tuple) or not event:
            return False
        tag = event[0]
        if tag == "c":
            ok = len(event) == 3 and event[1] in _REASONS and type(event[2]) is int and event[2] > 0
        elif tag == "h":
            ok = (
                len(event) == 4
                and type(event[1]) is int
                and 0 <= event[1] < items
                and isinstance(event[2], list)
                and all(_hit_fits(hit) for hit in event[2])
                and type(event[3]) is bool
            )
        elif tag == "x":
            ok = len(event) == 3 and event[1] in _STOPS and isinstance(event[2], str)
        else:
            ok = False
        if not ok:
            return False
    return True


def _hit_fits(hit: object) -> bool:
    return (
        isinstance(hit, tuple)
        and len(hit) == 4
        and type(hit[0]) is int
        and isinstance(hit[1], str)
        and type(hit[2]) is bool
        and type(hit[3]) is bool
    )


def fit(hits: list[LineHit], more: bool, room: int, context: int) -> tuple[list[LineHit], bool]:
    """A file's lines found with more room than the scan has at that point, cut to ``room`` matches as the scan
    would have found them: the lines up to the last kept match, then its after-context (lines that matched past it
    are context there), and ``more``."""
    seen = 0
    for at, hit in enumerate(hits):
        if hit.match:
            seen += 1
            if seen == room:
                if not any(later.match for later in hits[at + 1 :]):
                    return hits, more
                last = hit.number
                after = [LineHit(h.number, h.text, False, h.gap) for h in hits[at + 1 :] if h.number <= last + context]
                return hits[: at + 1] + after, True
    return hits, more


class Merge:
    """Chunks' events replayed in walk order into the call's report, with its caps (see the module)."""

    __slots__ = ("check", "files_only", "limits", "max_files", "report")

    def __init__(
        self,
        report: GrepReport,
        limits: GrepLimits,
        *,
        files_only: bool,
        max_files: int,
        check: Callable[[int], None] | None,
    ) -> None:
        self.report, self.limits, self.files_only, self.max_files, self.check = (
            report,
            limits,
            files_only,
            max_files,
            check,
        )

    def take(self, base: str, path: Callable[[int], str], events: list[Event]) -> bool:
        """One chunk's events (``base + path(n)``: the path of its item ``n``); ``True`` when a cap says stop."""
        report, limits, files_only = self.report, self.limits, self.files_only
        for event in events:
            tag = event[0]
            if tag == "c":
                report.count(event[1], event[2])
            elif tag == "h":
                room = 1 if files_only else min(limits.max_per_file, limits.max_matches - report.matches)
                hits, more = fit([LineHit(*hit) for hit in event[2]], event[3], room, limits.context)
                report.record(base + path(event[1]), hits, more, files_only, limits)
                if report.truncated or (files_only and len(report.files) >= self.max_files):
                    report.truncated = True
                    return True
            else:
                self._stopped(event[1], event[2])
        return False

    def _stopped(self, kind: str, message: str) -> None:
        if kind == "slow":
            raise PatternTooSlow(message=message)
        if self.check is not None:
            self.check(0)  # past the deadline (or cancelled): the call's own error
        raise PatternTooSlow(message="the search stopped before the per-call deadline could be checked: try again")


class Lease(Protocol):
    """A scan helper taken by one call (:class:`~scan_helper.ScanHelper`)."""

    @property
    def alive(self) -> bool:
        """Whether the helper still takes chunks."""
        ...

    def free(self) -> bool:
        """Whether another chunk may be sent now."""
        ...

    def send(self, ticket: int, job: Job, items: list[Item], fds: list[int]) -> bool:
        """Send a chunk; ``False`` if the helper is gone (it is then no longer :attr:`alive`)."""
        ...

    def answers(self, wait: float) -> list[tuple[int, list[Event]]]:
        """The chunks answered so far, waiting up to ``wait`` seconds for one; none once the helper is gone."""
        ...

    def stop(self, tickets: set[int]) -> None:
        """Tell the helper to stop, wait for the answers of ``tickets`` (bounded), then clear the stop."""
        ...

    def fail(self) -> None:
        """The helper answered nonsense: stop it for good."""
        ...


class Chunk:
    """Files of the walk in order, with the directory fds they are opened beneath (duplicates, closed here)."""

    __slots__ = ("events", "fds", "items", "prefixes", "slots", "ticket")

    def __init__(self, ticket: int) -> None:
        self.ticket = ticket
        self.items: list[Item] = []
        self.fds: list[int] = []
        self.prefixes: list[str] = []  # each slot's directory, below the start
        self.slots: dict[str, int] = {}  # a directory's prefix (one directory per walk) -> its slot in fds
        self.events: list[Event] | None = None

    def add(self, prefix: str, name: str, inode: int, dir_fd: int) -> None:
        """One file of the directory ``dir_fd`` at ``prefix`` (see :meth:`full`)."""
        self.items.append((self.slot(prefix, dir_fd), name, inode))

    def slot(self, prefix: str, dir_fd: int) -> int:
        """The slot of the directory ``dir_fd`` at ``prefix`` (its fd duplicated the first time)."""
        slot = self.slots.get(prefix)
        if slot is None:
            slot = self.slots[prefix] = len(self.fds)
            self.fds.append(os.dup(dir_fd))
            self.prefixes.append(prefix)
        return slot

    def count(self, reason: str, count: int = 1) -> bool:
        """Files counted where they stand, not opened; ``True`` once the chunk is full."""
        self.items.append((-1, reason, count))
        return len(self.items) >= CHUNK_FILES

    def full(self) -> bool:
        return len(self.items) >= CHUNK_FILES or len(self.fds) >= CHUNK_DIRS

    def path(self, position: int) -> str:
        """The path below the start of the file at ``position``."""
        slot, name, _ = self.items[position]
        return self.prefixes[slot] + name

    def close(self) -> None:
        fds, self.fds = self.fds, []
        for fd in fds:
            os.close(fd)


class Driver:
    """The chunks of one call, in walk order: sent to the helper while it has room, searched here otherwise;
    merged as soon as the oldest is answered."""

    def __init__(self, lease: Lease, job: Job, searcher: Searcher, merge: Merge, base: str, check: Any) -> None:
        self.lease, self.job, self.searcher, self.merge, self.base, self.check = (
            lease,
            job,
            searcher,
            merge,
            base,
            check,
        )
        self.pending: collections.deque[Chunk] = collections.deque()
        self.sent: dict[int, Chunk] = {}
        self.tickets = 0
        self.filling: Chunk | None = None  # the chunk being filled, not yet dispatched
        self.done = False  # a cap stopped the merge

    @classmethod
    def of(
        cls, lease: Lease, handle: Handle, query: GrepQuery, report: GrepReport, hardlinks: HardlinkPolicy
    ) -> Driver:
        """The driver of one call's search below ``handle`` (the start: opens are beneath its root)."""
        job = job_of(query, hardlinks, handle.opener_spec())
        merge = Merge(report, query.limits, files_only=query.files_only, max_files=query.max_files, check=query.check)
        return cls(lease, job, Searcher(job, query.pattern), merge, handle.prefix, query.check)

    def chunk(self) -> Chunk:
        """The next chunk to fill (closed by :meth:`close` if the call ends before it is dispatched)."""
        self.tickets += 1
        self.filling = Chunk(self.tickets)
        return self.filling

    def dispatch(self, chunk: Chunk) -> None:
        """Hand a full chunk on, then merge what is answered."""
        self.filling = None
        self.pending.append(chunk)
        lease = self.lease
        early = chunk.ticket <= LOCAL_FIRST
        if not early and lease.alive and lease.free() and lease.send(chunk.ticket, self.job, chunk.items, chunk.fds):
            self.sent[chunk.ticket] = chunk
        else:
            self._here(chunk)
        self._collect(0.0)
        self._merge()
        while len(self.pending) > MAX_PENDING and not self.done:
            self._wait_for_head()

    def next(self, full: Chunk) -> Chunk | None:
        """Dispatch a full chunk; the next one to fill, or ``None`` when a cap stopped the merge."""
        self.dispatch(full)
        return None if self.done else self.chunk()

    def end(self, last: Chunk) -> None:
        """Dispatch the last chunk (if it holds anything), then :meth:`finish`."""
        if last.items:
            self.dispatch(last)
        else:
            last.close()
        self.finish()

    def finish(self) -> None:
        """Wait for every chunk still out, merging in order, until all are merged or a cap stops."""
        while self.pending and not self.done:
            self._wait_for_head()

    def _wait_for_head(self) -> None:
        if self.pending[0].events is None:
            self._collect(WAIT_STEP)
            if self.check is not None:
                self.check(0)
        self._merge()

    def close(self) -> None:
        """Stop the helper's work on this call and release every chunk's fds."""
        if self.sent and self.lease.alive:
            self.lease.stop(set(self.sent))
        self.sent.clear()
        for chunk in self.pending:
            chunk.close()
        self.pending.clear()
        if self.filling is not None:
            self.filling.close()
            self.filling = None

    def _here(self, chunk: Chunk) -> None:
        try:
            chunk.events = search_items(
                self.searcher, chunk.items, chunk.fds, check=self.check, deadline=self.searcher.job[-1]
            )
        finally:
            chunk.close()

    def _collect(self, wait: float) -> None:
        """Take the helper's answers (waiting up to ``wait`` for one); if it is gone, search what it held here."""
        for ticket, events in self.lease.answers(wait):
            chunk = self.sent.get(ticket)
            if chunk is None:
                continue
            if not answer_fits(events, len(chunk.items)):
                self.lease.fail()
                break
            del self.sent[ticket]
            chunk.events = events
            chunk.close()
        if not self.lease.alive and self.sent:
            taken_back = sorted(self.sent.values(), key=lambda chunk: chunk.ticket)
            self.sent.clear()
            for chunk in taken_back:  # its fds were kept for this
                self._here(chunk)

    def _merge(self) -> None:
        pending, merge, base = self.pending, self.merge, self.base
        while pending and not self.done and pending[0].events is not None:
            chunk = pending.popleft()
            assert chunk.events is not None
            if merge.take(base, chunk.path, chunk.events):
                self.done = True


def grep_shared(
    fs: RootedFiles,
    path: object,
    query: GrepQuery,
    lease: Lease | None,
    *,
    walk_limits: WalkLimits = WalkLimits(),  # noqa: B008 - frozen
) -> GrepReport:
    """:func:`~agent_grep.grep_tree`'s report, its files read and searched by this process and the helper
    ``lease`` together (``query.source``: the pattern as given, compiled again there). Without a lease, and for a
    start that is a file, it is :func:`~agent_grep.grep_tree` itself."""

    def alone() -> GrepReport:
        return grep_tree(fs, path, query, walk_limits=walk_limits)

    if lease is None:
        return alone()
    report = GrepReport()
    with contextlib.ExitStack() as stack:
        try:
            handle, entries = stack.enter_context(
                walking(fs, path, query.where, limits=walk_limits, check=query.check, not_entered=report.not_entered)
            )
        except NotADirectory:
            return alone()
        driver = Driver.of(lease, handle, query, report, fs.hardlinks)
        stack.callback(driver.close)
        _walk_into(driver, handle, entries)
    return report


def _walk_into(driver: Driver, handle: Handle, entries: Iterator[tuple[str, os.DirEntry[str], int, int]]) -> None:
    """The walk's files into chunks, in order, until a cap stops the merge: the per-entry loop of a shared scan
    (the walk yields one prefix object per directory, so a directory's slot is looked up once)."""
    chunk = driver.chunk()
    items, here, slot = chunk.items, None, 0
    for prefix, entry, dir_fd, _ in entries:
        if entry.is_file(follow_symlinks=False):
            if prefix is not here:
                slot, here = chunk.slot(prefix, dir_fd), prefix
            items.append((slot, entry.name, entry.inode()))
            full = len(items) >= CHUNK_FILES or slot + 1 >= CHUNK_DIRS
        elif not entry.is_dir(follow_symlinks=False) and entry.is_symlink():
            full = chunk.count("links")
        else:
            continue
        if full:
            following = driver.next(chunk)
            if following is None:
                return
            chunk, items, here = following, following.items, None
    driver.end(chunk)
