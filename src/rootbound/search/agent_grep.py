"""grep for agents over a filtered walk: RE2 patterns, context lines, per-file and total caps, files-only.

Why not ``RootedFS.grep``: that one is the fast raw primitive (Python ``re``, walk order). An agent's grep needs a
pattern language that cannot stall the server (:mod:`safe_regex`), results that are the same every call
(sorted walk), ``.gitignore`` awareness (:mod:`ignore_walk`), and a cap per file so one generated file cannot
use up the whole answer. Reading (size cap, binary sniff), search windows and line splitting are the one scanner
shared with ``RootedFS.grep`` (:class:`grep_scan.LineScanner`); :func:`scan` is it on bytes, tested alone. A
tree's files are read by one tight loop and searched joined in batches (:class:`_Batches`, issue 29).
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

from rootbound.confine.boundary import Handle
from rootbound.confine.regular_files import HardlinkPolicy, check_file
from rootbound.confine.rooted_files import RootedFiles
from rootbound.core.errors import NotADirectory, RootsError
from rootbound.search.grep_query import GrepLimits, GrepQuery
from rootbound.search.grep_scan import LineScanner, Span
from rootbound.search.ignore_walk import READ_FILE, READ_NAMED, WalkLimits, walking
from rootbound.search.safe_regex import BytesPattern, literal_finder

__all__ = ["GrepLimits", "GrepReport", "LineHit", "grep_tree", "scan"]


@dataclass(frozen=True)
class LineHit:
    """A line of a file: 1-based ``number``, its ``text`` (cut to a maximum length), and whether it matched
    (``False``: a context line). ``gap`` marks the first line of a group not adjacent to the previous one."""

    number: int
    text: str
    match: bool
    gap: bool = False


@dataclass
class GrepReport:
    """Hits per file in path order; ``truncated`` when the total cap stopped the search (more may exist),
    ``capped_files`` the files that had more matches than the per-file cap. ``skipped`` counts the files not
    searched, and the four counters after it say why (over the size limit, binary, a symlink, which grep does not
    follow, or unreadable), so an answer can say so (issue 27). ``dirs_not_entered``: directories the walk could
    not enter (unreadable, another file system, changed while walked), whose files were not searched."""

    files: list[tuple[str, list[LineHit]]] = field(default_factory=list)
    matches: int = 0
    searched: int = 0
    skipped: int = 0
    truncated: bool = False
    capped_files: int = 0
    too_large: int = 0
    binary: int = 0
    links: int = 0
    unreadable: int = 0
    dirs_not_entered: int = 0

    def not_entered(self, path: str) -> None:
        self.dirs_not_entered += 1

    def skip(self, reason: str, count: int = 1) -> None:
        """Count files not searched, by reason: ``too_large``, ``binary``, ``links`` or ``unreadable``."""
        self.skipped += count
        setattr(self, reason, getattr(self, reason) + count)

    def count(self, reason: str, count: int = 1) -> None:
        """Count files searched (``reason`` ``searched``, without a match) or skipped (:meth:`skip`'s reasons)."""
        if reason == "searched":
            self.searched += count
        else:
            self.skip(reason, count)

    def skip_all(self, reasons: Iterable[Counter[str]]) -> None:
        """Count the files gathered in ``reasons`` (one counter per queued file, :class:`_Batches`)."""
        for counted in reasons:
            for reason, count in counted.items():
                self.count(reason, count)

    def record(self, display: str, hits: list[LineHit], more: bool, files_only: bool, limits: GrepLimits) -> None:
        """A file searched with a match: its lines shown (``more``: matching lines were left out), then the
        per-file and total caps."""
        self.files.append((display, hits))
        self.matches += sum(1 for hit in hits if hit.match)
        if more and not files_only:
            if self.matches >= limits.max_matches:
                self.truncated = True
            else:
                self.capped_files += 1
        if self.matches >= limits.max_matches and not files_only:
            self.truncated = True


def _text(data: bytes, start: int, end: int, max_line: int) -> str:
    text = data[start : min(end, start + 4 * max_line)].decode("utf-8", "replace")
    if text.endswith("\r"):
        text = text[:-1]
    return text[:max_line] + (" […]" if end - start > max_line and len(text) > max_line else "")


def _hits(data: bytes, spans: list[Span], max_line: int) -> list[LineHit]:
    return [LineHit(n, _text(data, s, e, max_line), m, g) for n, s, e, m, g in spans]


def scan(
    data: bytes, pattern: BytesPattern, *, max_hits: int, context: int = 0, max_line: int = 500
) -> tuple[list[LineHit], bool]:
    """The matching lines of ``data`` (one hit per line) with ``context`` lines around each, at most ``max_hits``
    matches; the flag says whether more matches were left out."""
    spans, more = LineScanner(search=pattern, required=None, max_file_size=len(data)).lines(data, max_hits, context)
    return _hits(data, spans, max_line), more


def _record(
    report: GrepReport, display: str, data: bytes, spans: list[Span], more: bool, files_only: bool, limits: GrepLimits
) -> None:
    """A file's matching lines into the report, then the per-file and total caps."""
    report.record(display, _hits(data, spans, limits.max_line), more, files_only, limits)


def _search_one(
    fd: int, size: int, display: str, scanner: LineScanner, files_only: bool, limits: GrepLimits, report: GrepReport
) -> None:
    """One file through the shared scanner, then the per-file and total caps."""
    room = 1 if files_only else min(limits.max_per_file, limits.max_matches - report.matches)
    scanned = scanner.file(fd, size, room, 0 if files_only else limits.context, report.skip)
    if scanned is None:  # over the size limit, binary or unreadable: counted by reason
        return
    report.searched += 1
    data, spans, more = scanned
    if spans:
        _record(report, display, data, spans, more, files_only, limits)


BATCH_BYTES: Final = 1 << 20
"""Files of a tree are searched joined by newlines, about this many bytes at a time: one engine call finds the next
file with a match in a whole batch (most files have none), instead of one call, or several windows, per file."""


_NOTHING: Final[Counter[str]] = Counter()
"""No file skipped between two queued files (the common case: no counter made per file); never changed."""


class _Batches:
    """The files read so far and not yet searched, and the search of them in path order (issue 29).

    A match never spans a newline (:func:`~rootbound.search.safe_regex.compile_bytes`), so in files joined
    by newlines the first match at or after a file's start lies in the first file that has one: that file alone then
    goes through the scanner (its lines, context and caps exactly as if it had been searched alone), and the search
    resumes at the next file. A pattern whose matches could depend on the text around a line (``line_local``
    false) gets batches of one file. The scanner's windows and ``check`` apply to a batch as to a file; a required
    literal is found in one call per batch (RE2, :func:`~rootbound.search.safe_regex.literal_finder`, or
    ``bytes.find``).
    """

    __slots__ = (
        "batch_bytes",
        "datas",
        "files_only",
        "finder",
        "limits",
        "max_files",
        "names",
        "pending",
        "report",
        "required",
        "scanner",
        "seen",
        "size",
        "skips",
    )

    def __init__(
        self,
        scanner: LineScanner,
        report: GrepReport,
        limits: GrepLimits,
        files_only: bool,
        max_files: int,
        required: bytes | None,
        line_local: bool,
        batch_bytes: int = BATCH_BYTES,
    ) -> None:
        """``line_local``: the pattern's matches depend on each line alone, so files are joined ``batch_bytes`` at
        a time (else one a batch)."""
        self.scanner, self.report, self.limits = scanner, report, limits
        self.files_only, self.max_files = files_only, max_files
        self.required = required
        self.finder = None if required is None else literal_finder(required)
        self.batch_bytes = batch_bytes if line_local else 0
        self.names: list[str] = []
        self.datas: list[bytes] = []
        self.skips: list[Counter[str]] = []  # files skipped (by reason) in path order just before each queued file
        self.pending: Counter[str] = _NOTHING  # skipped since the last queued file (made on the first skip)
        self.size = 0
        self.seen: Callable[[str, bytes, list[Span], bool], None] | None = None
        """Told each file searched with a match: its path, content, lines shown and whether more were left out."""

    def skip(self, reason: str, count: int = 1) -> None:
        """Count files skipped (:meth:`GrepReport.skip`'s reasons), or searched without a match (``searched``:
        the search index's files it need not open): in path order, so a cap that stops the search before them
        leaves them uncounted, as a search of one file at a time would."""
        if self.datas:
            if self.pending is _NOTHING:
                self.pending = Counter()
            self.pending[reason] += count
        else:
            self.report.count(reason, count)

    def add(self, display: str, data: bytes) -> bool:
        """Queue one file's content, and search the batch once it is full; ``True`` when a cap says stop."""
        self.names.append(display)
        self.datas.append(data)
        self.skips.append(self.pending)
        self.pending = _NOTHING
        self.size += len(data) + 1
        return self.size >= self.batch_bytes and self.flush()

    def flush(self) -> bool:
        """Search the queued files in order; ``True`` when a cap says stop (the files after it are not counted)."""
        names, datas, skips, trailing = self.names, self.datas, self.skips, self.pending
        if not datas:
            return False
        self.names, self.datas, self.skips, self.size, self.pending = [], [], [], 0, _NOTHING
        joined = datas[0] if len(datas) == 1 else b"\n".join(datas)
        starts = list(itertools.accumulate([len(data) + 1 for data in datas[:-1]], initial=0))
        report = self.report
        index, pos, count = 0, 0, len(datas)
        while index < count:
            hit = self._next(joined, pos)
            if hit < 0:
                report.count("searched", count - index)
                report.skip_all(skips[index:])
                break
            found = bisect.bisect_right(starts, hit, index) - 1
            report.count("searched", found - index + 1)
            report.skip_all(skips[index : found + 1])
            if self._lines(names[found], datas[found], first=hit - starts[found]):
                return True
            index = found + 1
            if index < count:
                pos = starts[index]
        report.skip_all([trailing])
        return False

    def _next(self, joined: bytes, pos: int) -> int:
        """Where the first candidate match at or after ``pos`` is (-1: none)."""
        required = self.required
        if required is None:
            return self.scanner.find(joined, pos)
        if self.finder is None:
            return joined.find(required, pos)
        found = self.finder.search(joined, pos)
        return -1 if found is None else found.start()

    def known(self, display: str, data: bytes, found: list[tuple[int, int, int]]) -> bool:
        """A file searched before, unchanged since, whose matching lines were ``found`` then: the queued files are
        searched first, then its lines are taken as a search of it would find them. ``True`` when a cap says
        stop."""
        if self.flush():
            return True
        self.report.count("searched")
        return self._lines(display, data, found)

    def _lines(
        self, display: str, data: bytes, found: list[tuple[int, int, int]] | None = None, first: int = 0
    ) -> bool:
        """One file's lines into the report (``found``: known from an earlier search; ``first``: see
        :meth:`LineScanner.lines`); ``True`` when a cap says stop."""
        report, limits, files_only = self.report, self.limits, self.files_only
        room = 1 if files_only else min(limits.max_per_file, limits.max_matches - report.matches)
        around = 0 if files_only else limits.context
        if found is None:
            spans, more = self.scanner.lines(data, room, around, first)
            if self.seen is not None and spans:
                self.seen(display, data, spans, more)
        else:
            spans, more = self.scanner.known(data, found, room, around)
        if spans:
            _record(report, display, data, spans, more, files_only, limits)
        if report.truncated or (files_only and len(report.files) >= self.max_files):
            report.truncated = True
            return True
        return False


def read_listed(
    open_entry: Callable[[int, str, int, int], tuple[int, os.stat_result] | None],
    dir_fd: int,
    name: str,
    inode: int,
    hardlinks: HardlinkPolicy,
    read: Callable[[int, int, Callable[[str], object]], bytes | None],
    skip: Callable[[str], object],
) -> bytes | None:
    """The content of the regular file ``name`` listed (with ``inode``) in ``dir_fd``, or ``None`` (the reason told
    to ``skip``): opened by name beneath the held directory (no link followed, the listed inode on the root's mount,
    :meth:`~rootbound.boundary.Handle.entry_opener`), typed and sized by that open's ``fstat``, the hard-link policy
    applied, read by the scanner's :meth:`~LineScanner.read` (size cap, binary sniff), closed. Every grep of a
    tree reads its files here, in this process or a scan helper's (:mod:`chunk_scan`)."""
    opened = open_entry(dir_fd, name, inode, READ_FILE)
    if opened is None:
        skip("unreadable")
        return None
    fd, st = opened
    try:
        if st.st_nlink != 1 or not stat.S_ISREG(st.st_mode):
            check_file(st, hardlinks, writing=False)
        return read(fd, st.st_size, skip)
    except RootsError:
        skip("unreadable")
        return None
    finally:
        os.close(fd)


def _read_tree(
    handle: Handle,
    entries: Iterator[tuple[str, os.DirEntry[str], int, int]],
    hardlinks: HardlinkPolicy,
    scanner: LineScanner,
    batches: _Batches,
) -> None:
    """Read every regular file the walk yields into ``batches`` (until a cap says stop), the others counted: the
    per-file loop every grep of a tree pays (local names, no call the common case does not need)."""
    base = handle.prefix
    open_entry = handle.entry_opener()
    read = scanner.read
    add, skip = batches.add, batches.skip
    for prefix, entry, dir_fd, _ in entries:
        if not entry.is_file(follow_symlinks=False):
            if not entry.is_dir(follow_symlinks=False) and entry.is_symlink():
                skip("links")
            continue
        data = read_listed(open_entry, dir_fd, entry.name, entry.inode(), hardlinks, read, skip)
        if data is not None and add(base + prefix + entry.name, data):
            break


def grep_tree(
    fs: RootedFiles,
    path: object,
    query: GrepQuery,
    *,
    walk_limits: WalkLimits = WalkLimits(),  # noqa: B008 - frozen
    batch_bytes: int = BATCH_BYTES,
) -> GrepReport:
    """Search the files below ``path`` (or the file ``path``) that ``query.where`` selects, in path order.

    ``query.check(n)`` runs per walked entries and, with ``n=0``, between the scanner's search windows (so a
    deadline or a cancellation stops a slow pattern within one window, not after a file); ``query.deadline`` lets
    the scanner refuse a long line it could not finish in time (:class:`~rootbound.PatternTooSlow`). With
    ``query.line_local`` files are searched joined, ``batch_bytes`` at a time (:class:`_Batches`); otherwise one
    file at a time.
    """
    pattern, where, limits, files_only, check = query.pattern, query.where, query.limits, query.files_only, query.check
    required, deadline = query.required, query.deadline
    report = GrepReport()
    scanner = LineScanner(
        search=pattern, required=required, max_file_size=limits.max_file_size, check=check, deadline=deadline
    )
    with contextlib.ExitStack() as stack:
        try:
            handle, entries = stack.enter_context(
                walking(fs, path, where, limits=walk_limits, check=check, not_entered=report.not_entered)
            )
        except NotADirectory:
            with fs.boundary.open(path, READ_NAMED, resolver=fs.resolver) as single:
                st = single.fstat()
                check_file(st, fs.hardlinks, writing=False)
                _search_one(single.fd, st.st_size, str(single.path), scanner, files_only, limits, report)
            return report
        batches = _Batches(
            scanner, report, limits, files_only, query.max_files, required, query.line_local, batch_bytes
        )
        _read_tree(handle, entries, fs.hardlinks, scanner, batches)
        if not report.truncated:
            batches.flush()
    return report
