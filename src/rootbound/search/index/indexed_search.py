"""grep and search_files answered from the index: the same report a full scan gives, from fewer opens.

Why the same: the walk is the one walk (a :class:`~tree_index.View` is its recorded result, dropped on any change
under it), every file the index cannot vouch for is opened and searched (a candidate for the pattern's literals, a
dirty file, a file with more than one link, one it never read), and the rest are counted as the index read them
(searched, binary, too large, unreadable), in walk order, so caps, skip counts and the truncation point agree.
Every open is beneath the session's own start directory, one name at a time with ``O_NOFOLLOW`` on the root's mount
(:meth:`~rootbound.confine.boundary.Handle.open_entry`), as the walk does: the index only names files, the session's
boundary decides what opens.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from rootbound.confine.boundary import LIST, Handle
from rootbound.confine.fd_access import DIR_READ
from rootbound.confine.regular_files import check_file
from rootbound.confine.rooted_files import RootedFiles
from rootbound.core.errors import LimitExceeded, NotADirectory, RootsError
from rootbound.search.agent_grep import GrepReport, _Batches
from rootbound.search.chunk_scan import Driver, Lease
from rootbound.search.grep_query import GrepQuery, NamesQuery
from rootbound.search.grep_scan import LineScanner
from rootbound.search.ignore_rules import PathFilter
from rootbound.search.ignore_walk import READ_FILE, WalkLimits
from rootbound.search.index.pattern_memo import PatternMemo
from rootbound.search.index.registry import IndexRegistry
from rootbound.search.index.view import BINARY, MAX_GLOBS, TEXT, TOO_LARGE, UNREADABLE, Counts, Plan, View

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["grep_plan", "grep_with_index", "names_in_view", "names_with_index"]

_MAX_OPEN_DIRS: Final = 64
SHARE_AT: Final = 512
"""A query that opens at least this many files shares them with the scan helper (when the call has it): the first
query of a pattern with no literal reads every text file."""


class _DirStack:
    """The directories from the start down to the file being opened, held open (files come in walk order, so the
    stack changes as a walk's would); each entered by name beneath its parent with the walk's own opener."""

    def __init__(self, handle: Handle, view: View) -> None:
        self.handle, self.view = handle, view
        self.open_entry = handle.entry_opener()
        self.names: list[str] = []
        self.fds: list[int] = [handle.fd]

    def enter(self, directory: str) -> int | None:
        """The fd of ``directory`` (below the start, ``""`` for the start itself), or ``None`` if it is no longer
        the directory the walk listed."""
        parts = directory.split("/") if directory else []
        keep = 0
        while keep < len(self.names) and keep < len(parts) and self.names[keep] == parts[keep]:
            keep += 1
        while len(self.names) > keep:
            self.names.pop()
            os.close(self.fds.pop())
        for index in range(keep, len(parts)):
            rel = "/".join(parts[: index + 1])
            inode = self.view.dirs.get(rel)
            if inode is None or len(self.fds) > _MAX_OPEN_DIRS:
                return None
            opened = self.open_entry(self.fds[-1], parts[index], inode, DIR_READ)
            if opened is None:
                return None
            self.names.append(parts[index])
            self.fds.append(opened[0])
        return self.fds[-1]

    def close(self) -> None:
        for fd in self.fds[1:]:
            os.close(fd)
        self.fds, self.names = self.fds[:1], []


def grep_plan(fs: RootedFiles, start: object, plan: Plan, query: GrepQuery, lease: Lease | None = None) -> GrepReport:
    """The report :func:`~rootbound.search.agent_grep.grep_tree` gives for the same call, from ``plan``:
    the files it opens are read and searched joined in batches as the scan does (``query.line_local``), and the files
    it need not open are counted in path order through the same batches, so a cap stops at the same file. With a
    scan helper ``lease`` (and ``query.source``, the pattern as given) a query that opens :data:`SHARE_AT` files or more
    shares them with it (:func:`_grep_plan_shared`)."""
    counted = plan.view.counted
    assert counted is not None
    positions, unchanged = _to_open(plan, counted)
    if lease is not None and query.source is not None and len(positions) >= SHARE_AT:
        return _grep_plan_shared(fs, start, plan, query, (positions, unchanged), lease)
    limits, check, required = query.limits, query.check, query.required
    report = GrepReport(dirs_not_entered=plan.view.not_entered)
    scanner = LineScanner(
        search=query.pattern,
        required=required,
        max_file_size=limits.max_file_size,
        check=check,
        deadline=query.deadline,
    )
    batches = _Batches(scanner, report, limits, query.files_only, query.max_files, required, query.line_local)
    view = plan.view
    number, memo = counted.number, plan.memo
    read: list[tuple[str, int]] = []  # (display path, number) of the unchanged files read, in order
    found: list[tuple[str, int, list[tuple[int, int, int]]]] = []  # matching lines of those searched
    if memo is not None:
        batches.seen = lambda display, data, spans, more: (
            None if more else found.append((display, len(data), [(n, s, e) for n, s, e, hit, _ in spans if hit]))
        )
    with fs.boundary.open(start, LIST, resolver=fs.resolver) as handle:
        base = handle.prefix
        stack = _DirStack(handle, view)
        try:
            done = 0  # files below this position are counted
            for position in positions:
                _count_between(counted, done, position, batches.skip, check)
                done = position + 1
                rel, _, inode, link = view.files[position]
                if link:
                    batches.skip("links")
                    continue
                data = _open_and_read(fs, stack, rel, inode, scanner, batches)
                if data is None:
                    continue
                display = base + rel
                if position in unchanged:
                    read.append((display, int(number[position])))
                    lines = None if memo is None else memo.lines_of(int(number[position]), len(data))
                    if lines is not None:
                        if batches.known(display, data, lines):
                            break
                        continue
                if batches.add(display, data):
                    break
            else:
                _count_between(counted, done, len(view.files), batches.skip, check)
                batches.flush()
        finally:
            stack.close()
    if memo is not None and plan.locked is not None:
        plan.locked(lambda: _learn(memo, read, found, report))
    return report


def _grep_plan_shared(
    fs: RootedFiles,
    start: object,
    plan: Plan,
    query: GrepQuery,
    to_open: tuple[list[int], frozenset[int]],
    lease: Lease,
) -> GrepReport:
    """:func:`grep_plan` with the files it opens shared with the scan helper (``chunk_scan.py``): the positions in
    walk order become chunks, the files the index vouches for counted in them where they stand. What the query
    learns for the pattern's memo is only which unchanged files held no match (their lines are learnt by the next
    query, which opens the few that matched)."""
    positions, unchanged = to_open
    check = query.check
    report = GrepReport(dirs_not_entered=plan.view.not_entered)
    view, counted = plan.view, plan.view.counted
    assert counted is not None
    number, memo = counted.number, plan.memo
    read: list[tuple[str, int]] = []  # (display path, number) of the unchanged files opened, in order
    with fs.boundary.open(start, LIST, resolver=fs.resolver) as handle:
        base = handle.prefix
        stack = _DirStack(handle, view)
        driver = Driver.of(lease, handle, query, report, fs.hardlinks)
        try:
            chunk, done = driver.chunk(), 0
            for position in positions:
                _count_between(counted, done, position, chunk.count, check)
                done = position + 1
                rel, _, inode, link = view.files[position]
                directory, _, name = rel.rpartition("/")
                dir_fd = None if link else stack.enter(directory)
                if link:
                    chunk.count("links")
                elif dir_fd is None:
                    chunk.count("unreadable")
                else:
                    chunk.add(directory + "/" if directory else "", name, inode, dir_fd)
                    if position in unchanged:
                        read.append((base + rel, int(number[position])))
                if chunk.full():
                    following = driver.next(chunk)
                    if following is None:
                        break
                    chunk = following
            else:
                _count_between(counted, done, len(view.files), chunk.count, check)
                driver.end(chunk)
        finally:
            driver.close()
            stack.close()
    if memo is not None and plan.locked is not None:
        plan.locked(lambda: _learn(memo, read, [], report))
    return report


def _learn(
    memo: PatternMemo,
    read: list[tuple[str, int]],
    found: list[tuple[str, int, list[tuple[int, int, int]]]],
    report: GrepReport,
) -> None:
    """Keep what one query found in the files unchanged since indexing: the ones searched without a match, and
    every matching line of the others (only when the per-file cap left none out)."""
    memo.rule_out(_misses(read, report))
    numbers = dict(read)
    for display, size, lines in found:
        if display in numbers and lines:
            memo.keep(numbers[display], size, lines)


def _misses(read: list[tuple[str, int]], report: GrepReport) -> list[int]:
    """The numbers of the files in ``read`` that were searched and hold no match: all but the matching ones, and
    none after the last matching one when a cap stopped the search there."""
    matched = {display for display, _ in report.files}
    last = report.files[-1][0] if report.truncated and report.files else None
    misses: list[int] = []
    for display, number in read:
        if display == last:
            break
        if display not in matched:
            misses.append(number)
    return misses


def _to_open(plan: Plan, counted: Counts) -> tuple[list[int], frozenset[int]]:
    """The positions a query opens, in walk order: the candidates earlier queries of the pattern did not rule out,
    the dirty files and the files every query reads; and which of them are indexed files unchanged since (whose
    search may rule them out for the next query)."""
    import numpy as np

    number = counted.number
    candidates: npt.NDArray[np.int64]
    if plan.candidates is None:
        candidates = np.flatnonzero(number >= 0)  # positions of every indexed text file
    else:
        located = counted.position[plan.candidates].astype(np.int64)
        candidates = located[located >= 0]
    if plan.memo is not None and len(candidates):
        candidates = candidates[~plan.memo.ruled_out[number[candidates]]]
    at = counted.at
    changed = {at[rel] for rel in plan.dirty if rel in at}
    changed.update(counted.must)
    unchanged = frozenset(candidates.tolist()) - changed
    return sorted(unchanged | changed), unchanged


def _count_between(
    counted: Counts, low: int, high: int, skip: Callable[[str, int], object], check: Callable[[int], None] | None
) -> None:
    """The files at positions ``[low, high)``, none of which must be opened, counted as the index read them."""
    if high <= low:
        return
    before = counted.before
    for kind, reason in (
        (TEXT, "searched"),
        (BINARY, "binary"),
        (TOO_LARGE, "too_large"),
        (UNREADABLE, "unreadable"),
        ("l", "links"),
    ):
        count = int(before[kind][high] - before[kind][low])
        if count:
            skip(reason, count)
    if check is not None:
        check(high - low)


def _open_and_read(
    fs: RootedFiles, stack: _DirStack, rel: str, inode: int, scanner: LineScanner, batches: _Batches
) -> bytes | None:
    """One file opened beneath its directory (held by ``stack``) and read by the scanner (``None``: skipped, the
    reason counted in ``batches``)."""
    directory, _, name = rel.rpartition("/")
    dir_fd = stack.enter(directory)
    opened = None if dir_fd is None else stack.open_entry(dir_fd, name, inode, READ_FILE)
    if opened is None:
        batches.skip("unreadable")
        return None
    fd, st = opened
    try:
        if st.st_nlink != 1 or not stat.S_ISREG(st.st_mode):
            check_file(st, fs.hardlinks, writing=False)
        return scanner.read(fd, st.st_size, batches.skip)
    except RootsError:
        batches.skip("unreadable")
        return None
    finally:
        os.close(fd)


def names_in_view(
    view: View, matches: Callable[[str, str, bool], bool], key: object, base: str, cap: int
) -> tuple[list[str], bool]:
    """``search_files`` over a view: the display paths of the entries ``matches`` (the glob ``key``) keeps, at
    most ``cap`` (the flag: more were left out), as the walk yields them. The positions are kept with the view (it
    does not change while it lives), so the glob runs once per view."""
    found = view.globs.get(key)
    if found is None:
        entries = view.entries
        found = [at for at, (rel, name, is_dir) in enumerate(entries) if matches(rel, name, is_dir)]
        if len(view.globs) >= MAX_GLOBS:
            view.globs.pop(next(iter(view.globs)))
        view.globs[key] = found
    entries = view.entries
    return [base + entries[at][0] for at in found[:cap]], len(found) > cap


def _view_for(
    registry: IndexRegistry,
    fs: RootedFiles,
    start: object,
    where: PathFilter,
    where_key: tuple[object, ...],
    check: Callable[[int], None] | None,
    pattern: tuple[str, bool, bool] | None,
) -> tuple[Plan | None, str]:
    """The plan for a walk from ``start`` (opened through the session's boundary) and the status for the answer;
    no plan when the index cannot answer (the caller scans). A start that is a file: no plan, no status."""
    try:
        with fs.boundary.open(start, LIST, resolver=fs.resolver) as handle:
            prefix, st, root = handle.prefix, handle.fstat(), handle.root
    except NotADirectory:
        return None, ""
    top = str(root.path).rstrip("/") + "/"
    if where.gitignore and prefix != top:
        # The walk applies the ignore files between the session's root and the start (``ignore_walk._rules_above``):
        # which ones is the root's to say, so the recorded walk is the root's own (issue 48 #6). Their contents
        # are the index's to watch: a change there drops the walks below (``TreeIndex._structure``).
        where_key = (*where_key, ("root", top, root.dev, root.ino))
    index, start_rel, status = registry.find(prefix)
    if index is None:
        return None, status
    if not index.same_directory(start_rel, (st.st_dev, st.st_ino)):
        return None, "not indexed: not the directory the index holds at this path"
    try:
        plan = index.plan(fs, start, start_rel, where, where_key, WalkLimits(), check, pattern)
    except LimitExceeded:
        return None, "scan: the walk's entry cap"
    if plan is None:
        return None, "scan: the index is busy or the tree changed during the walk"
    return plan, "index"


def grep_with_index(
    registry: IndexRegistry, fs: RootedFiles, start: object, query: GrepQuery, lease: Lease | None = None
) -> tuple[GrepReport | None, str]:
    """:func:`~rootbound.search.agent_grep.grep_tree`'s report through the index, with the answer's status
    line; ``(None, status)`` when the caller must scan. ``query.source``: the pattern as given, ``regex``,
    ``ignore_case`` (for its literals). ``lease``: the scan helper, for a query that opens many files."""
    counts = _Steps(query.check)
    plan, status = _view_for(registry, fs, start, query.where, query.where_key, counts.walked, query.source)
    if plan is None:
        return None, status
    return grep_plan(fs, start, plan, dataclasses.replace(query, check=counts.then), lease), status


class _Steps:
    """A query's progress counted once: the entries its own walk listed (``walked``), then the files the plan
    counts (``then``) only past those, so a query that walked the view and counts its files reports the walk's
    total, as a scan does, never both (the deadline is still checked on every call)."""

    def __init__(self, check: Callable[[int], None] | None) -> None:
        self.check, self.owed = check, 0

    def walked(self, steps: int) -> None:
        self.owed += steps
        if self.check is not None:
            self.check(steps)

    def then(self, steps: int) -> None:
        paid = min(self.owed, steps)
        self.owed -= paid
        if self.check is not None:
            self.check(steps - paid)


def names_with_index(
    registry: IndexRegistry, fs: RootedFiles, start: object, query: NamesQuery
) -> tuple[tuple[list[str], bool, int] | None, str]:
    """``search_files`` below ``start`` from the index's view: ``(paths, truncated, directories not entered)`` and
    the status line, or ``(None, status)`` when the caller must walk."""
    plan, status = _view_for(registry, fs, start, query.where, query.where_key, query.check, None)
    if plan is None:
        return None, status
    with fs.boundary.open(start, LIST, resolver=fs.resolver) as handle:
        base = handle.prefix
    found, more = names_in_view(plan.view, query.matches, query.key, base, query.cap)
    return (found, more, plan.view.not_entered), status
