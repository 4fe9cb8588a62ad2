"""RootedFS: file operations confined to a :class:`~rootbound.Boundary`, each a short function over its one entry
point.

Why: a guard that answers "yes" and hands back a string invites the caller to reopen that string later
(check-then-open). Every method here opens through :meth:`Boundary.open` (beneath a held root fd, with
``openat2(RESOLVE_BENEATH)`` or the ``O_NOFOLLOW`` component walk) and then works only on the fds it got. Nothing
is reopened by name from the process root, and every failure is a :class:`~rootbound.RootsError` with a fixed
reason.

Policies (also in ``docs/security.md``):

* **Writes** (``write_ops``, mixed in: write, edit, mkdir, create_directory, move, delete) are atomic: a
  fresh temp name (``O_CREAT|O_EXCL|O_NOFOLLOW``) in the target's directory, ``fsync``, a proof that the directory
  is still beneath its root, then ``rename`` over the final name (or ``RENAME_NOREPLACE`` into a free one for
  ``exclusive=True``), all relative to the held parent fd. A final name that is a symlink is followed only when it
  resolves to an existing file inside the same root; a dangling one is refused
  (:class:`~rootbound.DanglingSymlink`).
* **Hard links** (``hardlinks=``): ``"read-only"`` (default) reads a file with ``st_nlink > 1`` but refuses to
  replace it; ``"refuse"`` also refuses to read it; ``"allow"`` does neither. A path check cannot see where the
  other names of an inode live.
* **walk / glob / search / grep** never follow symlinks (they are reported, not entered), never cross mounts
  unless the boundary allows it, and have entry, depth, size and match limits (``rootbound.confine.search.tree_walk``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Collection, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, TypeAlias

from rootbound.confine.boundary import LIST, LSTAT, READ, STAT, Boundary, Handle, Intent, Resolver
from rootbound.confine.patch_ops import PatchOps
from rootbound.confine.regular_files import HardlinkPolicy, check_file, read_fd
from rootbound.confine.resolvers import DIR_READ, O_PATH, ResolverKind, pick_resolver
from rootbound.confine.resolvers import READ as _READ_FLAGS
from rootbound.confine.search.glob_match import compile_glob, name_matcher
from rootbound.confine.search.grep_scan import (
    DEFAULT_GREP_FILE_SIZE,
    DEFAULT_MAX_LINE,
    DEFAULT_MAX_MATCHES,
    Grep,
    GrepMatch,
    GrepResult,
)
from rootbound.confine.search.tree_walk import DEFAULT_MAX_DEPTH, DEFAULT_MAX_ENTRIES, scan
from rootbound.core.errors import LimitExceeded, NotText

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

EntryKind: TypeAlias = Literal["file", "dir", "symlink", "other"]

DEFAULT_MAX_READ: Final = 16 * 1024 * 1024
DEFAULT_MAX_RESULTS: Final = 10_000
_GREP_START: Final = Intent("grep", O_PATH, named=True)  # a file or a directory: typed first, then reopened


@dataclass(frozen=True)
class Entry:
    """One directory entry found by :meth:`RootedFS.walk` (``path`` is canonical root + components)."""

    path: Path
    kind: EntryKind


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


def _kind(entry: os.DirEntry[str]) -> EntryKind:
    if entry.is_symlink():
        return "symlink"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "other"


class RootedFS(PatchOps):
    """Confined file operations on a :class:`~rootbound.Boundary` (which stays owned by the caller).

    Paths are what :meth:`Boundary.resolve` accepts (relative to the first root, absolute, or ``file:`` URIs).
    ``resolver`` overrides the boundary's kernel path (``"walk"`` forces the component walk, ``"portable"`` the
    walk without O_PATH, procfs or mount ids), ``read_only`` refuses every write, ``hardlinks`` sets the hard-link
    policy, ``max_read`` the default read limit.
    """

    def __init__(
        self,
        boundary: Boundary,
        *,
        resolver: Resolver | None = None,
        read_only: bool = False,
        hardlinks: HardlinkPolicy = "read-only",
        max_read: int = DEFAULT_MAX_READ,
    ) -> None:
        if hardlinks not in ("read-only", "refuse", "allow"):
            raise ValueError("hardlinks must be 'read-only', 'refuse' or 'allow'")
        self.boundary = boundary
        self.resolver: ResolverKind = boundary.resolver if resolver is None else pick_resolver(resolver)
        self.read_only = read_only
        self.hardlinks: HardlinkPolicy = hardlinks
        self.max_read = max_read

    def __repr__(self) -> str:
        return f"RootedFS({self.boundary!r}, resolver={self.resolver!r}, read_only={self.read_only})"

    def _open(self, path: object, intent: Intent, below: tuple[str, ...] = ()) -> Handle:
        return self.boundary.open(path, intent, resolver=self.resolver, below=below)

    # -- reading -----------------------------------------------------------------------------------------------

    def read_bytes(self, path: object, *, max_size: int | None = None) -> bytes:
        """The content of a regular file, refused if over ``max_size`` (default: the ``max_read`` limit)."""
        with self.boundary.open(path, READ, resolver=self.resolver) as handle:
            st = handle.st or handle.fstat()  # READ has a kind: its fstat (walk: statx facts) is already taken
            if st.st_nlink != 1:
                check_file(st, self.hardlinks, writing=False)
            return read_fd(handle.fd, st, self.max_read if max_size is None else max_size)

    def read_text(
        self, path: object, *, encoding: str = "utf-8", errors: str = "strict", max_size: int | None = None
    ) -> str:
        """:meth:`read_bytes` decoded; undecodable content is :class:`~rootbound.NotText` (never echoed)."""
        data = self.read_bytes(path, max_size=max_size)
        try:
            return data.decode(encoding, errors)
        except UnicodeDecodeError:
            raise NotText() from None

    def read_range(self, path: object, offset: int = 0, length: int | None = None) -> tuple[bytes, int]:
        """``(up to length bytes from offset, file size)``: reads part of a file of any size (``pread``).

        ``length`` defaults to, and is capped at, the ``max_read`` limit.
        """
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must be >= 0")
        want = self.max_read if length is None else min(length, self.max_read)
        with self._open(path, READ) as handle:
            st = handle.fstat()
            check_file(st, self.hardlinks, writing=False)
            chunks: list[bytes] = []
            got = 0
            while got < want:
                chunk = os.pread(handle.fd, want - got, offset + got)
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            return b"".join(chunks), st.st_size

    def stat(self, path: object = ".", *, follow_symlinks: bool = True) -> os.stat_result:
        """``fstat`` of the object beneath its root (of the link itself with ``follow_symlinks=False``)."""
        with self._open(path, STAT if follow_symlinks else LSTAT) as handle:
            return handle.fstat()

    def exists(self, path: object) -> bool:
        """Whether ``path`` resolves to something inside the boundary (never raises)."""
        try:
            self.stat(path)
        except Exception:
            return False
        return True

    def listdir(self, path: object = ".") -> list[str]:
        """Sorted entry names of a directory beneath a root."""
        with self._open(path, LIST) as handle:
            return sorted(os.listdir(handle.fd))

    def scandir(self, path: object = ".") -> list[Entry]:
        """The entries of one directory, sorted by name, typed from ``d_type`` (symlinks reported, not followed)."""
        with self._open(path, LIST) as handle, os.scandir(handle.fd) as listing:
            parent = handle.path  # joining a name to a parsed parent costs a third of parsing the whole path
            entries = [Entry(parent / entry.name, _kind(entry)) for entry in listing]
        entries.sort(key=lambda entry: entry.path.name)
        return entries

    # -- trees ---------------------------------------------------------------------------------------------------

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
                handle, handle.detach(), max_entries=max_entries, max_depth=max_depth, descend=descend
            ):
                yield Entry(Path(base + prefix + entry.name), _kind(entry))

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
                handle, handle.detach(), max_entries=max_entries, max_depth=depth, descend=spec.descend
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

    def grep(
        self,
        pattern: str,
        path: object = ".",
        *,
        regex: bool = False,
        ignore_case: bool = False,
        include: str | None = None,
        files_only: bool = False,
        binary: bool = False,
        max_matches: int = DEFAULT_MAX_MATCHES,
        max_file_size: int = DEFAULT_GREP_FILE_SIZE,
        max_line_length: int = DEFAULT_MAX_LINE,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_depth: int = DEFAULT_MAX_DEPTH,
        check: Callable[[int], None] | None = None,
    ) -> GrepResult:
        """Lines matching ``pattern`` (a literal, or a Python regex with ``regex=True``) in files below ``path``.

        Works on bytes (``ignore_case`` folds ASCII only). ``include`` filters file names by a glob. Files over
        ``max_file_size``, binary files (a NUL in the first 8 KiB, unless ``binary``), symlinks, special files and
        files refused by the hard-link policy are skipped and counted. ``files_only`` stops at the first match in
        each file (``grep -l``). Stops after ``max_matches`` (``truncated``).

        ``check(n)`` is called every 64 walked entries and (``n=0``) between the search windows of a file (a
        regex is searched a window of whole lines at a time: a match cannot span windows, so keep patterns to one
        line, as in grep); it may raise to stop the search (a deadline, a cancellation).
        """
        grep = Grep(
            pattern,
            regex=regex,
            ignore_case=ignore_case,
            include=include,
            files_only=files_only,
            binary=binary,
            hardlinks=self.hardlinks,
            max_matches=max_matches,
            max_file_size=max_file_size,
            max_line=max_line_length,
            check=check,
        )
        with self._open(path, _GREP_START) as handle:
            st = handle.fstat()
            if stat.S_ISDIR(st.st_mode):
                grep.tree(handle, handle.reopen(DIR_READ), max_entries=max_entries, max_depth=max_depth)
            elif stat.S_ISREG(st.st_mode):
                fd = handle.reopen(_READ_FLAGS)
                try:
                    grep.file(fd, os.fstat(fd), str(handle.path))
                finally:
                    os.close(fd)
            else:
                grep.skipped += 1  # a FIFO or device: never opened for reading
        return grep.result()
