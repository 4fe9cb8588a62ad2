"""The one tree walk under every tree operation: ``RootedFS.walk/glob/search/grep`` and the serve tools' walks.

Why one: a tree operation must not leave the root when the tree changes under it, and two walks drift. Entries come
from ``scandir`` on held directory fds (``d_type``, no per-entry open); a subdirectory is entered only through
:meth:`~boundary.Handle.entry_opener` (its name opened ``O_NOFOLLOW`` in its parent's fd, and checked to
be the listed entry on the root's mount), so a symlink or mount swapped in after the listing is skipped, never
followed. Symlinks are reported, never entered; entry and depth limits bound the work. What differs between
callers plugs in: name order (``sort``), a ``descend`` prune, a per-directory :class:`Scope` (the ignore files'
rules), a ``check`` hook for deadlines and cancellation, and an ``at_limit`` hook for directories not entered.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Final, Protocol

from rootbound.confine.boundary import Handle
from rootbound.confine.fd_access import DIR_READ, scandir_fd
from rootbound.core.errors import LimitExceeded

__all__ = ["DEFAULT_MAX_DEPTH", "DEFAULT_MAX_ENTRIES", "NO_HOOKS", "Scope", "WalkHooks", "scan"]

DEFAULT_MAX_ENTRIES: Final = 200_000
DEFAULT_MAX_DEPTH: Final = 64
CHECK_EVERY: Final = 64
"""``check(n)`` runs once per this many entries (and once at the end with the rest)."""

_BY_NAME: Final = operator.attrgetter("name")


class Scope(Protocol):
    """Which entries of one directory a walk keeps; :meth:`enter` gives the scope of a directory's entries (where
    its ignore files are read, through the walk's held fd). ``files``: whether :meth:`skip_file` must be asked."""

    files: bool

    def enter(self, fd: int, prefix: str, listing: list[os.DirEntry[str]]) -> Scope: ...

    def skip_dir(self, rel: str, name: str) -> bool: ...

    def skip_file(self, rel: str, name: str) -> bool: ...


class _Frame:
    """One open directory of a walk: its fd, where it is, its scope, its listing, how far through it the walk is."""

    __slots__ = ("entries", "fd", "level", "prefix", "scope")

    def __init__(self, fd: int, prefix: str, level: int, scope: Scope | None, sort: bool) -> None:
        """List the directory ``fd`` (owned by the frame from here, closed if listing fails)."""
        try:
            with scandir_fd(fd) as entries:
                listing = sorted(entries, key=_BY_NAME) if sort else list(entries)
            if scope is not None:
                scope = scope.enter(fd, prefix, listing)
        except BaseException:
            os.close(fd)
            raise
        self.fd, self.prefix, self.level, self.scope = fd, prefix, level, scope
        self.entries = iter(listing)  # a walk that enters a subdirectory resumes this iterator when it comes back


@dataclass(frozen=True)
class WalkHooks:
    """What a caller plugs into one :func:`scan`: which directories it enters (``descend``), which entries it keeps
    (``scope``), progress and stopping (``check``), the directories at the depth limit (``at_limit``), and the
    directories it could not enter (``not_entered``). Each is optional."""

    descend: Callable[[int, str], bool] | None = None
    scope: Scope | None = None
    check: Callable[[int], None] | None = None
    at_limit: Callable[[int, str, os.DirEntry[str], Scope | None], None] | None = None
    not_entered: Callable[[str], object] | None = None


NO_HOOKS: Final = WalkHooks()


def scan(
    handle: Handle,
    fd: int,
    *,
    sort: bool = False,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    hooks: WalkHooks = NO_HOOKS,
) -> Generator[tuple[str, os.DirEntry[str], int, int], None, None]:
    """Depth first (a directory is yielded, then entered) below the directory ``fd`` (owned: closed here):
    ``(prefix, entry, dir fd, level)``.

    ``prefix`` is the entry's directory relative to ``fd`` (``""`` or ending in ``/``); ``dir fd`` is held while the
    entry is yielded (to open the entry in it); ``level`` is 1 for ``fd``'s entries. ``sort``: each directory in
    name order. The hooks (:class:`WalkHooks`): ``descend(level, name)`` can keep a yielded directory from being
    entered; ``scope`` leaves entries out (a left-out directory is neither yielded nor entered). Raises
    :class:`~rootbound.LimitExceeded` after ``max_entries`` listed entries; ``check(n)`` reports progress every
    :data:`CHECK_EVERY` entries and may raise. ``at_limit(dir fd, prefix, entry, scope)`` runs just before a
    directory at ``max_depth`` (not entered) is yielded, with the scope of its parent. ``not_entered(path)`` is told
    of each directory that should have been entered and was not (unreadable, another file system, changed while
    walked), so a caller can say so. Close the generator (or run it to the end) to release the directory fds it
    holds.
    """
    descend, scope, check, at_limit, not_entered = (
        hooks.descend,
        hooks.scope,
        hooks.check,
        hooks.at_limit,
        hooks.not_entered,
    )
    open_entry = handle.entry_opener()
    frames = [_Frame(fd, "", 1, scope, sort)]
    seen = 0
    # One comparison per entry for both the entry limit and the next progress check.
    stop = max_entries + 1 if check is None else min(CHECK_EVERY, max_entries + 1)
    try:
        while frames:
            frame = frames[-1]
            dir_fd, prefix, level, here = frame.fd, frame.prefix, frame.level, frame.scope
            files = here is not None and here.files
            deeper = level < max_depth
            # The loop every tree operation pays per entry: local lookups, no call unless a hook applies.
            for entry in frame.entries:
                seen += 1
                if seen >= stop:
                    if seen > max_entries:
                        raise LimitExceeded()
                    if check is not None:  # below the limit, stop is a progress check
                        check(CHECK_EVERY)
                    stop = min(seen + CHECK_EVERY, max_entries + 1)
                if entry.is_dir(follow_symlinks=False):
                    name = entry.name
                    if here is not None and here.skip_dir(prefix + name, name):
                        continue
                    if not deeper and at_limit is not None:
                        at_limit(dir_fd, prefix, entry, here)
                    yield prefix, entry, dir_fd, level
                    if not deeper or (descend is not None and not descend(level, name)):
                        continue
                    child = open_entry(dir_fd, name, entry.inode(), DIR_READ)
                    if child is None:  # vanished, swapped for a symlink, a mount point, unreadable: not entered
                        if not_entered is not None:
                            not_entered(prefix + name)
                        continue
                    try:
                        frames.append(_Frame(child[0], prefix + name + "/", level + 1, here, sort))
                    except OSError:  # unreadable: listed, not entered
                        if not_entered is not None:
                            not_entered(prefix + name)
                        continue
                    break
                if files and here is not None and here.skip_file(prefix + entry.name, entry.name):
                    continue
                yield prefix, entry, dir_fd, level
            else:
                os.close(dir_fd)
                frames.pop()
        if check is not None and seen % CHECK_EVERY:
            check(seen % CHECK_EVERY)  # the rest: progress ends at the number of entries walked
    finally:
        for frame in frames:
            os.close(frame.fd)
