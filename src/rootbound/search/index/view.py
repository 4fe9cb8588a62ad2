"""A recorded walk (:class:`View`) and what one query opens in it (:class:`Plan`): the index's name side.

Why a walk is recorded at all: the index holds file contents' trigrams, but what a session's grep or search_files
sees (its start, its ignore rules, the walk's caps and order) is the walk's to say. So the first query of a
(start, filter) walks once, through the session's boundary, and keeps the result. When the kernel reports that a
directory below the start lists something else, the next query walks that directory again into a new view
(:func:`patch_view`); a change above the start (an ignore file there, the start moved) drops the view
(:meth:`~rootbound.search.index.tree_index.TreeIndex.plan`). A view is immutable while it lives (a query may
be reading it), so what is derived from it (the per-kind running totals, the globs' matches) is kept beside it and
dies with it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from rootbound.confine.intents import LIST
from rootbound.confine.rooted_files import RootedFiles
from rootbound.core.errors import LimitExceeded, RootsError
from rootbound.search.ignore_rules import PathFilter
from rootbound.search.ignore_walk import WalkLimits, walking
from rootbound.search.index.pattern_memo import PatternMemo

if TYPE_CHECKING:  # numpy is imported by the index's first build (see tree_index), never at start
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "ALWAYS",
    "BINARY",
    "TEXT",
    "TOO_LARGE",
    "UNREADABLE",
    "Counts",
    "Plan",
    "View",
    "below",
    "count_view",
    "patch_view",
    "walk_view",
]

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
    unentered: set[str] = field(default_factory=set)
    """Directories the walk should have entered and did not (unreadable, another file system, changed while
    walked), below the start."""
    counted: Counts | None = None
    globs: dict[object, list[int]] = field(default_factory=dict)
    """The positions in ``entries`` a glob matched (key: the glob and how it is matched), for search_files."""
    listed: int = 0
    """Entries the walk listed, shown or not (what its entry cap counts); after :func:`patch_view`, an upper bound."""
    stale: frozenset[str] = frozenset()
    """Directories below the start (``""``: the start) in which the kernel reported a change that can alter what is
    below them (a subdirectory, an ignore file): walked again by :func:`patch_view` before the view answers again."""
    relisted: frozenset[str] = frozenset()
    """Directories below the start in which only files changed (created, removed, renamed): listed again."""

    @property
    def not_entered(self) -> int:
        return len(self.unentered)


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


def below(rel: str, top: str) -> bool:
    """Whether ``rel`` is ``top`` or below it (both paths relative to the same directory, ``""`` that directory)."""
    return not top or rel == top or rel.startswith(top + "/")


_COUNTED: Final = (TEXT, BINARY, TOO_LARGE, UNREADABLE, "l")
"""The kinds :attr:`Counts.before` counts (``l``: a symlink); their codes are their places here, ``ALWAYS`` next."""


def count_view(view: View, kinds: Mapping[str, str], numbers: Mapping[str, int], total: int, version: int) -> Counts:
    """:class:`Counts` of ``view`` for the index's ``kinds`` and file ``numbers`` (recomputed when the kinds'
    version changes, and for each new view): one pass in Python for each file's kind, the running counts by numpy
    (a per-file loop of appends was most of a grep right after a file was created in a large tree)."""
    import numpy as np

    files = view.files
    code = {kind: place for place, kind in enumerate((*_COUNTED, ALWAYS))}
    link, always = code["l"], code[ALWAYS]
    codes = np.fromiter(
        (link if is_link else code[kinds.get(indexed, ALWAYS)] for _, indexed, _, is_link in files), np.int8, len(files)
    )
    before: dict[str, list[int]] = {}
    for kind in _COUNTED:
        column = np.zeros(len(files) + 1, np.int64)
        np.cumsum(codes == code[kind], out=column[1:])
        before[kind] = column.tolist()  # a query reads two items a run of files: a list's are 10x quicker to get
    number = np.full(len(files), -1, np.int32)
    text = np.flatnonzero(codes == code[TEXT])
    number[text] = [numbers.get(files[here][1], -1) for here in text.tolist()]
    position = np.full(total, -1, np.int32)  # numbers up to ``total``: a saved index's may leave some unused
    listed = np.flatnonzero(number >= 0)
    position[number[listed]] = listed
    at = {indexed: here for here, (_, indexed, _, _) in enumerate(files)}
    return Counts(version, at, np.flatnonzero(codes == always).tolist(), before, position, number)


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
    fs: RootedFiles,
    start: object,
    start_rel: str,
    where: PathFilter,
    walk_limits: WalkLimits,
    check: Callable[[int], None] | None,
    vouch: Callable[[str, int, str], None] | None = None,
    on_dir: Callable[[str, int, str], None] | None = None,
) -> View:
    """The one tree walk, from the session's start, recorded (raises what the walk raises: the caller scans).
    ``vouch``: called with each regular file's path in the index, the fd of its directory and its name, as listed
    (a query's own check of files a saved index's take up has not reached); ``on_dir`` the same for each
    directory, before the walk lists it (the take up's child watches it there: ``checker.py``)."""
    view = View(start_rel)
    lead = start_rel + "/" if start_rel else ""
    _record(view, fs, start, ("", lead), where, walk_limits, check, (vouch, on_dir))
    return view


def _record(
    view: View,
    fs: RootedFiles,
    start: object,
    paths: tuple[str, str],
    where: PathFilter,
    walk_limits: WalkLimits,
    check: Callable[[int], None] | None,
    seen: tuple[Callable[[str, int, str], None] | None, Callable[[str, int, str], None] | None] = (None, None),
) -> None:
    """Walk ``start`` and append what it yields to ``view``'s lists, its paths prefixed with ``under`` (where it is
    below the view's start) and their index paths with ``lead`` (``paths``: the two); ``seen``: what
    :func:`walk_view` is told of each file and each directory (``vouch``, ``on_dir``)."""
    under, lead = paths
    vouch, on_dir = seen

    def not_entered(path: str) -> None:
        view.unentered.add(under + path)

    def progress(steps: int) -> None:
        view.listed += steps
        if check is not None:
            check(steps)

    with walking(fs, start, where, limits=walk_limits, check=progress, not_entered=not_entered) as (_, entries):
        for prefix, entry, dir_fd, _ in entries:
            name = entry.name
            rel = under + prefix + name
            if entry.is_dir(follow_symlinks=False):
                view.entries.append((rel, name, True))
                view.dirs[rel] = entry.inode()
                if on_dir is not None:
                    on_dir(lead + rel, dir_fd, name)
                continue
            view.entries.append((rel, name, False))
            if entry.is_file(follow_symlinks=False):
                view.files.append((rel, lead + rel, entry.inode(), False))
                if vouch is not None:
                    vouch(lead + rel, dir_fd, name)
            elif entry.is_symlink():
                view.files.append((rel, lead + rel, 0, True))


def patch_view(
    view: View,
    fs: RootedFiles,
    start: object,
    where: PathFilter,
    walk_limits: WalkLimits,
    check: Callable[[int], None] | None,
) -> View | None:
    """``view`` with the directories that changed listed again, as a new view (a query may still be reading the old
    one), or ``None`` when it must be walked again whole. Why: a file created or removed costs a listing of the
    directory it is in, not a walk of the tree.

    A :attr:`~View.relisted` directory is listed alone and its subdirectories' entries are kept (only its files
    changed; a subdirectory new, gone or replaced there has it walked whole instead); a :attr:`~View.stale` one is
    walked whole, its ignore files read again on the way (:func:`~rootbound.search.ignore_walk.walking`
    applies those above a walk's start). A directory the view did not walk into (ignored, past the depth cap, below
    one not entered) changes nothing it holds; one below a stale directory is walked with it. ``None``: the start
    is stale, include or exclude globs (they are relative to the walk's start, which a walk from below would read
    otherwise), or the entry cap may be passed. Raises what the walk raises."""
    stale, relisted = view.stale, view.relisted
    if "" in stale or not where.plain_files:
        return None

    def covered(rel: str) -> bool:
        return any(rel.startswith(up + "/") for up in stale)

    kinds = {rel: True for rel in stale if rel in view.dirs and not covered(rel)}
    kinds.update(
        (rel, False) for rel in relisted if (not rel or rel in view.dirs) and rel not in stale and not covered(rel)
    )
    if not kinds:  # every change was where the view never walked (an ignored build folder): what it holds stands
        return dataclasses.replace(view, stale=frozenset(), relisted=frozenset())
    entries, files, dirs, unentered, listed = view.entries, view.files, view.dirs, view.unentered, view.listed
    tops: list[tuple[int, int, str]] = [(0, 0, "")] if "" in kinds else []  # where its block starts (entries, files)
    counted = 0  # files and links are the entries' files and links, in order: one pass finds both positions
    for at, (rel, _, is_dir) in enumerate(entries):
        if not is_dir:
            if counted < len(files) and files[counted][0] == rel:
                counted += 1
        elif rel in kinds:
            tops.append((at + 1, counted, rel))
    lead = view.start + "/" if view.start else ""
    with fs.boundary.open(start, LIST, resolver=fs.resolver) as handle:
        base = handle.prefix
    # From the last, so the positions of those before stay true; one inside another is done first, then the outer
    # one lists its own entries around the inner one's new block.
    for at, first, top in reversed(tops):
        depth = top.count("/") + 1 if top else 0
        if depth >= walk_limits.max_depth:
            continue  # listed, never entered: nothing below it is in the view
        prefix = top + "/" if top else ""
        end, last = at, first
        while end < len(entries) and entries[end][0].startswith(prefix):
            end += 1
        while last < len(files) and files[last][0].startswith(prefix):
            last += 1
        room = walk_limits.max_entries - listed  # as if the directory had listed nothing before: an upper bound
        try:
            if not kinds[top]:
                block = View(view.start)
                _record(block, fs, base + top if top else start, (prefix, lead), where, WalkLimits(1, room), check)
                levels = walk_limits.max_depth - depth - 1  # below a subdirectory of this one
                limits = WalkLimits(levels, room - block.listed)
                walk_child = functools.partial(_walk_child, view.start, fs, base, lead, where, limits, check)
                new, new_files, gone, walked = _around_subdirectories(
                    block, entries[at:end], files[first:last], dirs, walk_child
                )
                listed += block.listed + sum(child.listed for _, child in walked)
                if listed > walk_limits.max_entries:
                    return None
                entries = entries[:at] + new + entries[end:]
                files = files[:first] + new_files + files[last:]
                redone = gone + [rel for rel, _ in walked]
                if redone:
                    dirs = {rel: inode for rel, inode in dirs.items() if not any(below(rel, up) for up in redone)}
                    unentered = {rel for rel in unentered if not any(below(rel, up) for up in redone)}
                    for rel, child in walked:
                        dirs = dirs | {rel: block.dirs[rel]} | child.dirs
                        unentered = unentered | child.unentered
                continue
            limits = WalkLimits(walk_limits.max_depth - depth, room)
            block = _walk_child(view.start, fs, base, lead, where, limits, check, top)
        except LimitExceeded:
            return None  # perhaps over the cap: a walk of the whole tree says
        except (RootsError, OSError):  # gone, or no longer a directory (its own event, read before its parent's)
            if kinds[top] and kinds.get(top.rpartition("/")[0]) is False:
                # Its parent is listed again next: without it if it is gone from there, else walked afresh (not
                # known as the directory it was, its recorded block is not kept).
                dirs = {rel: inode for rel, inode in dirs.items() if rel != top}
                continue
            return None
        listed += block.listed
        entries = entries[:at] + block.entries + entries[end:]
        files = files[:first] + block.files + files[last:]
        dirs = {rel: inode for rel, inode in dirs.items() if not rel.startswith(prefix)} | block.dirs
        unentered = {rel for rel in unentered if not rel.startswith(prefix)} | block.unentered
    return View(view.start, entries, dirs, files, unentered, listed=listed)


def _walk_child(
    view_start: str,
    fs: RootedFiles,
    base: str,
    lead: str,
    where: PathFilter,
    limits: WalkLimits,
    check: Callable[[int], None] | None,
    rel: str,
) -> View:
    """The entries below the directory ``rel`` of a view's start, as a view's lists (none when ``limits`` leaves no
    level: the whole walk would not enter it)."""
    child = View(view_start)
    if limits.max_depth > 0:
        _record(child, fs, base + rel, (rel + "/", lead), where, limits, check)
    return child


def _around_subdirectories(
    listing: View,
    old: list[tuple[str, str, bool]],
    old_files: list[tuple[str, str, int, bool]],
    dirs: dict[str, int],
    walk_child: Callable[[str], View],
) -> tuple[list[tuple[str, str, bool]], list[tuple[str, str, int, bool]], list[str], list[tuple[str, View]]]:
    """A directory's block of entries and files from ``listing`` (its own entries, listed again): each subdirectory
    it had before (the same inode) with its entries and files taken from the ``old`` block, each new or replaced one
    walked (``walk_child``). Also the subdirectories gone, and the walked ones with their blocks."""
    subtrees: dict[str, tuple[int, int, int, int]] = {}
    i = f = 0
    while i < len(old):
        rel, _, is_dir = old[i]
        if is_dir:
            inner = rel + "/"
            j, g = i + 1, f
            while j < len(old) and old[j][0].startswith(inner):
                j += 1
            while g < len(old_files) and old_files[g][0].startswith(inner):
                g += 1
            subtrees[rel] = (i + 1, j, f, g)
            i, f = j, g
            continue
        if f < len(old_files) and old_files[f][0] == rel:
            f += 1
        i += 1
    entries: list[tuple[str, str, bool]] = []
    files: list[tuple[str, str, int, bool]] = []
    walked: list[tuple[str, View]] = []
    own = iter(listing.files)
    following = next(own, None)
    for rel, name, is_dir in listing.entries:
        entries.append((rel, name, is_dir))
        if is_dir:
            sub = subtrees.pop(rel, None)
            if sub is not None and dirs.get(rel) == listing.dirs[rel]:
                entries += old[sub[0] : sub[1]]
                files += old_files[sub[2] : sub[3]]
            else:  # new under this name, or another directory than before
                child = walk_child(rel)
                walked.append((rel, child))
                entries += child.entries
                files += child.files
        elif following is not None and following[0] == rel:
            files.append(following)
            following = next(own, None)
    return entries, files, list(subtrees), walked
