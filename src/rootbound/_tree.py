"""The tree scan under every tree operation (walk, glob, search, grep): depth first over held directory fds.

Why: a tree operation must not leave the root when the tree changes under it. Entries come from ``scandir`` on
held fds (``d_type``, no per-entry open); a subdirectory is entered only through
:meth:`~rootbound.boundary.Handle.open_entry` (its name opened ``O_NOFOLLOW`` in its parent's fd, and checked to
be the listed entry on the root's mount), so a symlink or mount swapped in after the listing is skipped, never
followed. Symlinks are reported, never entered; entry and depth limits bound the work.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Final

from ._resolve import DIR_READ
from .boundary import Handle
from .errors import LimitExceeded

__all__ = ["DEFAULT_MAX_DEPTH", "DEFAULT_MAX_ENTRIES", "scan"]

DEFAULT_MAX_ENTRIES: Final = 200_000
DEFAULT_MAX_DEPTH: Final = 64


def scan(
    handle: Handle,
    fd: int,
    *,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    descend: Callable[[int, str], bool] | None = None,
) -> Iterator[tuple[str, os.DirEntry[str], int, int]]:
    """Depth-first over the directory ``fd`` (owned: closed here): ``(prefix, entry, dir fd, level)``.

    ``prefix`` is the entry's directory relative to ``fd`` (``""`` or ending in ``/``); ``dir fd`` is held while
    the entry is yielded (to open the entry in it); ``descend(level, name)`` can prune a subdirectory.
    """
    stack: list[tuple[int, str, int, Iterator[tuple[str, int]]]] = []
    open_entry = handle.entry_opener()
    count = 0
    prefix, level = "", 1
    try:
        while True:
            subdirs: list[tuple[str, int]] = []
            with os.scandir(fd) as listing:
                for entry in listing:
                    count += 1
                    if count > max_entries:
                        raise LimitExceeded()
                    if (
                        level < max_depth
                        and entry.is_dir(follow_symlinks=False)
                        and (descend is None or descend(level, entry.name))
                    ):
                        subdirs.append((entry.name, entry.inode()))
                    yield prefix, entry, fd, level
            stack.append((fd, prefix, level, iter(subdirs)))
            fd = -1
            while stack:
                parent_fd, parent_prefix, parent_level, names = stack[-1]
                item = next(names, None)
                if item is None:
                    os.close(parent_fd)
                    stack.pop()
                    continue
                child = open_entry(parent_fd, item[0], item[1], DIR_READ)
                if child is None:
                    continue  # vanished, swapped for a symlink, a mount point, unreadable: not entered
                fd = child[0]
                prefix, level = parent_prefix + item[0] + "/", parent_level + 1
                break
            else:
                return
    finally:
        if fd >= 0:
            os.close(fd)
        for parent_fd, *_ in stack:
            os.close(parent_fd)
