"""A recorded walk (:class:`View`) and what one query opens in it (:class:`Plan`): the index's name side.

Why a walk is recorded at all: the index holds file contents' trigrams, but what a session's grep or search_files
sees (its start, its ignore rules, the walk's caps and order) is the walk's to say. So the first query of a
(start, filter) walks once, through the session's boundary, and keeps the result until the kernel reports a change
below or above its start (:meth:`~rootbound.confine.search.index.tree_index.TreeIndex.plan` drops it then). The
view is immutable while it lives, so what is derived from it (the per-kind running totals, the globs' matches) is
kept beside it and dies with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from rootbound.confine.rooted_fs import RootedFS
from rootbound.confine.search.ignore_rules import PathFilter
from rootbound.confine.search.ignore_walk import WalkLimits, walking
from rootbound.confine.search.index.pattern_memo import PatternMemo

if TYPE_CHECKING:  # numpy is imported by the index's first build (see tree_index), never at start
    import numpy as np
    import numpy.typing as npt

__all__ = ["ALWAYS", "BINARY", "TEXT", "TOO_LARGE", "UNREADABLE", "Counts", "Plan", "View", "count_view", "walk_view"]

TEXT, BINARY, TOO_LARGE, UNREADABLE, ALWAYS = "t", "b", "L", "u", "h"
"""What a file was when read: searched text, skipped as binary, over the size cap, unreadable; ``ALWAYS``: more
than one link, read by every query."""
MAX_GLOBS: Final = 16
"""Globs whose matches one view keeps (the oldest is dropped)."""


@dataclass
class View:
    """One walk's result (a start directory, a filter), kept until a change under it: the entries it yielded in
    order, with the inode of each directory (to open candidates beneath the session's start), and the files."""

    start: str
    """The start, relative to the indexed directory (``""``: itself)."""
    entries: list[tuple[str, str, bool]] = field(default_factory=list)
    """``(path below the start, name, is_dir)`` of every entry the walk yielded, in walk order."""
    dirs: dict[str, int] = field(default_factory=dict)
    files: list[tuple[str, str, int, bool]] = field(default_factory=list)
    """``(path below the start, path in the index, inode, is a symlink)`` of the files and links grep sees, in
    order."""
    not_entered: int = 0
    counted: Counts | None = None
    globs: dict[object, list[int]] = field(default_factory=dict)
    """The positions in ``entries`` a glob matched (key: the glob and how it is matched), for search_files."""


@dataclass
class Counts:
    """A view's files by what the index read them as, so a query touches only the files it must open: ``at`` maps a
    file's path in the index to its position, ``must`` are the positions every query opens (more than one link, or
    never read), ``before[kind][i]`` counts the files of ``kind`` at positions below ``i``, ``position`` maps an
    indexed file's number to its position (-1: not in this view) and ``number`` a position to the file's number
    (-1: not an indexed text file)."""

    version: int
    at: dict[str, int]
    must: list[int]
    before: dict[str, list[int]]
    position: npt.NDArray[np.int32]
    number: npt.NDArray[np.int32]


def count_view(view: View, kinds: dict[str, str], numbers: dict[str, int], version: int) -> Counts:
    """:class:`Counts` of ``view`` for the index's ``kinds`` and file ``numbers`` (recomputed when the kinds'
    version changes)."""
    import numpy as np

    at: dict[str, int] = {}
    must: list[int] = []
    columns: dict[str, list[int]] = {kind: [0] for kind in (TEXT, BINARY, TOO_LARGE, UNREADABLE, "l")}
    running = dict.fromkeys(columns, 0)
    number = np.full(len(view.files), -1, np.int32)
    for here, (_, indexed, _, link) in enumerate(view.files):
        at[indexed] = here
        kind = "l" if link else kinds.get(indexed, ALWAYS)
        if kind == ALWAYS:
            must.append(here)
        else:
            running[kind] += 1
            if kind == TEXT:
                number[here] = numbers.get(indexed, -1)
        for name, column in columns.items():
            column.append(running[name])
    position = np.full(len(numbers), -1, np.int32)
    listed = np.flatnonzero(number >= 0)
    position[number[listed]] = listed
    return Counts(version, at, must, columns, position, number)


@dataclass
class Plan:
    """What one query searches: the view, the indexed files the pattern's literals leave (their numbers), the files
    changed since the index read them (their paths in the index), and what earlier queries of the same pattern
    ruled out."""

    view: View
    candidates: npt.NDArray[np.int64] | None
    """``None``: no literal to narrow by (every indexed text file is a candidate)."""
    dirty: frozenset[str]
    memo: PatternMemo | None = None
    """What earlier queries of this pattern learned about the files unchanged since indexing."""
    locked: Callable[[Callable[[], None]], None] | None = None
    """Runs an update of ``memo`` (what this query learned) under the index's lock."""


def walk_view(
    fs: RootedFS,
    start: object,
    start_rel: str,
    where: PathFilter,
    walk_limits: WalkLimits,
    check: Callable[[int], None] | None,
) -> View:
    """The one tree walk, from the session's start, recorded (raises what the walk raises: the caller scans)."""
    view = View(start_rel)
    lead = start_rel + "/" if start_rel else ""

    def not_entered(path: str) -> None:
        view.not_entered += 1

    with walking(fs, start, where, limits=walk_limits, check=check, not_entered=not_entered) as (_, entries):
        for prefix, entry, _, _ in entries:
            name = entry.name
            rel = prefix + name
            if entry.is_dir(follow_symlinks=False):
                view.entries.append((rel, name, True))
                view.dirs[rel] = entry.inode()
                continue
            view.entries.append((rel, name, False))
            if entry.is_file(follow_symlinks=False):
                view.files.append((rel, lead + rel, entry.inode(), False))
            elif entry.is_symlink():
                view.files.append((rel, lead + rel, 0, True))
    return view
