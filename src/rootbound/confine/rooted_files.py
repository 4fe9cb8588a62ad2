"""RootedFiles: every file operation confined to a :class:`~rootbound.Boundary`, each a short function over its one
entry point. (The public :class:`~rootbound.RootedFS` adds the tree operations on top, in ``rootbound.search``.)

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
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, TypeAlias

from rootbound.confine.boundary import LIST, LSTAT, READ, STAT, Boundary, Handle, Intent, Resolver
from rootbound.confine.patch_ops import PatchOps
from rootbound.confine.regular_files import HardlinkPolicy, check_file, read_fd
from rootbound.confine.resolvers import ResolverKind, pick_resolver
from rootbound.core.errors import NotText

__all__ = ["DEFAULT_MAX_READ", "Entry", "EntryKind", "HardlinkPolicy", "RootedFiles", "entry_kind"]

EntryKind: TypeAlias = Literal["file", "dir", "symlink", "other"]

DEFAULT_MAX_READ: Final = 16 * 1024 * 1024


@dataclass(frozen=True)
class Entry:
    """One directory entry from :meth:`~RootedFiles.scandir` or :meth:`RootedFS.walk` (canonical root + components)."""

    path: Path
    kind: EntryKind


def entry_kind(entry: os.DirEntry[str]) -> EntryKind:
    if entry.is_symlink():
        return "symlink"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "other"


class RootedFiles(PatchOps):
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
        return f"{type(self).__name__}({self.boundary!r}, resolver={self.resolver!r}, read_only={self.read_only})"

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
            entries = [Entry(parent / entry.name, entry_kind(entry)) for entry in listing]
        entries.sort(key=lambda entry: entry.path.name)
        return entries
