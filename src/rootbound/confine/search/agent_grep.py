"""grep for agents over a filtered walk: RE2 patterns, context lines, per-file and total caps, files-only.

Why not ``RootedFS.grep``: that one is the fast raw primitive (Python ``re``, walk order). An agent's grep needs a
pattern language that cannot stall the server (:mod:`safe_regex`), results that are the same every call
(sorted walk), ``.gitignore`` awareness (:mod:`ignore_walk`), and a cap per file so one generated file cannot
use up the whole answer. Reading, the binary sniff, the literal fast path and line splitting are the one scanner
shared with ``RootedFS.grep`` (:class:`grep_scan.LineScanner`); :func:`scan` is it on bytes, tested alone.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from rootbound.confine.regular_files import check_file
from rootbound.confine.rooted_fs import RootedFS
from rootbound.confine.search.grep_scan import LineScanner, Span
from rootbound.confine.search.ignore_rules import PathFilter
from rootbound.confine.search.ignore_walk import READ_NAMED, WalkLimits, open_found, walk
from rootbound.confine.search.safe_regex import BytesPattern
from rootbound.core.errors import NotADirectory
from rootbound.text.read_windows import BINARY_SNIFF

__all__ = ["GrepLimits", "GrepReport", "LineHit", "grep_tree", "scan"]


@dataclass(frozen=True)
class LineHit:
    """A line of a file: 1-based ``number``, its ``text`` (cut to a maximum length), and whether it matched
    (``False``: a context line). ``gap`` marks the first line of a group not adjacent to the previous one."""

    number: int
    text: str
    match: bool
    gap: bool = False


@dataclass(frozen=True)
class GrepLimits:
    max_matches: int = 200
    max_per_file: int = 20
    max_file_size: int = 4 * 1024 * 1024
    max_line: int = 500
    context: int = 0


@dataclass
class GrepReport:
    """Hits per file in path order; ``truncated`` when the total cap stopped the search (more may exist),
    ``capped_files`` the files that had more matches than the per-file cap. ``skipped`` counts the files not
    searched, and the four counters after it say why (over the size limit, binary, a symlink, which grep does not
    follow, or unreadable), so an answer can say so (issue 27)."""

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

    def skip(self, reason: str) -> None:
        """Count a file not searched, by reason: ``too_large``, ``binary``, ``links`` or ``unreadable``."""
        self.skipped += 1
        setattr(self, reason, getattr(self, reason) + 1)


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


def _search_one(
    fd: int, size: int, display: str, scanner: LineScanner, files_only: bool, limits: GrepLimits, report: GrepReport
) -> None:
    """One file through the shared scanner, then the per-file and total caps."""
    room = 1 if files_only else min(limits.max_per_file, limits.max_matches - report.matches)
    if size > limits.max_file_size:
        report.skip("too_large")
        return
    scanned = scanner.file(fd, size, room, 0 if files_only else limits.context)
    if scanned is None:  # binary, unreadable, or grew past the limit while read: look again to say which
        try:
            head, size = os.pread(fd, BINARY_SNIFF, 0), os.fstat(fd).st_size
        except OSError:
            head = b""
        report.skip("too_large" if size > limits.max_file_size else "binary" if b"\x00" in head else "unreadable")
        return
    report.searched += 1
    data, spans, more = scanned
    if not spans:
        return
    hits = _hits(data, spans, limits.max_line)
    report.files.append((display, hits))
    report.matches += sum(1 for hit in hits if hit.match)
    if more and not files_only:
        if report.matches >= limits.max_matches:
            report.truncated = True
        else:
            report.capped_files += 1
    if report.matches >= limits.max_matches and not files_only:
        report.truncated = True


def grep_tree(
    fs: RootedFS,
    path: object,
    pattern: BytesPattern,
    where: PathFilter,
    *,
    limits: GrepLimits = GrepLimits(),
    files_only: bool = False,
    max_files: int = 10_000,
    walk_limits: WalkLimits = WalkLimits(),  # noqa: B008 - frozen
    check: Callable[[int], None] | None = None,
    required: bytes | None = None,
    deadline: float | None = None,
) -> GrepReport:
    """Search the files below ``path`` (or the file ``path``) that ``where`` selects, in path order.

    ``required``: bytes every matching file contains (a case-sensitive literal), tested before the pattern.
    ``check(n)`` runs per walked entries and, with ``n=0``, between the scanner's search windows (so a deadline or
    a cancellation stops a slow pattern within one window, not after a file); ``deadline`` (``time.monotonic()``)
    lets the scanner refuse a long line it could not finish in time (:class:`~rootbound.PatternTooSlow`).
    """
    report = GrepReport()
    scanner = LineScanner(
        search=pattern, required=required, max_file_size=limits.max_file_size, check=check, deadline=deadline
    )
    try:
        entries = walk(fs, path, where, limits=walk_limits, check=check)
        first = next(entries, None)
    except NotADirectory:
        with fs.boundary.open(path, READ_NAMED, resolver=fs.resolver) as handle:
            st = handle.fstat()
            check_file(st, fs.hardlinks, writing=False)
            _search_one(handle.fd, st.st_size, str(handle.path), scanner, files_only, limits, report)
        return report
    if first is None:
        return report
    try:
        for item in itertools.chain((first,), entries):
            if item.is_dir:
                continue
            if not item.entry.is_file(follow_symlinks=False):
                if item.entry.is_symlink():
                    report.skip("links")
                continue
            opened = open_found(fs, item)
            if opened is None:
                report.skip("unreadable")
                continue
            fd, st = opened
            try:
                _search_one(fd, st.st_size, item.display, scanner, files_only, limits, report)
            finally:
                os.close(fd)
            if report.truncated or (files_only and len(report.files) >= max_files):
                report.truncated = True
                return report
    finally:
        entries.close()
    return report
