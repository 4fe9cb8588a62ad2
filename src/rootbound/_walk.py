"""Filtered, sorted tree walks on a :class:`~rootbound.RootedFS`: what ``search_files``, ``grep`` and
``directory_tree`` see.

Why: agents want results that are the same on every call (sorted, so a cap keeps the same first N, not whatever the
disk listed first) and that leave out what git leaves out (``.gitignore``, ``.git``, the caller's excludes, see
:mod:`rootbound._ignore`). The walk itself is the one tree scan (:func:`rootbound._tree.scan`, sorted); this module
plugs the ignore rules into it as a :class:`~rootbound._tree.Scope` and reads every ``.gitignore`` through the
boundary: inside the walk by the listed entry beneath its directory's held fd (``Handle.open_entry``), above the
start through :meth:`Boundary.open`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

from ._files import check_file
from ._ignore import MAX_GITIGNORE_BYTES, IgnoreRules, PathFilter
from ._resolve import O_CLOEXEC, O_NOFOLLOW
from ._resolve import READ as READ_FLAGS
from ._tree import scan
from .boundary import LIST, Handle, Intent
from .errors import RootsError
from .fs import RootedFS

__all__ = ["READ_NAMED", "Found", "WalkLimits", "open_found", "read_gitignore", "walk"]

Kind = Literal["file", "dir", "symlink", "other"]

_FILE_READ: Final = READ_FLAGS | O_NOFOLLOW | O_CLOEXEC
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


def read_gitignore(handle: Handle, dir_fd: int, entry: os.DirEntry[str], limit: int) -> bytes | None:
    """The listed ``.gitignore`` ``entry`` of the walked directory ``dir_fd``, up to ``limit`` bytes: opened by the
    walk's entry opener (the listed inode, no link followed, same mount, ``O_NONBLOCK``); ``None`` unless a regular
    file. A name not listed as a regular file is not opened at all (a FIFO or device is never opened for reading)."""
    if not entry.is_file(follow_symlinks=False):
        return None
    opened = handle.open_entry(dir_fd, entry.name, entry.inode(), _FILE_READ)
    if opened is None:
        return None
    fd, st = opened
    try:
        return os.read(fd, limit) if stat.S_ISREG(st.st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _rules_above(fs: RootedFS, handle: Handle) -> IgnoreRules:
    """The ``.gitignore`` files between the root and the walk's start (git applies them to the start's tree too),
    each opened through the boundary; one that cannot be read applies nothing."""
    root = str(handle.root.path).rstrip("/") + "/"
    below = handle.prefix[len(root) :].strip("/")
    if not below or not handle.prefix.startswith(root):
        return IgnoreRules()
    parts = below.split("/")
    rules = IgnoreRules()
    for depth in range(len(parts)):
        directory = root + "".join(part + "/" for part in parts[:depth])
        try:
            with fs.boundary.open(directory + ".gitignore", READ_NAMED, resolver=fs.resolver) as opened:
                data = os.read(opened.fd, MAX_GITIGNORE_BYTES)
        except (RootsError, OSError):
            continue
        rules = rules.child("", data, lead="".join(part + "/" for part in parts[depth:]))
    return rules


class _IgnoreScope:
    """The ignore rules as the tree scan's per-directory :class:`~rootbound._tree.Scope`."""

    __slots__ = ("files", "handle", "rules", "where")

    def __init__(self, where: PathFilter, handle: Handle, rules: IgnoreRules) -> None:
        self.where, self.handle, self.rules = where, handle, rules
        self.files = not where.plain_files or bool(rules.chain)

    def enter(self, fd: int, prefix: str, listing: list[os.DirEntry[str]]) -> _IgnoreScope:
        if not self.where.gitignore:
            return self
        for entry in listing:
            if entry.name == ".gitignore":
                rules = self.rules.child(prefix, read_gitignore(self.handle, fd, entry, MAX_GITIGNORE_BYTES))
                return self if rules is self.rules else _IgnoreScope(self.where, self.handle, rules)
        return self

    def skip_dir(self, rel: str, name: str) -> bool:
        return self.where.skip_dir(self.rules, rel, name)

    def skip_file(self, rel: str, name: str) -> bool:
        return self.where.skip_file(self.rules, rel, name)


def walk(
    fs: RootedFS,
    path: object,
    where: PathFilter,
    *,
    limits: WalkLimits = WalkLimits(),
    check: Callable[[int], None] | None = None,
) -> Generator[Found, None, None]:
    """Depth first below ``path`` in name order; skipped directories are neither yielded nor entered.

    Raises :class:`~rootbound.LimitExceeded` after ``limits.max_entries`` listed entries; ``check(n)`` is called
    every 64 entries. Close the generator (or run it to the end) to release the directory fds it holds.
    """
    with fs.boundary.open(path, LIST, resolver=fs.resolver) as handle:
        base = handle.prefix
        scope = None
        if not where.trivial:
            scope = _IgnoreScope(where, handle, _rules_above(fs, handle) if where.gitignore else IgnoreRules())
        entries = scan(
            handle,
            handle.detach(),
            sort=True,
            max_entries=limits.max_entries,
            max_depth=limits.max_depth,
            scope=scope,
            check=check,
        )
        try:
            for prefix, entry, dir_fd, level in entries:
                name, is_dir = entry.name, entry.is_dir(follow_symlinks=False)
                yield Found(prefix + name, name, is_dir, level, dir_fd, entry, handle, base)
        finally:
            entries.close()


def open_found(fs: RootedFS, found: Found) -> tuple[int, os.stat_result] | None:
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
