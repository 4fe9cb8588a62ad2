"""RootedFS: the public file-operation class, :class:`~rootbound.confine.rooted_files.RootedFiles` (every file
operation over the wall's one entry point) plus the tree operations: walk, glob, search, grep.

Why here: the tree operations are search, built on the wall's public API (``Boundary.open``, ``Handle``), not part
of it; a reviewer of the wall reads ``confine/`` and can leave this layer out. Walk, glob, search and grep never
follow symlinks (they are reported, not entered), never cross mounts unless the boundary allows it, and have entry,
depth, size and match limits (``rootbound.search.tree_walk``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from rootbound.confine.boundary import LIST, Intent
from rootbound.confine.fd_access import DIR_READ, O_PATH
from rootbound.confine.fd_access import READ_FLAGS as _READ_FLAGS
from rootbound.confine.rooted_files import DEFAULT_MAX_READ, Entry, HardlinkPolicy, RootedFiles, entry_kind
from rootbound.core.errors import LimitExceeded
from rootbound.search.glob_match import compile_glob, name_matcher
from rootbound.search.grep_scan import (
    Grep,
    GrepMatch,
    GrepOptions,
    GrepResult,
    GrepSettings,
)
from rootbound.search.tree_walk import DEFAULT_MAX_DEPTH, DEFAULT_MAX_ENTRIES, WalkHooks, scan

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_MAX_READ",
    "Entry",
    "GrepMatch",
    "GrepResult",
    "HardlinkPolicy",
    "RootedFS",
    "SearchResult",
]

DEFAULT_MAX_RESULTS: Final = 10_000
_GREP_START: Final = Intent("grep", O_PATH, named=True)  # a file or a directory: typed first, then reopened


@dataclass(frozen=True)
class SearchResult:
    """What :meth:`RootedFS.search` found, sorted; ``truncated`` when more matched than ``max_results``.

    ``found`` holds the canonical paths as strings (what a tool prints); ``paths`` builds ``Path`` objects on demand,
    which for thousands of hits is a quarter of the search's cost.
    """

    found: tuple[str, ...]
    truncated: bool

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(map(Path, self.found))


class RootedFS(RootedFiles):
    """Confined file operations on a :class:`~rootbound.Boundary` (which stays owned by the caller), trees included.

    Paths are what :meth:`Boundary.resolve` accepts (relative to the first root, absolute, or ``file:`` URIs).
    ``resolver`` overrides the boundary's kernel path (``"walk"`` forces the component walk, ``"portable"`` the
    walk without O_PATH, procfs or mount ids), ``read_only`` refuses every write, ``hardlinks`` sets the hard-link
    policy, ``max_read`` the default read limit.
    """

    def walk(
        self,
        path: object = ".",
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_depth: int = DEFAULT_MAX_DEPTH,
        prune: Collection[str] = (),
    ) -> Generator[Entry, None, None]:
        """Every entry below ``path`` (depth first, unspecified order within a directory); symlinks not entered.

        Directories named in ``prune`` are listed but not entered. Raises :class:`~rootbound.LimitExceeded` after
        ``max_entries`` entries.
        """
        pruned = frozenset(prune)
        descend = (lambda level, name: name not in pruned) if pruned else None
        with self._open(path, LIST) as handle:
            base = handle.prefix
            for prefix, entry, _, _ in scan(
                handle, handle.detach(), max_entries=max_entries, max_depth=max_depth, hooks=WalkHooks(descend=descend)
            ):
                yield Entry(Path(base + prefix + entry.name), entry_kind(entry))

    def glob(
        self,
        pattern: str,
        path: object = ".",
        *,
        max_results: int = DEFAULT_MAX_RESULTS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> list[Path]:
        """Sorted canonical paths below ``path`` matching ``pattern``.

        ``*``, ``?`` and ``[...]`` match within one component (dot files included); ``**`` matches any number of
        components. Patterns are relative: absolute patterns and ``..`` are :class:`~rootbound.InvalidPattern`.
        Symlinks are matched by name but never entered.
        """
        spec = compile_glob(pattern)
        depth = max_depth if spec.depth is None else min(spec.depth, max_depth)
        found: list[str] = []
        with self._open(path, LIST, spec.prefix) as handle:
            base, matcher = handle.prefix, spec.regex.fullmatch
            for prefix, entry, _, _ in scan(
                handle, handle.detach(), max_entries=max_entries, max_depth=depth, hooks=WalkHooks(descend=spec.descend)
            ):
                relative = prefix + entry.name
                if matcher(relative) is not None:
                    if len(found) >= max_results:
                        raise LimitExceeded()
                    found.append(base + relative)
        return [Path(p) for p in sorted(found)]

    def search(
        self,
        pattern: str,
        path: object = ".",
        *,
        max_results: int = DEFAULT_MAX_RESULTS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> SearchResult:
        """Entries whose *name* matches a one-component glob at any depth below ``path`` (like ``find -name``).

        Unlike :meth:`glob`, going over ``max_results`` is not an error: the first ``max_results`` (in walk order)
        are returned, sorted, with ``truncated=True``.
        """
        matcher = name_matcher(pattern)
        found: list[str] = []
        truncated = False
        with self._open(path, LIST) as handle:
            base = handle.prefix
            for prefix, entry, _, _ in scan(handle, handle.detach(), max_entries=max_entries, max_depth=max_depth):
                if matcher(entry.name):
                    if len(found) >= max_results:
                        truncated = True
                        break
                    found.append(base + prefix + entry.name)
        found.sort()
        return SearchResult(tuple(found), truncated)

    def grep(self, pattern: str, path: object = ".", **options: Unpack[GrepOptions]) -> GrepResult:
        """Lines matching ``pattern`` (a literal, or a Python regex with ``regex=True``) in files below ``path``.

        Works on bytes (``ignore_case`` folds ASCII only). ``include`` filters file names by a glob. Files over
        ``max_file_size``, binary files (a NUL in the first 8 KiB, unless ``binary``), symlinks, special files and
        files refused by the hard-link policy are skipped and counted. ``files_only`` stops at the first match in
        each file (``grep -l``). Stops after ``max_matches`` (``truncated``).

        ``check(n)`` is called every 64 walked entries and (``n=0``) between the search windows of a file (a
        regex is searched a window of whole lines at a time: a match cannot span windows, so keep patterns to one
        line, as in grep); it may raise to stop the search (a deadline, a cancellation).
        """
        unknown = sorted(options.keys() - GrepOptions.__annotations__.keys())
        if unknown:
            raise TypeError(f"grep() got an unexpected keyword argument {unknown[0]!r}")
        settings = GrepSettings(pattern, **options)
        grep = Grep(settings, self.hardlinks)
        with self._open(path, _GREP_START) as handle:
            st = handle.fstat()
            if stat.S_ISDIR(st.st_mode):
                grep.tree(
                    handle, handle.reopen(DIR_READ), max_entries=settings.max_entries, max_depth=settings.max_depth
                )
            elif stat.S_ISREG(st.st_mode):
                fd = handle.reopen(_READ_FLAGS)
                try:
                    grep.file(fd, os.fstat(fd), str(handle.path))
                finally:
                    os.close(fd)
            else:
                grep.skipped += 1  # a FIFO or device: never opened for reading
        return grep.result()
