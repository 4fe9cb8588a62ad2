"""Intents: what an open beneath a root is for, and how each kind is opened (the body of the one entry point).

Why its own module: :meth:`Boundary.open` owns the lifetime (in-flight count, translation, closing); *what* gets
opened is decided here, from the intent alone, on a held root and its components. A new operation (edit, move,
media reads, tree listings) picks or defines an :class:`Intent` instead of writing another open sequence.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Final, Literal

from rootbound.confine.held_roots import HeldRoot
from rootbound.confine.proc_fd import has_procfs, proc_open
from rootbound.confine.regular_files import StatLike
from rootbound.confine.resolvers import DIR_PATH, DIR_READ, O_PATH, Beneath
from rootbound.confine.resolvers import READ as _READ_FLAGS
from rootbound.confine.syscalls import Facts
from rootbound.core.errors import (
    DanglingSymlink,
    InvalidPath,
    IsADirectory,
    NotADirectory,
    NotAFile,
    OutsideRoots,
    PathExists,
    PathNotFound,
    ReadOnly,
    RootsError,
    SymlinkEscape,
    translate_error,
)

__all__ = [
    "CREATE",
    "DIRECTORY",
    "LIST",
    "LSTAT",
    "READ",
    "RESOLVE",
    "RESOLVE_NEW",
    "STAT",
    "WRITE",
    "Intent",
    "kind_denial",
    "lstat_name",
    "open_object",
    "open_parent",
    "open_typed",
    "reopen",
]


@dataclass(frozen=True)
class Intent:
    """What an open beneath a root is for.

    ``flags`` are the open flags of the object handed out (the parent directory for ``parent`` intents);
    ``follow`` whether a final symlink is followed (within the root); ``kind`` the type the object must have
    (``None``: any), checked with ``fstat``. With ``precheck`` the object is first opened ``O_PATH``, its type
    checked, and only then reopened with ``flags`` through that fd, so a FIFO or device is never opened for
    reading. ``parent`` hands out the held parent directory plus the final plain name (create, write, rename);
    with ``follow`` an in-root symlink there is followed to the existing object it names, and a dangling one is
    refused. ``parents_mode`` (parent intents) creates missing parent directories with that mode. ``named``
    computes the display path. ``O_DIRECTORY`` in ``flags`` already makes the kernel refuse anything but a
    directory.
    """

    name: str
    flags: int
    follow: bool = True
    kind: Literal["file", "dir"] | None = None
    precheck: bool = False
    parent: bool = False
    parents_mode: int | None = None
    named: bool = False

    def with_parents(self, mode: int) -> Intent:
        """This parent intent, creating missing parent directories with permission bits ``mode``."""
        return Intent(self.name, self.flags, self.follow, self.kind, self.precheck, self.parent, mode, self.named)


READ: Final = Intent("read", _READ_FLAGS, kind="file", precheck=True)
"""A regular file opened for reading: resolved to an ``O_PATH`` fd, its type checked, and only a regular file is
then reopened for reading through that fd (never by name). A FIFO or device is never opened for reading, so a
FIFO's blocked writer is not released and a device's ``open()`` side effects never fire (issue 16 #8)."""
LIST: Final = Intent("list", DIR_READ, named=True)
"""A directory opened for listing."""
STAT: Final = Intent("stat", O_PATH)
"""Any object, final symlink followed (an ``O_PATH`` fd: for fstat, or a checked reopen)."""
LSTAT: Final = Intent("lstat", O_PATH, follow=False)
"""Any object, a final symlink itself."""
DIRECTORY: Final = Intent("directory", DIR_PATH, named=True)
"""An existing directory (``O_PATH``), e.g. to check what ``mkdir`` found."""
CREATE: Final = Intent("create", DIR_READ, follow=False, parent=True, named=True)
"""The parent directory and a final name that is never followed (exclusive create, mkdir, rename target)."""
WRITE: Final = Intent("write", DIR_READ, parent=True, named=True)
"""Like :data:`CREATE`, but an in-root symlink at the final name is followed to the existing object it names."""
RESOLVE: Final = Intent("resolve", O_PATH, named=True)
"""For :meth:`Boundary.resolve`: any object, its display path."""
RESOLVE_NEW: Final = Intent("resolve-new", DIR_PATH, follow=False, parent=True, named=True)
"""For :meth:`Boundary.resolve` with ``must_exist=False``: the parent of a name that may be absent."""

_KIND_BITS: Final = {"file": stat.S_IFREG, "dir": stat.S_IFDIR}


def kind_denial(st: StatLike, kind: str) -> RootsError:
    """The denial for an object of the wrong type (``st`` its fstat) where ``kind`` was asked for."""
    if stat.S_ISDIR(st.st_mode):
        return IsADirectory()
    return NotAFile() if kind == "file" else NotADirectory()


def lstat_name(dir_fd: int, name: str) -> os.stat_result | None:
    """``lstat`` of ``name`` in ``dir_fd``, ``None`` if absent."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def reopen(fd: int, flags: int, beneath: Beneath, held: HeldRoot, rel: tuple[str, ...], follow: bool) -> int:
    """A new fd on the object ``fd`` refers to, opened with ``flags``: through procfs the object itself is reopened
    and no path is resolved again. Without procfs, ``rel`` is resolved once more beneath the root (``follow``: a
    final symlink followed) and must lead to the same inode."""
    if not beneath.portable:  # the portable profile has no procfs
        try:
            return proc_open(fd, flags)
        except FileNotFoundError:
            if has_procfs():
                raise PathNotFound() from None
        except OSError as exc:
            raise translate_error(exc) from None
    new = beneath.open(held, rel, flags, follow=follow)
    mine, theirs = os.fstat(fd), os.fstat(new)
    if (mine.st_dev, mine.st_ino) != (theirs.st_dev, theirs.st_ino):
        os.close(new)
        raise PathNotFound()  # replaced meanwhile: not the object that was checked
    return new


def open_object(
    beneath: Beneath, held: HeldRoot, rel: tuple[str, ...], intent: Intent
) -> tuple[int, tuple[str, ...], os.stat_result | None]:
    """``(fd, canonical components or (), fstat if typed)`` of the object ``rel`` names beneath ``held``, for a
    named or prechecked intent; a typed intent that is not named goes to :func:`open_typed` (``Handle`` picks)."""
    flags = O_PATH if intent.precheck else intent.flags
    parts: tuple[str, ...] = ()
    if intent.named:
        fd, parts = beneath.open_named(held, rel, flags, follow=intent.follow)
    else:
        fd = beneath.open(held, rel, flags, follow=intent.follow)
    st: os.stat_result | None = None
    kind = intent.kind
    try:
        if kind is not None:
            st = os.fstat(fd)
            if (st.st_mode & 0o170000) != _KIND_BITS[kind]:
                raise kind_denial(st, kind)
        if intent.precheck and intent.flags != O_PATH:
            new = reopen(fd, intent.flags, beneath, held, rel, intent.follow)
            os.close(fd)
            fd = new
    except BaseException:
        os.close(fd)
        raise
    return fd, parts, st


def open_typed(
    beneath: Beneath, held: HeldRoot, rel: tuple[str, ...], intent: Intent
) -> tuple[int, os.stat_result | Facts]:
    """``(fd, fstat or the walk's statx facts)`` of the object ``rel`` names beneath ``held``, for an intent with a
    ``kind`` (the hot path of :data:`READ`): opened (``O_PATH`` first with ``precheck``), its type checked on the
    stat the open already took, and with ``precheck`` only then reopened with the intent's flags through that fd."""
    kind = intent.kind
    assert kind is not None
    precheck = intent.precheck
    fd, st = beneath.open_stat(held, rel, O_PATH if precheck else intent.flags, intent.follow)
    if (st.st_mode & 0o170000) != _KIND_BITS[kind]:
        os.close(fd)
        raise kind_denial(st, kind)
    if not precheck or intent.flags == O_PATH:
        return fd, st
    try:
        return reopen(fd, intent.flags, beneath, held, rel, intent.follow), st
    finally:
        os.close(fd)


def open_parent(
    beneath: Beneath, held: HeldRoot, rel: tuple[str, ...], intent: Intent
) -> tuple[int, tuple[str, ...], str]:
    """``(parent fd, its canonical components, final name)`` for an object to create or replace at ``rel``."""
    if held.is_file:
        raise OutsideRoots("outside roots") if rel else ReadOnly()  # nothing can be created at a file root
    if not rel:
        raise IsADirectory()
    name = rel[-1]
    if name == "..":
        raise InvalidPath("final component is not a name")
    if intent.parents_mode is not None:
        _make_parents(beneath, held, rel[:-1], intent.parents_mode)
    fd, parts = beneath.open_named(held, rel[:-1], intent.flags)
    if not intent.follow:
        return fd, parts, name
    try:
        existing = lstat_name(fd, name)
    except BaseException:
        os.close(fd)
        raise
    if existing is None or not stat.S_ISLNK(existing.st_mode):
        return fd, parts, name
    # Follow the link only to an existing object inside this root; act beside *that* object.
    os.close(fd)
    try:
        target_fd, target = beneath.open_named(held, (*parts, name), O_PATH)
    except PathNotFound:
        raise DanglingSymlink() from None
    os.close(target_fd)
    if not target:
        raise IsADirectory()
    fd, parts = beneath.open_named(held, target[:-1], intent.flags)
    try:
        again = lstat_name(fd, target[-1])
        if again is not None and stat.S_ISLNK(again.st_mode):
            raise SymlinkEscape()  # swapped while we looked: not provably inside
    except BaseException:
        os.close(fd)
        raise
    return fd, parts, target[-1]


def _make_parents(beneath: Beneath, held: HeldRoot, rel: tuple[str, ...], mode: int) -> None:
    """Create the missing directories of ``rel`` one by one, each beneath the held root (links followed within)."""
    for end in range(1, len(rel) + 1):
        try:
            fd = beneath.open(held, rel[:end], DIR_PATH)
        except PathNotFound:
            if rel[end - 1] == "..":
                raise
            parent = beneath.open(held, rel[: end - 1], DIR_PATH)
            try:
                os.mkdir(rel[end - 1], mode, dir_fd=parent)
            except FileExistsError:
                pass  # made meanwhile: the next open decides what it is
            finally:
                os.close(parent)
            continue
        except NotADirectory:
            raise PathExists() from None  # exists, but not as a directory
        os.close(fd)
