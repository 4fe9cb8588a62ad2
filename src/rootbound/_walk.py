"""Filtered, sorted tree walks on a :class:`~rootbound.RootedFS`: what ``search_files``, ``grep`` and
``directory_tree`` see.

Why a walk of its own: agents want results that are the same on every call (sorted, so a cap keeps the same first
N, not whatever the disk listed first) and that leave out what git leaves out (``.gitignore``, ``.git``, the
caller's excludes, see :mod:`rootbound._ignore`). The confinement is the file system's: the start is opened through
the boundary, every directory below is opened by one name relative to its parent's fd with ``O_NOFOLLOW`` and
checked to be the entry listed on the root's mount (``RootedFS._open_entry``), and symlinks are reported, never
followed. A ``check`` callable runs once per entry so a deadline or a cancellation stops a walk promptly.
"""

from __future__ import annotations

import operator
import os
import stat
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

from ._files import check_file
from ._ignore import MAX_GITIGNORE_BYTES, IgnoreRules, PathFilter
from ._resolve import DIR_READ, O_CLOEXEC, O_NOFOLLOW
from ._resolve import READ as READ_FLAGS
from .boundary import LIST, Handle, Intent
from .errors import LimitExceeded, RootsError
from .fs import RootedFS

__all__ = ["READ_NAMED", "Found", "WalkLimits", "open_found", "read_gitignore", "walk"]

Kind = Literal["file", "dir", "symlink", "other"]

_FILE_READ: Final = READ_FLAGS | O_NOFOLLOW | O_CLOEXEC
READ_NAMED: Final = Intent("read", READ_FLAGS, kind="file", named=True)
"""A regular file opened for reading, with its canonical path (to show) taken at the same time."""


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


def read_gitignore(dir_fd: int, limit: int) -> bytes | None:
    """The ``.gitignore`` in an open directory (a regular file, not a link), up to ``limit`` bytes."""
    try:
        fd = os.open(".gitignore", _FILE_READ, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


_BY_NAME: Final = operator.attrgetter("name")


def _listing(fd: int) -> list[os.DirEntry[str]]:
    with os.scandir(fd) as entries:
        return sorted(entries, key=_BY_NAME)


def _rules_above(fs: RootedFS, handle: Handle) -> IgnoreRules:
    """The ``.gitignore`` files between the root and the walk's start (git applies them to the start's tree too),
    each read through the boundary; one that cannot be read applies nothing."""
    root = str(handle.root.path).rstrip("/") + "/"
    below = handle.prefix[len(root) :].strip("/")
    if not below or not handle.prefix.startswith(root):
        return IgnoreRules()
    parts = below.split("/")
    rules = IgnoreRules()
    for depth in range(len(parts)):
        directory = root + "".join(part + "/" for part in parts[:depth])
        try:
            with fs._open(directory + ".gitignore", READ_NAMED) as opened:
                data = os.read(opened.fd, MAX_GITIGNORE_BYTES)
        except (RootsError, OSError):
            continue
        rules = rules.child("", data, lead="".join(part + "/" for part in parts[depth:]))
    return rules


class _Frame:
    """One open directory of a walk: its fd, where it is, the rules in force in it, its sorted listing, and how
    far through the listing the walk is."""

    __slots__ = ("depth", "fd", "index", "listing", "prefix", "rules")

    def __init__(self, fd: int, prefix: str, depth: int, rules: IgnoreRules, listing: list[os.DirEntry[str]]) -> None:
        self.fd, self.prefix, self.depth, self.rules, self.listing, self.index = fd, prefix, depth, rules, listing, 0


def _enter(fd: int, prefix: str, depth: int, rules: IgnoreRules, where: PathFilter) -> _Frame:
    """List a directory (the fd is owned by the frame from here) and take in its ``.gitignore``."""
    try:
        listing = _listing(fd)
        if where.gitignore and any(entry.name == ".gitignore" for entry in listing):
            rules = rules.child(prefix, read_gitignore(fd, MAX_GITIGNORE_BYTES))
    except BaseException:
        os.close(fd)
        raise
    return _Frame(fd, prefix, depth, rules, listing)


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
    with fs._open(path, LIST) as handle:
        base = handle.prefix
        above = _rules_above(fs, handle) if where.gitignore else IgnoreRules()
        frames = [_enter(handle.detach(), "", 0, above, where)]
        seen, max_entries, max_depth = 0, limits.max_entries, limits.max_depth
        trivial, skip_git, plain_files = where.trivial, where.skip_git, where.plain_files
        try:
            while frames:
                frame = frames[-1]
                fd, prefix, depth, rules, listing = frame.fd, frame.prefix, frame.depth, frame.rules, frame.listing
                filter_files = not plain_files or bool(rules.chain)
                index, count, entered = frame.index, len(listing), False
                # The loop every tree tool pays per entry: a few local lookups, no call unless a filter applies.
                while index < count:
                    entry = listing[index]
                    index += 1
                    seen += 1
                    if seen > max_entries:
                        raise LimitExceeded()
                    if check is not None and not seen & 63:
                        check(64)
                    name = entry.name
                    rel = prefix + name
                    if entry.is_dir(follow_symlinks=False):
                        if (skip_git and name == ".git") or (not trivial and where.skip_dir(rules, rel, name)):
                            continue
                        yield Found(rel, name, True, depth + 1, fd, entry, handle, base)
                        if depth + 1 >= max_depth:
                            continue
                        child = handle.open_entry(fd, name, entry.inode(), DIR_READ)
                        if child is None:
                            continue  # vanished, swapped for a link or a mount, unreadable: not entered
                        try:
                            frames.append(_enter(child[0], rel + "/", depth + 1, rules, where))
                        except OSError:
                            continue  # unreadable: listed, not entered
                        frame.index, entered = index, True
                        break
                    if filter_files and where.skip_file(rules, rel, name):
                        continue
                    yield Found(rel, name, False, depth + 1, fd, entry, handle, base)
                if not entered:
                    os.close(fd)
                    frames.pop()
            if check is not None and seen & 63:
                check(seen & 63)  # the rest of the count: progress ends at the number of entries walked
        finally:
            for frame in frames:
                os.close(frame.fd)


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
