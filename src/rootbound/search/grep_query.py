"""One agent grep as a frozen object: what to find, where, within what limits and by when.

Why: a grep crossed five functions in four files as 13-15 loose parameters, each passing them on by name; a
parameter added at the top had to be threaded through every one. The query is built once, where the call's
arguments are parsed, and travels down whole (:func:`~rootbound.search.agent_grep.grep_tree`,
:func:`~rootbound.search.chunk_scan.grep_shared`, :func:`~rootbound.search.index.indexed_search.grep_with_index`
and the scan helper's job); a caller that searches several starts narrows its caps with :meth:`GrepQuery.narrowed`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from rootbound.search.ignore_rules import PathFilter
from rootbound.search.safe_regex import BytesPattern

__all__ = ["GrepLimits", "GrepQuery", "NamesQuery"]


@dataclass(frozen=True)
class GrepLimits:
    """Caps for one agent grep: total matches, matches per file, file size, line length, context lines."""

    max_matches: int = 200
    max_per_file: int = 20
    max_file_size: int = 4 * 1024 * 1024
    max_line: int = 500
    context: int = 0


@dataclass(frozen=True)
class GrepQuery:
    """An agent grep below one start.

    ``pattern``: the compiled pattern (:func:`~rootbound.search.safe_regex.compile_bytes`); ``source``: the pattern
    as given (``pattern, regex, ignore_case``), which the scan helper compiles again and the index reads literals
    from; ``where`` selects the files and ``where_key`` names that selection for the index's walk cache;
    ``required``: bytes every matching file contains (a case-sensitive literal), tested before the pattern;
    ``check(n)`` runs per walked entries and (``n=0``) between search windows, and may raise to stop the search;
    ``deadline`` (``time.monotonic()``) lets the scanner refuse a long line it could not finish in time;
    ``line_local``: the pattern's matches depend on each line alone, so files are searched joined in batches.
    """

    pattern: BytesPattern
    where: PathFilter = field(default_factory=PathFilter)
    source: tuple[str, bool, bool] | None = None
    where_key: tuple[object, ...] = ()
    limits: GrepLimits = GrepLimits()
    files_only: bool = False
    max_files: int = 10_000
    check: Callable[[int], None] | None = None
    required: bytes | None = None
    deadline: float | None = None
    line_local: bool = False

    def narrowed(self, matches_left: int, files_left: int) -> GrepQuery:
        """The same query with what is left of its caps, for the next start of a search over several."""
        limits = dataclasses.replace(self.limits, max_matches=matches_left)
        return dataclasses.replace(self, limits=limits, max_files=files_left)


@dataclass(frozen=True)
class NamesQuery:
    """A ``search_files`` below one start, answered from the index: the filter and its key, the name matcher and
    its key, how many paths at most, and the budget's check."""

    where: PathFilter
    where_key: tuple[object, ...]
    matches: Callable[[str, str, bool], bool]
    key: object
    cap: int
    check: Callable[[int], None] | None = None
