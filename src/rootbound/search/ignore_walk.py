"""Filtered, sorted tree walks on a :class:`~rootbound.RootedFS`: what ``search_files``, ``grep`` and
``directory_tree`` see.

Why: agents want results that are the same on every call (sorted, so a cap keeps the same first N, not whatever the
disk listed first) and that leave out what git and ripgrep leave out (``.gitignore``, ``.ignore``, ``.rgignore``,
``.git/info/exclude``, ``.git``, the caller's excludes, see :mod:`ignore_rules`). The walk itself is the one
tree scan (:func:`rootbound.search.tree_walk.scan`, sorted); this module plugs the ignore rules into it as a
:class:`~tree_walk.Scope` and reads every ignore file with one reader (:func:`read_ignore_file`): one name
opened beneath a directory fd the walk holds (``Handle.open_entry``: no link followed, same mount), the directories
above the start opened through :meth:`Boundary.open`. A ``.git`` (or its ``info``, or ``info/exclude``) that is a
symlink is not followed, and a ``.git`` *file* (a worktree's or submodule's ``gitdir:`` pointer) is not read: its
repository's ``info/exclude`` may lie anywhere, the root is the limit.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import stat
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

from rootbound.confine.boundary import LIST, Handle, Intent
from rootbound.confine.fd_access import DIR_READ, READ_ENTRY, READ_FLAGS, lstat_entry, scandir_fd
from rootbound.confine.regular_files import check_file
from rootbound.confine.rooted_files import RootedFiles
from rootbound.core.errors import RootsError
from rootbound.search.ignore_rules import IGNORE_FILES, MAX_IGNORE_FILE_BYTES, IgnoreRules, PathFilter
from rootbound.search.tree_walk import CHECK_EVERY, Scope, WalkHooks, scan

__all__ = [
    "READ_FILE",
    "READ_NAMED",
    "Found",
    "WalkLimits",
    "open_found",
    "read_ignore_file",
    "scope_for",
    "walk",
    "walking",
]

Kind = Literal["file", "dir", "symlink", "other"]

READ_FILE: Final = READ_ENTRY
"""The flags a walked regular file is opened with (by name beneath its held parent, no link followed)."""
_FILE_READ: Final = READ_FILE
READ_NAMED: Final = Intent("read", READ_FLAGS, kind="file", named=True, precheck=True)
"""A regular file opened for reading, with its canonical path (to show) taken at the same time; typed on an
``O_PATH`` fd first, so a FIFO or device is never opened for reading (issue 16 #8)."""


@dataclass(frozen=True)
class WalkLimits:
    """``max_depth``: levels below the start (1 = its entries); ``max_entries``: entries listed before giving up."""

    max_depth: int = 64
    max_entries: int = 200_000


class Found(NamedTuple):
    """One entry: ``rel`` to the start (``/``-joined), ``depth`` 1 for the start's entries. ``dir_fd`` is the open
    parent directory, valid only until the walk moves on. A tuple: a walk makes one per entry, on hot paths."""

    rel: str
    name: str
    is_dir: bool
    depth: int
    dir_fd: int
    entry: os.DirEntry[str]
    handle: Handle
    base: str
    more: bool = False
    """A directory at ``max_depth`` (not entered) with at least one entry the walk would yield; ``walk(peek=True)``."""

    @property
    def display(self) -> str:
        """The canonical path: the start's canonical path plus ``rel``."""
        return self.base + self.rel

    @property
    def kind(self) -> Kind:
        if self.is_dir:
            return "dir"
        entry = self.entry
        if entry.is_file(follow_symlinks=False):
            return "file"
        return "symlink" if entry.is_symlink() else "other"


_GIT: Final = ".git"
_LOOKED_FOR: Final = frozenset((*IGNORE_FILES, _GIT))

_Present = dict[str, tuple[int, bool, bool]]
"""The ignore files and ``.git`` a directory has: name to ``(inode, regular file, directory)``, links neither."""


def read_ignore_file(handle: Handle, dir_fd: int, name: str, inode: int) -> bytes | None:
    """The ignore file ``name`` (listed or looked up with ``inode``, as a regular file) of the directory ``dir_fd``,
    up to :data:`~ignore_rules.MAX_IGNORE_FILE_BYTES`: opened by the walk's entry opener (no link followed,
    same mount, ``O_NONBLOCK``); ``None`` unless it is a regular file. Every ignore file is read here."""
    opened = handle.open_entry(dir_fd, name, inode, _FILE_READ)
    if opened is None:
        return None
    fd, st = opened
    try:
        return os.read(fd, MAX_IGNORE_FILE_BYTES) if stat.S_ISREG(st.st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return lstat_entry(dir_fd, name)
    except OSError:
        return None


def _subdir(handle: Handle, dir_fd: int, name: str) -> int | None:
    """The directory ``name`` of ``dir_fd`` (looked up, not listed), opened like the walk enters one (no link
    followed, same mount), or ``None``."""
    st = _lstat(dir_fd, name)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return None
    opened = handle.open_entry(dir_fd, name, st.st_ino, DIR_READ)
    return None if opened is None else opened[0]


def _read_exclude(handle: Handle, dir_fd: int, inode: int) -> bytes | None:
    """``.git/info/exclude`` below the directory ``dir_fd`` whose ``.git`` directory has ``inode``: each step one
    name beneath the fd held for the step before (no link followed, same mount), never a path string."""
    opened = handle.open_entry(dir_fd, _GIT, inode, DIR_READ)
    if opened is None:
        return None
    git_fd = opened[0]
    try:
        info_fd = _subdir(handle, git_fd, "info")
    finally:
        os.close(git_fd)
    if info_fd is None:
        return None
    try:
        exclude = _lstat(info_fd, "exclude")
        if exclude is None or not stat.S_ISREG(exclude.st_mode):
            return None
        return read_ignore_file(handle, info_fd, "exclude", exclude.st_ino)
    finally:
        os.close(info_fd)


def _listed(listing: list[os.DirEntry[str]]) -> _Present:
    return {
        entry.name: (entry.inode(), entry.is_file(follow_symlinks=False), entry.is_dir(follow_symlinks=False))
        for entry in listing
        if entry.name in _LOOKED_FOR
    }


def _looked_up(dir_fd: int) -> _Present:
    """:func:`_listed` for a directory not listed (above the start, or peeked at): one ``lstat`` per name."""
    present: _Present = {}
    for name in _LOOKED_FOR:
        st = _lstat(dir_fd, name)
        if st is not None:
            present[name] = (st.st_ino, stat.S_ISREG(st.st_mode), stat.S_ISDIR(st.st_mode))
    return present


def _rules_in(
    handle: Handle, dir_fd: int, present: _Present, rules: IgnoreRules, base: str, lead: str = ""
) -> IgnoreRules:
    """The rules below the directory ``dir_fd`` (at ``base``, or ``lead`` above the start), which has ``present``.

    Any ``.git`` makes it the top of a repository (an enclosing one's ``info/exclude`` stops here); only a ``.git``
    that is a directory inside the root is read (a ``gitdir:`` file is not followed, a link is not a directory).
    """
    git = present.get(_GIT)
    if git is not None:
        inode, _, is_dir = git
        rules = rules.repository(base, _read_exclude(handle, dir_fd, inode) if is_dir else None, lead=lead)
    for name in IGNORE_FILES:
        found = present.get(name)
        if found is not None and found[1]:
            rules = rules.child(base, read_ignore_file(handle, dir_fd, name, found[0]), lead=lead, kind=name)
    return rules


def _rules_above(fs: RootedFiles, handle: Handle) -> IgnoreRules:
    """The ignore files between the root and the walk's start, and the ``info/exclude`` of a repository there (git
    and ripgrep apply them to the start's tree too): each directory opened through the boundary, its files by
    :func:`_rules_in`; one that cannot be opened applies nothing. Nothing above the root is read."""
    root = str(handle.root.path).rstrip("/") + "/"
    below = handle.prefix[len(root) :].strip("/")
    if not below or not handle.prefix.startswith(root):
        return IgnoreRules()
    parts = below.split("/")
    rules = IgnoreRules()
    for depth in range(len(parts)):
        directory = root + "".join(part + "/" for part in parts[:depth])
        lead = "".join(part + "/" for part in parts[depth:])
        try:
            with fs.boundary.open(directory, LIST, resolver=fs.resolver) as above:
                rules = _rules_in(above, above.fd, _looked_up(above.fd), rules, "", lead)
        except (RootsError, OSError):
            continue
    return rules


class _IgnoreScope:
    """The ignore rules as the tree scan's per-directory :class:`~rootbound.search.tree_walk.Scope`."""

    __slots__ = ("files", "handle", "rules", "where")

    def __init__(self, where: PathFilter, handle: Handle, rules: IgnoreRules) -> None:
        self.where, self.handle, self.rules = where, handle, rules
        self.files = not where.plain_files or bool(rules)

    def enter(self, fd: int, prefix: str, listing: list[os.DirEntry[str]]) -> _IgnoreScope:
        if not self.where.gitignore:
            return self
        present = _listed(listing)
        return self._below(fd, prefix, present) if present else self

    def enter_unlisted(self, fd: int, prefix: str) -> _IgnoreScope:
        """:meth:`enter` for a directory whose listing is not at hand."""
        return self._below(fd, prefix, _looked_up(fd)) if self.where.gitignore else self

    def _below(self, fd: int, prefix: str, present: _Present) -> _IgnoreScope:
        rules = _rules_in(self.handle, fd, present, self.rules, prefix)
        return self if rules is self.rules else _IgnoreScope(self.where, self.handle, rules)

    def skip_dir(self, rel: str, name: str) -> bool:
        return self.where.skip_dir(self.rules, rel, name)

    def shows(self, prefix: str, entry: os.DirEntry[str]) -> bool:
        """Whether the walk would yield ``entry`` of the directory at ``prefix`` (this scope's directory)."""
        name = entry.name
        if entry.is_dir(follow_symlinks=False):
            return not self.skip_dir(prefix + name, name)
        return not self.files or not self.skip_file(prefix + name, name)

    def skip_file(self, rel: str, name: str) -> bool:
        return self.where.skip_file(self.rules, rel, name)


_WHOLE: Final = 256
"""A directory at ``max_depth`` with fewer entries is listed whole (one ``getdents`` batch): its ignore files are
found in the listing; a larger one has them looked up by name, and is read only up to its first shown entry."""


def _shows_something(
    handle: Handle,
    dir_fd: int,
    entry: os.DirEntry[str],
    rel: str,
    scope: Scope | None,
    check: Callable[[int], None] | None,
) -> bool:
    """Whether the directory ``entry`` of ``dir_fd`` (at ``rel``, ending in ``/``) has an entry the walk would yield:
    opened like the walk enters one, listed unsorted up to the first such entry (a small one whole, see
    :data:`_WHOLE`). The entries read count in ``check`` like walked ones. Not (or no longer) that directory, or
    unreadable: nothing to show."""
    opened = handle.open_entry(dir_fd, entry.name, entry.inode(), DIR_READ)
    if opened is None:
        return False
    fd = opened[0]
    since = 0  # entries read and not yet counted in check
    try:
        with scandir_fd(fd) as entries:
            head = list(itertools.islice(entries, _WHOLE))
            if check is not None and head:
                check(len(head))
            if not isinstance(scope, _IgnoreScope) or not head:
                return bool(head)
            whole = len(head) < _WHOLE
            inner = scope.enter(fd, rel, head) if whole else scope.enter_unlisted(fd, rel)
            if any(inner.shows(rel, child) for child in head):
                return True
            if whole:
                return False
            for child in entries:
                since += 1
                if check is not None and since == CHECK_EVERY:
                    check(since)
                    since = 0
                if inner.shows(rel, child):
                    return True
        return False
    except OSError:
        return False
    finally:
        os.close(fd)
        if check is not None and since:
            check(since)


def scope_for(fs: RootedFiles, handle: Handle, where: PathFilter) -> Scope | None:
    """``where``'s rules as the scan's :class:`~rootbound.search.tree_walk.Scope` for a walk from ``handle`` (the
    ignore files above it read here), or ``None`` when nothing is to be checked."""
    if where.trivial:
        return None
    return _IgnoreScope(where, handle, _rules_above(fs, handle) if where.gitignore else IgnoreRules())


@contextlib.contextmanager
def walking(
    fs: RootedFiles,
    path: object,
    where: PathFilter,
    *,
    limits: WalkLimits = WalkLimits(),
    check: Callable[[int], None] | None = None,
    at_limit: Callable[[Handle, int, str, os.DirEntry[str], Scope | None], None] | None = None,
    not_entered: Callable[[str], object] | None = None,
) -> Iterator[tuple[Handle, Generator[tuple[str, os.DirEntry[str], int, int], None, None]]]:
    """The tree scan under :func:`walk`, for a caller with its own per-entry loop (grep: no :class:`Found` built
    per entry): the handle of the start (opened through the boundary) and the scan's ``(prefix, entry, dir fd,
    level)`` tuples, with ``where``'s rules applied. Both are released when the block exits."""
    with fs.boundary.open(path, LIST, resolver=fs.resolver) as handle:
        scope = scope_for(fs, handle, where)
        hook = None
        if at_limit is not None:
            hook = functools.partial(at_limit, handle)
        entries = scan(
            handle,
            handle.detach(),
            sort=True,
            max_entries=limits.max_entries,
            max_depth=limits.max_depth,
            hooks=WalkHooks(scope=scope, check=check, at_limit=hook, not_entered=not_entered),
        )
        try:
            yield handle, entries
        finally:
            entries.close()


def walk(
    fs: RootedFiles,
    path: object,
    where: PathFilter,
    *,
    limits: WalkLimits = WalkLimits(),
    check: Callable[[int], None] | None = None,
    peek: bool = False,
    keep: Callable[[str, str, bool], bool] | None = None,
    not_entered: Callable[[str], object] | None = None,
) -> Generator[Found, None, None]:
    """Depth first below ``path`` in name order; skipped directories are neither yielded nor entered.

    Raises :class:`~rootbound.LimitExceeded` after ``limits.max_entries`` listed entries; ``check(n)`` is called
    every 64 entries. ``peek``: a directory at ``limits.max_depth`` is looked into, up to its first entry the walk
    would yield (:attr:`Found.more`). ``keep(rel, name, is_dir)``: only entries it accepts are yielded (directories
    are entered either way), so a name search builds no :class:`Found` for the ~90% of entries it rejects. Close the
    generator (or run it to the end) to release the directory fds it holds. ``not_entered``: see
    :func:`~rootbound.search.tree_walk.scan`.
    """
    peeked: list[bool] = []  # set just before scan yields the directory it was asked about

    def at_limit(handle: Handle, dir_fd: int, prefix: str, entry: os.DirEntry[str], here: Scope | None) -> None:
        peeked.append(_shows_something(handle, dir_fd, entry, prefix + entry.name + "/", here, check))

    hook = at_limit if peek else None
    with walking(fs, path, where, limits=limits, check=check, at_limit=hook, not_entered=not_entered) as (
        handle,
        entries,
    ):
        base = handle.prefix
        for prefix, entry, dir_fd, level in entries:
            name, is_dir = entry.name, entry.is_dir(follow_symlinks=False)
            more = peeked.pop() if peeked else False
            rel = prefix + name
            if keep is None or keep(rel, name, is_dir):
                yield Found(rel, name, is_dir, level, dir_fd, entry, handle, base, more)


def open_found(fs: RootedFiles, found: Found) -> tuple[int, os.stat_result] | None:
    """Open a walked regular file for reading (by name beneath its parent fd, no link followed, same mount, the
    hard-link policy applied), or ``None`` if it is not (still) a readable regular file."""
    opened = found.handle.open_entry(found.dir_fd, found.name, found.entry.inode(), _FILE_READ)
    if opened is None:
        return None
    st = opened[1]
    if st.st_nlink == 1 and stat.S_ISREG(st.st_mode):
        return opened  # the usual case: nothing more to check
    try:
        check_file(st, fs.hardlinks, writing=False)
    except RootsError:
        os.close(opened[0])
        return None
    return opened
