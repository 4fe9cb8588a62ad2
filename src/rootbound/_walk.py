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

import os
import stat
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Final, Literal

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


@dataclass(frozen=True)
class Found:
    """One entry: ``rel`` to the start (``/``-joined), ``display`` its canonical path, ``depth`` 1 for the start's
    entries. ``dir_fd`` is the open parent directory, valid only until the walk moves on."""

    rel: str
    display: str
    name: str
    kind: Kind
    depth: int
    dir_fd: int
    entry: os.DirEntry[str]
    handle: Handle


def _kind(entry: os.DirEntry[str]) -> Kind:
    if entry.is_symlink():
        return "symlink"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "other"


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


def _listing(fd: int) -> list[os.DirEntry[str]]:
    with os.scandir(fd) as entries:
        return sorted(entries, key=lambda entry: entry.name)


def walk(
    fs: RootedFS,
    path: object,
    where: PathFilter,
    *,
    limits: WalkLimits = WalkLimits(),
    check: Callable[[], None] | None = None,
) -> Generator[Found, None, None]:
    """Depth first below ``path`` in name order; skipped directories are neither yielded nor entered.

    Raises :class:`~rootbound.LimitExceeded` after ``limits.max_entries`` listed entries. Close the generator (or
    run it to the end) to release the directory fds it holds.
    """
    stack: list[tuple[int, str, int, IgnoreRules, list[os.DirEntry[str]], int]] = []
    with fs._open(path, LIST) as handle:
        fd, base = handle.detach(), handle.prefix
        try:
            listing = _listing(fd)
            rules = IgnoreRules()
            if where.gitignore and any(e.name == ".gitignore" for e in listing):
                rules = rules.child("", read_gitignore(fd, MAX_GITIGNORE_BYTES))
        except BaseException:
            os.close(fd)
            raise
        stack.append((fd, "", 0, rules, listing, 0))
        seen = 0
        trivial = where.trivial
        try:
            while stack:
                fd, prefix, depth, rules, listing, index = stack[-1]
                if index >= len(listing):
                    os.close(fd)
                    stack.pop()
                    continue
                stack[-1] = (fd, prefix, depth, rules, listing, index + 1)
                entry = listing[index]
                seen += 1
                if seen > limits.max_entries:
                    raise LimitExceeded()
                if check is not None:
                    check()
                name = entry.name
                rel = prefix + name
                if entry.is_dir(follow_symlinks=False):
                    if not trivial and where.skip_dir(rules, rel, name):
                        continue
                    yield Found(rel, base + rel, name, "dir", depth + 1, fd, entry, handle)
                    if depth + 1 >= limits.max_depth:
                        continue
                    child = handle.open_entry(fd, name, entry.inode(), DIR_READ)
                    if child is None:
                        continue  # vanished, swapped for a link or a mount, unreadable: not entered
                    child_fd = child[0]
                    try:
                        child_listing = _listing(child_fd)
                    except OSError:
                        os.close(child_fd)
                        continue
                    child_rules = rules
                    if where.gitignore and any(e.name == ".gitignore" for e in child_listing):
                        child_rules = rules.child(rel + "/", read_gitignore(child_fd, MAX_GITIGNORE_BYTES))
                    stack.append((child_fd, rel + "/", depth + 1, child_rules, child_listing, 0))
                    continue
                if not trivial and where.skip_file(rules, rel, name):
                    continue
                yield Found(rel, base + rel, name, _kind(entry), depth + 1, fd, entry, handle)
        finally:
            for fd, *_ in stack:
                os.close(fd)


def open_found(fs: RootedFS, found: Found) -> tuple[int, os.stat_result] | None:
    """Open a walked regular file for reading (by name beneath its parent fd, no link followed, same mount, the
    hard-link policy applied), or ``None`` if it is not (still) a readable regular file."""
    opened = found.handle.open_entry(found.dir_fd, found.name, found.entry.inode(), _FILE_READ)
    if opened is None:
        return None
    try:
        check_file(opened[1], fs.hardlinks, writing=False)
    except RootsError:
        os.close(opened[0])
        return None
    return opened
