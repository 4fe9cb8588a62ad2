"""grep for agents over a filtered walk: RE2 patterns, context lines, per-file and total caps, files-only.

Why not ``RootedFS.grep``: that one is the fast raw primitive (Python ``re``, walk order). An agent's grep needs a
pattern language that cannot stall the server (:mod:`rootbound._regex`), results that are the same every call
(sorted walk), ``.gitignore`` awareness (:mod:`rootbound._walk`), and a cap per file so one generated file cannot
use up the whole answer. Line scanning (:func:`scan`) is pure and tested on its own.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from ._files import check_file
from ._ignore import PathFilter
from ._regex import BytesPattern
from ._walk import READ_NAMED, WalkLimits, open_found, walk
from .errors import NotADirectory, RootsError
from .fs import RootedFS

__all__ = ["GrepLimits", "GrepReport", "LineHit", "grep_tree", "scan"]

_BINARY_SNIFF: Final = 8192


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
    ``capped_files`` the files that had more matches than the per-file cap."""

    files: list[tuple[str, list[LineHit]]] = field(default_factory=list)
    matches: int = 0
    searched: int = 0
    skipped: int = 0
    truncated: bool = False
    capped_files: int = 0


def _line_bounds(data: bytes, start: int) -> tuple[int, int]:
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", start)
    return line_start, len(data) if line_end < 0 else line_end


def _text(data: bytes, start: int, end: int, max_line: int) -> str:
    text = data[start : min(end, start + 4 * max_line)].decode("utf-8", "replace")
    if text.endswith("\r"):
        text = text[:-1]
    return text[:max_line] + (" […]" if end - start > max_line and len(text) > max_line else "")


def scan(
    data: bytes, pattern: BytesPattern, *, max_hits: int, context: int = 0, max_line: int = 500
) -> tuple[list[LineHit], bool]:
    """The matching lines of ``data`` (one hit per line) with ``context`` lines around each, at most ``max_hits``
    matches; the flag says whether more matches were left out."""
    spans: list[tuple[int, int, int]] = []  # (line number, start, end) of matching lines
    pos, counted, number, more = 0, 0, 1, False
    size = len(data)
    while pos <= size:
        found = pattern.search(data, pos)
        if found is None:
            break
        line_start, line_end = _line_bounds(data, found.start())
        if len(spans) >= max_hits:
            more = True
            break
        number += data.count(b"\n", counted, line_start)
        counted = line_start
        spans.append((number, line_start, line_end))
        pos = line_end + 1
    if not context:
        return [LineHit(n, _text(data, s, e, max_line), True) for n, s, e in spans], more
    hits: list[LineHit] = []
    shown = 0  # the last line number already output
    for index, (number, line_start, line_end) in enumerate(spans):
        before: list[LineHit] = []
        cursor = line_start
        for back in range(1, context + 1):
            if number - back <= shown or cursor == 0:
                break
            prev_start = data.rfind(b"\n", 0, cursor - 1) + 1
            before.append(LineHit(number - back, _text(data, prev_start, cursor - 1, max_line), False))
            cursor = prev_start
        before.reverse()
        first = before[0].number if before else number
        gap = bool(hits) and first > shown + 1
        for i, hit in enumerate(before):
            hits.append(LineHit(hit.number, hit.text, False, gap and i == 0))
        hits.append(LineHit(number, _text(data, line_start, line_end, max_line), True, gap and not before))
        shown = number
        limit = spans[index + 1][0] - 1 if index + 1 < len(spans) else number + context
        cursor = line_end + 1
        while shown < min(number + context, limit) and cursor < size:
            next_end = data.find(b"\n", cursor)
            next_end = size if next_end < 0 else next_end
            shown += 1
            hits.append(LineHit(shown, _text(data, cursor, next_end, max_line), False))
            cursor = next_end + 1
    return hits, more


def _read_all(fd: int, size: int, limit: int) -> bytes | None:
    """The whole file, or ``None`` if it is (or grows) over ``limit`` bytes."""
    if size > limit:
        return None
    data = os.read(fd, size + 1)
    if len(data) == size:
        return data
    chunks = [data]
    total = len(data)
    while chunks[-1] and total <= limit:
        chunk = os.read(fd, min(65536, limit + 1 - total))
        chunks.append(chunk)
        total += len(chunk)
    return None if total > limit else b"".join(chunks)


def _search_one(
    data: bytes,
    display: str,
    pattern: BytesPattern,
    files_only: bool,
    limits: GrepLimits,
    report: GrepReport,
    required: bytes | None,
) -> None:
    if data.find(b"\x00", 0, _BINARY_SNIFF) >= 0:
        report.skipped += 1
        return
    report.searched += 1
    if required is not None and required not in data:
        return  # most files do not match: a memchr-speed test before the regex engine
    room = min(limits.max_per_file, limits.max_matches - report.matches)
    if files_only:
        room = 1
    hits, more = scan(
        data, pattern, max_hits=room, context=0 if files_only else limits.context, max_line=limits.max_line
    )
    if not hits:
        return
    found = sum(1 for hit in hits if hit.match)
    report.files.append((display, hits))
    report.matches += found
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
) -> GrepReport:
    """Search the files below ``path`` (or the file ``path``) that ``where`` selects, in path order.

    ``required``: bytes every matching file contains (a case-sensitive literal), tested before the pattern.
    """
    report = GrepReport()
    try:
        entries = walk(fs, path, where, limits=walk_limits, check=check)
        first = next(entries, None)
    except NotADirectory:
        with fs._open(path, READ_NAMED) as handle:
            st = handle.fstat()
            check_file(st, fs.hardlinks, writing=False)
            content = _read_all(handle.fd, st.st_size, limits.max_file_size)
            display = str(handle.path)
        if content is None:
            report.skipped += 1
        else:
            _search_one(content, display, pattern, files_only, limits, report, required)
        return report
    if first is None:
        return report
    try:
        for item in itertools.chain((first,), entries):
            if item.is_dir:
                continue
            if not item.entry.is_file(follow_symlinks=False):
                if item.entry.is_symlink():
                    report.skipped += 1
                continue
            opened = open_found(fs, item)
            if opened is None:
                report.skipped += 1
                continue
            fd, st = opened
            data: bytes | None = None
            try:
                if st.st_size > limits.max_file_size:
                    report.skipped += 1
                    continue
                data = _read_all(fd, st.st_size, limits.max_file_size)
            except (OSError, RootsError):
                data = None
            finally:
                os.close(fd)
            if data is None:
                report.skipped += 1
                continue
            _search_one(data, item.display, pattern, files_only, limits, report, required)
            if report.truncated or (files_only and len(report.files) >= max_files):
                report.truncated = True
                return report
    finally:
        entries.close()
    return report
