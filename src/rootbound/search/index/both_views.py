"""One walk of a DIR recording both views a new session's first grep makes (issue 51): without the ignore files and
with them.

Why: the take up's child (``checker.py``) walked the DIR twice, once per view, and on a 155k-file tree the second
walk (every directory opened and listed again) was a third of its time, the time a new server's first grep waits.
The view with the ignore files is part of the one without them (both skip ``.git``, both sorted by name, the same
depth limit), so one scan, with no ignore file applied, is enough: beside it, :class:`_Both` carries, for each
directory the ignoring view enters, that view's rules (read from the same listing, by the same scope
``ignore_walk`` gives its walks), and each entry is put in that view too unless those rules leave it out. The two
views equal what :func:`~rootbound.search.index.view.walk_view` records with each filter (a test compares them,
``tests/search/test_both_views.py``); nothing is opened that the plain walk does not open, except the ignore files.
The two views share their tuples (an entry of both is one object): ``marshal`` writes the second as a reference, so
the child's report carries the ignoring view for a few bytes an entry.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from rootbound.confine.boundary import LIST
from rootbound.confine.rooted_files import RootedFiles
from rootbound.search.ignore_rules import PathFilter
from rootbound.search.ignore_walk import WalkLimits, scope_for
from rootbound.search.index.view import View
from rootbound.search.tree_walk import Scope, WalkHooks, scan

__all__ = ["walk_both"]

Seen = Callable[[str, int, str], None]
"""Told of an entry: its path below the start, the fd of its directory, its name."""


class _Both:
    """The scan's scope: the plain view's rules (which decide what the scan yields and enters) and, where the
    ignoring view enters the same directory, that view's rules; :meth:`enter` records the latter by the directory's
    prefix for the loop in :func:`walk_both`."""

    __slots__ = ("files", "ignoring", "plain", "walk")

    def __init__(self, plain: Scope | None, ignoring: Scope | None, walk: _Walk) -> None:
        self.plain, self.ignoring, self.walk = plain, ignoring, walk
        self.files = plain is not None and plain.files

    def enter(self, fd: int, prefix: str, listing: list[os.DirEntry[str]]) -> _Both:
        plain = self.plain.enter(fd, prefix, listing) if self.plain is not None else None
        ignoring = None
        if self.ignoring is not None and (not prefix or prefix in self.walk.shown_dirs):
            ignoring = self.ignoring.enter(fd, prefix, listing)
            self.walk.scopes[prefix] = ignoring
            self.walk.ignoring.listed += len(listing)
        return _Both(plain, ignoring, self.walk)

    def skip_dir(self, rel: str, name: str) -> bool:
        return self.plain is not None and self.plain.skip_dir(rel, name)

    def skip_file(self, rel: str, name: str) -> bool:
        return self.plain is not None and self.plain.skip_file(rel, name)


class _Walk:
    """The two views being recorded, and what the ignoring one has entered: each directory's scope by its prefix
    (``""`` or ending in ``/``), and the directories it shows (by prefix: entered if the scan enters them)."""

    __slots__ = ("ignoring", "plain", "scopes", "shown_dirs")

    def __init__(self) -> None:
        self.plain, self.ignoring = View(""), View("")
        self.scopes: dict[str, Scope | None] = {}
        self.shown_dirs: set[str] = set()

    def not_entered(self, rel: str) -> None:
        self.plain.unentered.add(rel)
        if rel + "/" in self.shown_dirs:
            self.ignoring.unentered.add(rel)

    def progress(self, steps: int) -> None:
        self.plain.listed += steps


def walk_both(fs: RootedFiles, start: object, limits: WalkLimits, vouch: Seen, on_dir: Seen) -> tuple[View, View]:
    """The views of the walk from ``start`` (the DIR's top) without and with the ignore files, as ``walk_view``
    records them with ``PathFilter(gitignore=False)`` and ``PathFilter()``; ``vouch`` and ``on_dir`` are told of
    every regular file and every directory the first one meets, as ``walk_view`` tells them (a directory before it
    is listed). Raises what the walk raises."""
    walk = _Walk()
    plain, ignoring = walk.plain, walk.ignoring
    scopes, shown_dirs = walk.scopes, walk.shown_dirs
    with fs.boundary.open(start, LIST, resolver=fs.resolver) as handle:
        top = _Both(scope_for(fs, handle, PathFilter(gitignore=False)), scope_for(fs, handle, PathFilter()), walk)
        hooks = WalkHooks(scope=top, check=walk.progress, not_entered=walk.not_entered)
        entries = scan(
            handle, handle.detach(), sort=True, max_entries=limits.max_entries, max_depth=limits.max_depth, hooks=hooks
        )
        try:
            for prefix, entry, dir_fd, _ in entries:
                name = entry.name
                rel = prefix + name
                here = scopes.get(prefix)
                if entry.is_dir(follow_symlinks=False):
                    inode = entry.inode()
                    listed = (rel, name, True)
                    plain.entries.append(listed)
                    plain.dirs[rel] = inode
                    on_dir(rel, dir_fd, name)
                    if here is not None and not here.skip_dir(rel, name):
                        ignoring.entries.append(listed)
                        ignoring.dirs[rel] = inode
                        shown_dirs.add(rel + "/")
                    continue
                shown = here is not None and not (here.files and here.skip_file(rel, name))
                listed = (rel, name, False)
                plain.entries.append(listed)
                if shown:
                    ignoring.entries.append(listed)
                if entry.is_file(follow_symlinks=False):
                    found = (rel, rel, entry.inode(), False)
                    plain.files.append(found)
                    if shown:
                        ignoring.files.append(found)
                    vouch(rel, dir_fd, name)
                elif entry.is_symlink():
                    link = (rel, rel, 0, True)
                    plain.files.append(link)
                    if shown:
                        ignoring.files.append(link)
        finally:
            entries.close()
    return plain, ignoring
