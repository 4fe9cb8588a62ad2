"""Grep: one scanner for a single file and for every file of a tree.

Why one: the two paths had drifted (a literal-needle fast path existed only for single files). Now a tree grep and
a single-file grep both call :meth:`Grep.file` with an fd they opened beneath the root and its fstat; the scanner
applies the type and hard-link policy, the size limit, the binary sniff, the literal fast path, and records lines.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ._files import HardlinkPolicy, check_file, read_rest
from ._glob import MAX_PATTERN_LENGTH, name_matcher
from ._resolve import READ
from ._tree import scan
from .boundary import Handle
from .errors import InvalidPattern, RootsError

__all__ = ["DEFAULT_GREP_FILE_SIZE", "DEFAULT_MAX_LINE", "DEFAULT_MAX_MATCHES", "Grep", "GrepMatch", "GrepResult"]

DEFAULT_MAX_MATCHES: Final = 1_000
DEFAULT_GREP_FILE_SIZE: Final = 4 * 1024 * 1024
DEFAULT_MAX_LINE: Final = 1_000
_BINARY_SNIFF: Final = 8192


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
    """One grep: the compiled pattern, the limits, and the matches and counters so far."""

    __slots__ = (
        "binary",
        "files_only",
        "full",
        "hardlinks",
        "matches",
        "max_file_size",
        "max_line",
        "max_matches",
        "name_filter",
        "needle",
        "search",
        "searched",
        "skipped",
    )

    def __init__(
        self,
        pattern: object,
        *,
        regex: bool,
        ignore_case: bool,
        include: str | None,
        files_only: bool,
        binary: bool,
        hardlinks: HardlinkPolicy,
        max_matches: int,
        max_file_size: int,
        max_line: int,
    ) -> None:
        if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN_LENGTH:
            raise InvalidPattern()
        self.needle = pattern.encode("utf-8", "surrogateescape")
        self.search: re.Pattern[bytes] | None = None
        if regex or ignore_case:
            try:
                self.search = re.compile(
                    self.needle if regex else re.escape(self.needle),
                    re.MULTILINE | (re.IGNORECASE if ignore_case else 0),
                )
            except re.error:
                raise InvalidPattern() from None
        self.name_filter: Callable[[str], object] | None = None if include is None else name_matcher(include)
        self.files_only = files_only
        self.binary = binary
        self.hardlinks: HardlinkPolicy = hardlinks
        self.max_matches = max_matches
        self.max_file_size = max_file_size
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
        for prefix, entry, dir_fd, _ in scan(handle, fd, max_entries=max_entries, max_depth=max_depth):
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

    def file(self, fd: int, st: os.stat_result, base: str, rest: str = "") -> None:
        """The one per-file scanner: policy, size, read, binary sniff, literal fast path, matching lines. The file's
        display path is ``base + rest`` (joined only when a line matches)."""
        if st.st_nlink != 1 or not stat.S_ISREG(st.st_mode):
            try:
                check_file(st, self.hardlinks, writing=False)
            except RootsError:
                self.skipped += 1
                return
        size = st.st_size
        if size > self.max_file_size:
            self.skipped += 1
            return
        try:
            data = os.read(fd, size + 1)
            if len(data) != size:  # it changed since fstat, or reports no size (/proc): read to EOF, bounded
                data = read_rest(fd, data, self.max_file_size)
        except (OSError, RootsError):
            self.skipped += 1
            return
        if not self.binary and data.find(b"\x00", 0, _BINARY_SNIFF) >= 0:
            self.skipped += 1
            return
        self.searched += 1
        if self.search is None and self.needle not in data:
            return  # most files do not match: one memchr-speed test instead of the line loop
        self._lines(data, base + rest)

    def _lines(self, data: bytes, display: str) -> None:
        """Record matching lines of one file (one record per line, like grep)."""
        path: Path | None = None  # built on the first match only
        end = len(data)
        pos = 0
        line_number = 1
        counted = 0
        while not self.full:
            if self.search is None:
                start = data.find(self.needle, pos)
                if start < 0:
                    return
            else:
                found = self.search.search(data, pos)
                if found is None:
                    return
                start = found.start()
            line_start = data.rfind(b"\n", 0, start) + 1
            line_end = data.find(b"\n", start)
            if line_end < 0:
                line_end = end
            line_number += data.count(b"\n", counted, line_start)
            counted = line_start
            text = data[line_start : min(line_end, line_start + 4 * self.max_line)].decode("utf-8", "replace")
            if path is None:
                path = Path(display)
            self.matches.append(GrepMatch(path, line_number, text[: self.max_line]))
            self.full = len(self.matches) >= self.max_matches
            if self.files_only:
                return
            pos = line_end + 1
            if pos > end:
                return
