"""Grep: one per-file scanner (:class:`LineScanner`) for ``RootedFS.grep`` (single file and tree) and the agent
``grep`` tool (:mod:`rootbound.search.agent_grep`).

Why one: twins drift (a literal-needle fast path once existed only for single files). The scanner reads a file it
is handed as an fd opened beneath the root (size limit, bounded read), sniffs binary content, tests a required
literal at memchr speed before any line work, and splits matching lines (with context lines as an option), up to a
cap. What each caller does with the lines (``GrepMatch`` records, or agent hits with per-file caps) stays its own.
A pattern is searched a window of whole lines at a time with the caller's ``check`` between windows, so a
deadline or a cancellation stops even a slow pattern promptly (issue 16 #1, #3; see :class:`LineScanner`).
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol, TypeAlias, TypedDict

from rootbound.confine.boundary import Handle
from rootbound.confine.fd_access import READ_FLAGS as READ
from rootbound.confine.regular_files import HardlinkPolicy, check_file, read_rest
from rootbound.core.errors import InvalidPattern, PatternTooSlow, RootsError, TooLarge
from rootbound.search.glob_match import MAX_PATTERN_LENGTH, name_matcher
from rootbound.search.tree_walk import DEFAULT_MAX_DEPTH, DEFAULT_MAX_ENTRIES, WalkHooks, scan

__all__ = [
    "BINARY_SNIFF",
    "DEFAULT_GREP_FILE_SIZE",
    "DEFAULT_MAX_LINE",
    "DEFAULT_MAX_MATCHES",
    "SNIFF_FIRST",
    "Grep",
    "GrepMatch",
    "GrepOptions",
    "GrepResult",
    "GrepSettings",
    "LineScanner",
    "Span",
]

DEFAULT_MAX_MATCHES: Final = 1_000
DEFAULT_GREP_FILE_SIZE: Final = 4 * 1024 * 1024
DEFAULT_MAX_LINE: Final = 1_000


class GrepOptions(TypedDict, total=False):
    """:meth:`RootedFS.grep`'s keyword arguments, each optional (the defaults are :class:`GrepSettings`')."""

    regex: bool
    ignore_case: bool
    include: str | None
    files_only: bool
    binary: bool
    max_matches: int
    max_file_size: int
    max_line_length: int
    max_entries: int
    max_depth: int
    check: Callable[[int], None] | None


@dataclass(frozen=True)
class GrepSettings:
    """One :meth:`RootedFS.grep`, its arguments taken once at the call: what :class:`Grep` and its walk read."""

    pattern: object
    regex: bool = False
    ignore_case: bool = False
    include: str | None = None
    files_only: bool = False
    binary: bool = False
    max_matches: int = DEFAULT_MAX_MATCHES
    max_file_size: int = DEFAULT_GREP_FILE_SIZE
    max_line_length: int = DEFAULT_MAX_LINE
    max_entries: int = DEFAULT_MAX_ENTRIES
    max_depth: int = DEFAULT_MAX_DEPTH
    check: Callable[[int], None] | None = None


BINARY_SNIFF: Final = 8192
"""A file with a NUL in its first this many bytes is binary (skipped unless asked for)."""
SNIFF_FIRST: Final = 32 * 1024
"""A file larger than this has its first :data:`BINARY_SNIFF` bytes read alone before it is read whole. Why: a
tree's binaries (shared objects, archives, images) are skipped on those bytes, and reading them whole copied 477 MB
for nothing of the 1.55 GB a grep of the bench tree read; a larger text file pays one more ``read``."""

Span: TypeAlias = tuple[int, int, int, bool, bool]
"""One line to show: ``(1-based number, start, end, matched, gap)``; ``matched`` is ``False`` for a context line,
``gap`` marks the first line of a group not adjacent to the previous one (only with context)."""


class _Search(Protocol):
    def search(self, text: bytes, pos: int = ..., endpos: int = ...) -> Any: ...


_PAST_DEADLINE: Final = (
    "the pattern is too slow on this input to finish within the per-call deadline: simplify it or narrow the path"
)


WINDOW_TIME: Final = 0.05
"""Seconds one search call should take: windows are sized from the engine's measured pace to about this."""
WINDOW_MIN: Final = 256
WINDOW_FIRST: Final = 1024
WINDOW_MAX: Final = 16 * 1024
"""The most input one search call covers for a large pattern. RE2's pace can drop by 10,000x within a file (its DFA
runs out of memory and it falls back to the NFA: ~15-80 KB/s on ``((a{1,10}){1,10}){1,10}x`` over runs of ``a``),
so this, not the pace of the previous window, bounds the worst window: well under a second at the slowest pace
measured."""
WINDOW_BUDGET: Final = 16 * 1024 * 1024
"""A pattern's largest window is this divided by its RE2 program size (instructions), between :data:`WINDOW_MAX`
and :data:`WINDOW_CEILING`. Why: the NFA RE2 falls back to visits at most every instruction per byte, and the
slowest pace measured was ~6 ns per byte and instruction (the pattern above: 2,224 instructions, 0.07 MB/s), so a
window of this size takes ~0.1 s at worst whatever the pattern; a common pattern (10-30 instructions) gets windows
of ~1 MiB, not 16 KiB, and the per-call cost of 16 KiB windows (a third of a regex scan's time) goes."""
WINDOW_CEILING: Final = 1024 * 1024
LONG_STEP_MAX: Final = 1.0
"""Seconds one search of a line longer than a window may be projected to take before the line is refused."""


class LineScanner:
    """One compiled pattern and how to scan a file for it.

    ``search``: a compiled pattern (RE2, or Python ``re``), or ``None`` when the pattern is the literal ``required``
    (then lines are found with ``bytes.find``, linear and memchr-fast). ``required``: bytes every matching file
    contains, tested first (most files do not match: one memchr-speed test instead of the line loop). ``binary``:
    scan files with a NUL in their first 8 KiB too (otherwise they are skipped).

    A pattern is searched in *windows* of whole lines, at most :data:`WINDOW_MAX` bytes each (one engine call
    each), and ``check(0)`` runs before every engine call, so a deadline or a cancellation stops the work within one
    window's time, never after a whole file. So a match cannot span a window boundary: patterns are for one line
    at a time, as in grep (:func:`safe_regex.compile_bytes` makes RE2 never match a newline, so its results
    do not depend on where windows fall). With RE2 the windows follow the engine's measured pace (about
    :data:`WINDOW_TIME` each); Python's ``re`` (which holds the GIL anyway) gets fixed windows, so its results are
    the same on every run. A line longer than a window cannot be cut: RE2 searches its prefixes of doubling length
    (a hit in a prefix is a hit of the line: RE2 reads the text around the searched range for ``^``, ``$`` and
    ``\\b``), and with a ``check`` the line is refused (:class:`PatternTooSlow`)
    when the next prefix is projected to take longer than :data:`LONG_STEP_MAX` or to end past ``deadline`` (a
    ``time.monotonic()`` value). Python's ``re`` searches such a line whole (it reads ``endpos`` as the end of the
    text, so a prefix could match falsely).
    """

    __slots__ = (
        "_adapt",
        "_max_window",
        "_pace",
        "_window",
        "binary",
        "check",
        "deadline",
        "max_file_size",
        "required",
        "search",
    )

    def __init__(
        self,
        *,
        search: _Search | None,
        required: bytes | None,
        binary: bool = False,
        max_file_size: int,
        check: Callable[[int], None] | None = None,
        deadline: float | None = None,
    ) -> None:
        if search is None and not isinstance(required, bytes):
            raise ValueError("a literal scan needs the literal")
        self.search, self.required, self.binary, self.max_file_size = search, required, binary, max_file_size
        self.check, self.deadline = check, deadline
        self._adapt = not isinstance(search, re.Pattern)  # RE2 reads the context; re takes endpos as the end
        self._window = WINDOW_FIRST if self._adapt else WINDOW_MAX
        self._max_window = largest_window(search)
        self._pace = 0.0  # bytes per second of the last timed search (0: none yet)

    def read(self, fd: int, size: int, skipped: Callable[[str], object] | None = None) -> bytes | None:
        """The content of the open file (``size`` from its fstat), or ``None`` to skip it: over the size limit (also
        if it grew past it), unreadable, or binary (a NUL in its first :data:`BINARY_SNIFF` bytes) unless
        ``binary``; ``skipped`` is told which (``too_large``, ``unreadable``, ``binary``), so an answer can say it.
        One ``read`` (one more for a text file over :data:`SNIFF_FIRST`, and only if the size changed since the
        fstat). Every grep reads through it."""
        if size > self.max_file_size:
            _skip(skipped, "too_large")
            return None
        try:
            if size > SNIFF_FIRST and not self.binary:
                if os.read(fd, BINARY_SNIFF).find(b"\x00") >= 0:
                    _skip(skipped, "binary")
                    return None
                data = os.pread(fd, size + 1, 0)
                if len(data) != size:
                    os.lseek(fd, len(data), os.SEEK_SET)  # read_rest goes on from the file offset
            else:
                data = os.read(fd, size + 1)
            if len(data) != size:  # it changed since fstat, or reports no size (/proc): read to EOF, bounded
                data = read_rest(fd, data, self.max_file_size)
        except TooLarge:  # grew past the limit since the fstat
            _skip(skipped, "too_large")
            return None
        except (OSError, RootsError):
            _skip(skipped, "unreadable")
            return None
        if not self.binary and data.find(b"\x00", 0, BINARY_SNIFF) >= 0:
            _skip(skipped, "binary")
            return None
        return data

    def file(
        self, fd: int, size: int, max_hits: int, context: int = 0, skipped: Callable[[str], object] | None = None
    ) -> tuple[bytes, list[Span], bool] | None:
        """Scan the open file (``size`` from its fstat): ``None`` to skip it (see :meth:`read`), else its content
        and :meth:`lines` (none when the required literal is absent, found at memchr speed: most files do not
        match)."""
        data = self.read(fd, size, skipped)
        if data is None:
            return None
        required = self.required
        if required is not None and required not in data:
            return data, [], False
        return (data, *self.lines(data, max_hits, context))

    def lines(self, data: bytes, max_hits: int, context: int = 0, first: int = 0) -> tuple[list[Span], bool]:
        """The matching lines of ``data`` (one per line, at most ``max_hits``) with ``context`` lines around each;
        the flag says whether more matching lines were left out. ``first``: no match lies on a line before the one
        holding this offset (a search of the file, or of files joined with it, found the first match, or the first
        occurrence of a literal every match holds, there), so the search starts on that line."""
        required = self.required
        spans: list[Span] = []
        literal = self.search is None
        size = len(data)
        pos = data.rfind(b"\n", 0, first) + 1 if first else 0
        counted, number, more = 0, 1, False
        while pos <= size:
            start = data.find(required, pos) if literal else self._find(data, pos)  # type: ignore[arg-type]
            if start < 0:
                break
            if len(spans) >= max_hits:
                more = True
                break
            line_start = data.rfind(b"\n", 0, start) + 1
            line_end = data.find(b"\n", start)
            if line_end < 0:
                line_end = size
            number += data.count(b"\n", counted, line_start)
            counted = line_start
            spans.append((number, line_start, line_end, True, False))
            pos = line_end + 1
        return (_with_context(data, spans, context) if context and spans else spans), more

    def known(
        self, data: bytes, found: list[tuple[int, int, int]], max_hits: int, context: int = 0
    ) -> tuple[list[Span], bool]:
        """What :meth:`lines` gives for ``data`` when an earlier search of the same content found every matching
        line in ``found`` (``(number, start, end)`` each, in order)."""
        spans: list[Span] = [(number, start, end, True, False) for number, start, end in found[:max_hits]]
        more = len(found) > max_hits
        return (_with_context(data, spans, context) if context and spans else spans), more

    def find(self, data: bytes, pos: int) -> int:
        """Where the first match of the pattern at or after the line start ``pos`` begins (-1: none), window by
        window (``check(0)`` before each); ``data`` may be several files joined by newlines (see
        :func:`~rootbound.search.safe_regex.line_local`)."""
        return self._find(data, pos)

    def _find(self, data: bytes, pos: int) -> int:
        """Where the first match at or after the line start ``pos`` begins (-1: none), window by window."""
        size = len(data)
        while True:
            end = pos + self._window
            if end >= size:
                end = size
            else:
                newline = data.rfind(b"\n", pos, end)
                if newline < 0:  # the line at pos is longer than a window
                    line_end = data.find(b"\n", end)
                    line_end = size if line_end < 0 else line_end
                    start = self._long_line(data, pos, line_end)
                    if start >= 0 or line_end >= size:
                        return start
                    pos = line_end + 1
                    continue
                end = newline  # the window ends at a line end; its newline is no window's
            start = self._timed(data, pos, end)
            if start >= 0 or end >= size:
                return start
            pos = end + 1

    def _long_line(self, data: bytes, pos: int, line_end: int) -> int:
        """A match in the line ``[pos, line_end)``, longer than a window: prefixes of doubling length (RE2), or
        the whole line at once (Python's ``re``)."""
        if not self._adapt:
            return self._timed(data, pos, line_end)
        length = self._window
        while True:
            stop = min(pos + length, line_end)
            start = self._timed(data, pos, stop, projected=True)
            if start >= 0 or stop >= line_end:
                return start
            length *= 2

    def _timed(self, data: bytes, pos: int, end: int, *, projected: bool = False) -> int:
        """One engine call over ``[pos, end)``, after ``check(0)``; its pace (bytes per CPU second of this thread)
        sizes the next window (RE2 only).
        ``projected``: first refuse it when the last pace says it would take too long (see the class)."""
        search = self.search
        assert search is not None
        check = self.check
        if check is not None:
            check(0)
            if projected and self._pace:
                seconds = (end - pos) / self._pace
                if self.deadline is not None and seconds > self.deadline - time.monotonic():
                    raise PatternTooSlow(message=_PAST_DEADLINE)
                if seconds > LONG_STEP_MAX:
                    raise PatternTooSlow()
        if not self._adapt:
            found = search.search(data, pos, end)
            return -1 if found is None else int(found.start())
        began = time.thread_time()  # this thread's CPU: a window preempted on a busy machine is not a slow pattern
        found = search.search(data, pos, end)
        took = time.thread_time() - began
        if end > pos:
            pace = (end - pos) / max(took, 1e-7)
            self._pace = pace
            self._window = max(WINDOW_MIN, min(int(pace * WINDOW_TIME), 2 * self._window, self._max_window))
        return -1 if found is None else int(found.start())


def largest_window(search: object) -> int:
    """The most input one search call of ``search`` may cover: :data:`WINDOW_BUDGET` over its RE2 program size
    (:data:`WINDOW_MAX` for Python's ``re`` or when the size is unknown)."""
    size = getattr(search, "programsize", None)
    if isinstance(search, re.Pattern) or not isinstance(size, int) or size <= 0:
        return WINDOW_MAX
    return max(WINDOW_MAX, min(WINDOW_BUDGET // size, WINDOW_CEILING))


def _with_context(data: bytes, spans: list[Span], context: int) -> list[Span]:
    """Matching lines with up to ``context`` lines before and after each, groups merged, each line once."""
    size = len(data)
    out: list[Span] = []
    shown = 0  # the last line number already output
    for index, (number, line_start, line_end, _, _) in enumerate(spans):
        before: list[tuple[int, int, int]] = []
        cursor = line_start
        for back in range(1, context + 1):
            if number - back <= shown or cursor == 0:
                break
            prev_start = data.rfind(b"\n", 0, cursor - 1) + 1
            before.append((number - back, prev_start, cursor - 1))
            cursor = prev_start
        before.reverse()
        first = before[0][0] if before else number
        gap = bool(out) and first > shown + 1
        for i, (n, s, e) in enumerate(before):
            out.append((n, s, e, False, gap and i == 0))
        out.append((number, line_start, line_end, True, gap and not before))
        shown = number
        limit = spans[index + 1][0] - 1 if index + 1 < len(spans) else number + context
        cursor = line_end + 1
        while shown < min(number + context, limit) and cursor < size:
            next_end = data.find(b"\n", cursor)
            next_end = size if next_end < 0 else next_end
            shown += 1
            out.append((shown, cursor, next_end, False, False))
            cursor = next_end + 1
    return out


@dataclass(frozen=True)
class GrepMatch:
    """One matching line: its 1-based number and its text (decoded with replacement, cut to a maximum length)."""

    path: Path
    line_number: int
    line: str


@dataclass(frozen=True)
class GrepResult:
    """The matches of :meth:`RootedFS.grep`; ``truncated`` when it stopped at ``max_matches`` (more may exist)."""

    matches: tuple[GrepMatch, ...]
    truncated: bool
    files_searched: int
    files_skipped: int

    @property
    def files(self) -> tuple[Path, ...]:
        """Paths with at least one match, in the order found."""
        return tuple(dict.fromkeys(match.path for match in self.matches))


class Grep:
    """One ``RootedFS.grep``: the scanner, the limits, and the matches and counters so far."""

    __slots__ = (
        "check",
        "files_only",
        "full",
        "hardlinks",
        "matches",
        "max_line",
        "max_matches",
        "name_filter",
        "scanner",
        "searched",
        "skipped",
    )

    def __init__(self, settings: GrepSettings, hardlinks: HardlinkPolicy) -> None:
        pattern, regex, ignore_case, check = settings.pattern, settings.regex, settings.ignore_case, settings.check
        include, files_only, binary = settings.include, settings.files_only, settings.binary
        max_matches, max_file_size, max_line = settings.max_matches, settings.max_file_size, settings.max_line_length
        if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN_LENGTH:
            raise InvalidPattern()
        needle = pattern.encode("utf-8", "surrogateescape")
        search: re.Pattern[bytes] | None = None
        if regex or ignore_case:
            try:
                search = re.compile(
                    needle if regex else re.escape(needle),
                    re.MULTILINE | (re.IGNORECASE if ignore_case else 0),
                )
            except re.error:
                raise InvalidPattern() from None
        self.scanner = LineScanner(
            search=search, required=None if search else needle, binary=binary, max_file_size=max_file_size, check=check
        )
        self.check = check
        self.name_filter: Callable[[str], object] | None = None if include is None else name_matcher(include)
        self.files_only = files_only
        self.hardlinks: HardlinkPolicy = hardlinks
        self.max_matches = max_matches
        self.max_line = max_line
        self.matches: list[GrepMatch] = []
        self.searched = 0
        self.skipped = 0
        self.full = max_matches <= 0

    def result(self) -> GrepResult:
        return GrepResult(tuple(self.matches), self.full, self.searched, self.skipped)

    def tree(self, handle: Handle, fd: int, *, max_entries: int, max_depth: int) -> None:
        """Every regular file below the directory ``fd`` (owned), each opened beneath it with ``O_NOFOLLOW``."""
        base = handle.prefix
        name_filter = self.name_filter
        open_entry, close, file = handle.entry_opener(), os.close, self.file
        entries = scan(handle, fd, max_entries=max_entries, max_depth=max_depth, hooks=WalkHooks(check=self.check))
        try:
            for prefix, entry, dir_fd, _ in entries:
                if not entry.is_file(follow_symlinks=False):
                    if entry.is_symlink():
                        self.skipped += 1
                    continue
                name = entry.name
                if name_filter is not None and not name_filter(name):
                    continue
                opened = open_entry(dir_fd, name, entry.inode(), READ)
                if opened is None:
                    self.skipped += 1
                    continue
                try:
                    file(opened[0], opened[1], base, prefix + name)
                finally:
                    close(opened[0])
                if self.full:
                    return
        finally:
            entries.close()

    def file(self, fd: int, st: os.stat_result, base: str, rest: str = "") -> None:
        """One file through the scanner, after the type and hard-link policy. Its display path is ``base + rest``
        (joined only when a line matches)."""
        if st.st_nlink != 1 or not stat.S_ISREG(st.st_mode):
            try:
                check_file(st, self.hardlinks, writing=False)
            except RootsError:
                self.skipped += 1
                return
        room = 1 if self.files_only else self.max_matches - len(self.matches)
        scanned = self.scanner.file(fd, st.st_size, room)
        if scanned is None:
            self.skipped += 1
            return
        self.searched += 1
        data, spans, _ = scanned
        if not spans:
            return
        path = Path(base + rest)
        max_line = self.max_line
        for number, start, end, _, _ in spans:
            text = data[start : min(end, start + 4 * max_line)].decode("utf-8", "replace")
            self.matches.append(GrepMatch(path, number, text[:max_line]))
        self.full = len(self.matches) >= self.max_matches


def _skip(skipped: Callable[[str], object] | None, reason: str) -> None:
    if skipped is not None:
        skipped(reason)
