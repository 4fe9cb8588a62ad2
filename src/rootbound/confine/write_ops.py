"""Changing a tree beneath its roots: atomic writes, targeted edits, directories, moves and deletes.

Why its own module: every operation here is a few lines over :meth:`Boundary.open` (the one entry point) plus the
publishing steps of ``atomic_write``, and each has the same shape: open the parent directory beneath its
root, look at the final name without following it, put complete content under a temp name beside it, prove the
directory is still beneath the root, then rename. :class:`WriteOps` is mixed into :class:`~rootbound.RootedFS`.

Policies (also in ``docs/security.md``):

* Nothing is ever written through a name: content goes to a temp file beside the target and is renamed over it
  (``replace``) or renamed into a free name with ``RENAME_NOREPLACE`` (create-only), so readers never see a
  partial file and a name that appears meanwhile (a planted symlink included) is never replaced by a create.
* Every operation runs on the boundary's write domain (``write_domain``): threads Landlock lets write only beneath
  the roots, so the kernel refuses a syscall in a directory moved out of them mid-write. Before every rename the
  directory is also proven beneath its root by walking ``..`` from its fd (a directory moved out earlier gets the
  temp file removed and an :class:`~rootbound.OutsideRoots` denial); without Landlock the proof runs again after
  each syscall, and what landed outside is undone.
* An edit reads the file through an ``O_PATH`` fd checked to be a regular file (a FIFO or device is never opened
  for reading), and writes only if the name still holds that same, unchanged inode: a file replaced, grown or
  touched meanwhile is :class:`~rootbound.text.edit.FileChanged`, never overwritten.
* A move refuses a root itself, a directory holding a root, a directory into itself, and (unless ``overwrite``)
  any existing destination; ``overwrite`` replaces only a regular file the hard-link policy allows.
* A delete removes one file or symlink (never a directory, never the target of a link).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Concatenate, Final, ParamSpec, TypeVar

from rootbound.confine.atomic_write import (
    beneath,
    discard,
    exchange,
    fsync_dir,
    publish,
    rename_noreplace,
    same_file,
    undo_if_outside,
    write_temp,
)
from rootbound.confine.boundary import CREATE, DIRECTORY, WRITE, Boundary, Handle, Intent
from rootbound.confine.candidate import parse_candidate
from rootbound.confine.proc_fd import has_procfs, proc_open
from rootbound.confine.regular_files import HardlinkPolicy, check_file, read_fd
from rootbound.confine.resolvers import DIR_READ, O_CLOEXEC, O_NOFOLLOW, O_PATH
from rootbound.confine.resolvers import READ as _READ_FLAGS
from rootbound.confine.taken_files import delete_matching, taken_matching, unlink_checked
from rootbound.core.call_budget import checkpoint
from rootbound.core.errors import (
    FileOperationFailed,
    InvalidPath,
    IsADirectory,
    NotADirectory,
    NotAFile,
    NotText,
    OutsideRoots,
    PathExists,
    PathNotFound,
    ReadOnly,
    SymlinkEscape,
)
from rootbound.text.edit import AppliedEdit, Edit, EditResult, FileChanged, Tolerance, apply_edits, content_hash

__all__ = ["EditOutcome", "WriteOps"]

_NEW_DIR: Final = DIR_READ | O_NOFOLLOW | O_CLOEXEC
_PREVIEW: Final = Intent("preview", O_PATH, kind="file", named=True)  # a dry run: the file itself, typed first
_NAMED_PARENT: Final = Intent("rename", DIR_READ, follow=False, parent=True, named=True)  # move source, delete


@dataclass(frozen=True)
class EditOutcome:
    """What :meth:`WriteOps.edit_file` did: the diff, how each edit matched, and the file's hash and mtime.

    ``written`` is false for a dry run and for edits that changed nothing. ``sha256``/``mtime_ns`` describe the
    file as it now is (the new content when written), so a caller can pass them back as the next precondition.
    """

    path: Path
    diff: str
    applied: tuple[AppliedEdit, ...]
    written: bool
    dry_run: bool
    sha256: str
    mtime_ns: int

    @property
    def tolerances(self) -> tuple[Tolerance, ...]:
        used = {t for applied in self.applied for t in applied.tolerances}
        return tuple(t for t in ("line-endings", "trailing-whitespace", "indentation") if t in used)


P = ParamSpec("P")
T = TypeVar("T")


def _in_write_domain(method: Callable[Concatenate[WriteOps, P], T]) -> Callable[Concatenate[WriteOps, P], T]:
    """Run the operation on the boundary's write domain: threads the kernel lets write only beneath its roots."""

    @functools.wraps(method)
    def confined(self: WriteOps, /, *args: P.args, **kwargs: P.kwargs) -> T:
        if self.read_only:
            return method(self, *args, **kwargs)  # refuses, or a dry run that writes nothing
        return self.boundary.write_domain().run(lambda: method(self, *args, **kwargs))

    return confined


def _root_id(handle: Handle) -> tuple[int, int]:
    root = handle.root
    return root.dev, root.ino


class WriteOps:
    """The writing half of :class:`~rootbound.RootedFS` (mixed in; uses its boundary, policies and entry point)."""

    boundary: Boundary
    read_only: bool
    hardlinks: HardlinkPolicy
    max_read: int

    def _open(self, path: object, intent: Intent, below: tuple[str, ...] = ()) -> Handle:
        raise NotImplementedError  # RootedFS provides it

    def _undo(self) -> bool:
        """Whether this write must check after each syscall and undo one that landed outside: where the kernel
        does not hold the write domain to the roots (no Landlock), the ``..`` proof before the syscall has a window
        (a directory moved out during or after the walk), and checking again after it is what remains."""
        return not self.boundary.write_domain().enforced

    # -- whole files -------------------------------------------------------------------------------------------

    @_in_write_domain
    def write_bytes(
        self,
        path: object,
        data: bytes,
        *,
        exclusive: bool = False,
        create_parents: bool = False,
        mode: int = 0o666,
        expected_hash: str | None = None,
    ) -> Path:
        """Write ``data`` atomically (temp + rename beside the target); returns the canonical path written.

        ``exclusive=True`` only creates: an existing entry (a symlink included) is :class:`~rootbound.PathExists`.
        ``create_parents`` creates missing parent directories first (as :meth:`create_directory`). A new file gets
        permission bits ``mode`` minus the umask; a replaced file keeps its permission bits. ``expected_hash``
        (SHA-256 hex) replaces only a file with exactly that content, checked as :meth:`edit_file` checks it: read
        beneath the held directory, again once the new content is durable, and inode, size and mtime last before
        the rename; otherwise :class:`~rootbound.text.edit.FileChanged` and nothing is written.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("data must be bytes")
        if self.read_only:
            raise ReadOnly()
        if create_parents:
            parent = _parent_candidate(path)
            if parent is not None:
                self.create_directory(parent)
        with self._open(path, CREATE if exclusive else WRITE) as handle:
            name = handle.name
            assert name is not None
            existing = handle.lstat()
            if existing is not None:
                if exclusive:
                    raise PathExists()
                check_file(existing, self.hardlinks, writing=True)
            keep = existing.st_mode if existing is not None else None
            was = None if expected_hash is None else self._matching(handle.fd, name, expected_hash)
            temp = write_temp(handle.fd, data, new_mode=mode, keep_mode=keep)
            if was is not None:
                self._unchanged(handle, name, was, temp)
            try:
                expect = was[1] if was is not None else None
                publish(
                    handle.fd,
                    temp,
                    name,
                    root=_root_id(handle),
                    replace=not exclusive,
                    undo=self._undo(),
                    expect=expect,
                )
            except FileExistsError:
                raise PathExists() from None  # appeared meanwhile (a planted link included): not replaced
            return handle.path

    def write_text(
        self,
        path: object,
        text: str,
        *,
        encoding: str = "utf-8",
        exclusive: bool = False,
        create_parents: bool = False,
        mode: int = 0o666,
    ) -> Path:
        """:meth:`write_bytes` of ``text`` encoded."""
        data = text.encode(encoding)
        return self.write_bytes(path, data, exclusive=exclusive, create_parents=create_parents, mode=mode)

    @_in_write_domain
    def edit_file(
        self,
        path: object,
        edits: Sequence[Edit],
        *,
        expected_hash: str | None = None,
        expected_mtime_ns: int | None = None,
        dry_run: bool = False,
        encoding: str = "utf-8",
    ) -> EditOutcome:
        """Apply ``edits`` (see :func:`rootbound.text.edit.apply_edits`) to one text file, all or nothing.

        ``expected_hash`` (SHA-256 hex of the bytes) and ``expected_mtime_ns`` are preconditions: if the file no
        longer matches, :class:`~rootbound.text.edit.FileChanged` and nothing is written. ``dry_run`` returns the diff
        without writing (allowed on a read-only ``RootedFS``).
        """
        if dry_run:
            with self._open(path, _PREVIEW) as handle:
                data, st = self._read_checked(handle.fd, handle.reopen, writing=False)
                result = _apply(data, st, edits, expected_hash, expected_mtime_ns, encoding)
                path_ = handle.path
                diff = result.diff(str(path_))
                return EditOutcome(path_, diff, result.applied, False, True, content_hash(data), st.st_mtime_ns)
        if self.read_only:
            raise ReadOnly()
        with self._open(path, WRITE) as handle:
            name = handle.name
            assert name is not None
            data, st = self._read_name(handle.fd, name)
            result = _apply(data, st, edits, expected_hash, expected_mtime_ns, encoding)
            path_ = handle.path
            diff = result.diff(str(path_))
            if not result.changed:
                return EditOutcome(path_, diff, result.applied, False, False, content_hash(data), st.st_mtime_ns)
            new = result.after.encode(encoding)
            temp = write_temp(handle.fd, new, keep_mode=st.st_mode)
            self._unchanged(handle, name, (data, st), temp)  # replaced, grown, touched or written in place?
            # Then inode, size and mtime once more, last before the rename (after the ``..`` proof): replaced,
            # grown or touched since it was read is never overwritten.
            publish(handle.fd, temp, name, root=_root_id(handle), replace=True, undo=self._undo(), expect=st)
            written = handle.lstat()
            mtime = written.st_mtime_ns if written is not None else st.st_mtime_ns
            return EditOutcome(path_, diff, result.applied, True, False, content_hash(new), mtime)

    def _matching(self, dir_fd: int, name: str, expected_hash: str) -> tuple[bytes, os.stat_result]:
        """The file ``name`` (content and stat) if its SHA-256 is ``expected_hash``; else :class:`FileChanged`."""
        try:
            data, st = self._read_name(dir_fd, name)
        except FileNotFoundError:
            raise FileChanged() from None
        if content_hash(data) != expected_hash.lower():
            raise FileChanged()
        return data, st

    def _unchanged(self, handle: Handle, name: str, was: tuple[bytes, os.stat_result], temp: str) -> None:
        """Once the temp file is durable: the file is still the one read, with the same bytes, or the temp goes."""
        try:
            now = handle.lstat()
            if now is None or not same_file(now, was[1]) or self._read_name(handle.fd, name)[0] != was[0]:
                raise FileChanged()
        except BaseException:
            discard(handle.fd, temp)
            raise

    def _read_name(self, dir_fd: int, name: str) -> tuple[bytes, os.stat_result]:
        """The regular file ``name`` in ``dir_fd`` (never followed), read as :meth:`_read_checked` reads."""
        target = os.open(name, O_PATH | O_NOFOLLOW | O_CLOEXEC, dir_fd=dir_fd)
        try:
            return self._read_checked(target, lambda flags: _reopen(target, flags, dir_fd, name), writing=True)
        finally:
            os.close(target)

    def _read_bytes_of(self, dir_fd: int, name: str) -> bytes:
        return self._read_name(dir_fd, name)[0]

    def _read_checked(
        self, path_fd: int, reopen: Callable[[int], int], *, writing: bool
    ) -> tuple[bytes, os.stat_result]:
        """Read the regular file ``path_fd`` (an ``O_PATH`` fd) refers to: typed and policy-checked before it is
        opened for reading (a FIFO or device never is), and :class:`FileChanged` if it changes while read."""
        st = os.fstat(path_fd)
        if stat.S_ISLNK(st.st_mode):
            raise SymlinkEscape()  # swapped for a link since the parent was opened: not provably inside
        check_file(st, self.hardlinks, writing=writing)
        fd = reopen(_READ_FLAGS)
        try:
            before = os.fstat(fd)
            if (before.st_dev, before.st_ino) != (st.st_dev, st.st_ino):
                raise FileChanged()
            data = read_fd(fd, before, self.max_read)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        if not same_file(before, after) or len(data) != after.st_size:
            raise FileChanged()  # grew, shrank or was rewritten while it was read
        return data, after

    # -- directories -------------------------------------------------------------------------------------------

    @_in_write_domain
    def mkdir(self, path: object, *, parents: bool = False, exist_ok: bool = False, mode: int = 0o777) -> Path:
        """Create a directory beneath a root (``parents`` creates missing ancestors); returns its canonical path.

        ``mode`` is the permission bits (minus the umask), as for :func:`os.mkdir`.
        """
        if parents:
            return self.create_directory(path, exist_ok=exist_ok, mode=mode)
        if self.read_only:
            raise ReadOnly()
        try:
            with self._open(path, CREATE) as handle:
                name = handle.name
                assert name is not None
                if not beneath(handle.fd, _root_id(handle)):
                    raise OutsideRoots("moved outside roots")
                try:
                    os.mkdir(name, mode, dir_fd=handle.fd)
                    fd = handle.fd
                    undo_if_outside(fd, _root_id(handle), lambda: os.rmdir(name, dir_fd=fd), enabled=self._undo())
                    return handle.path
                except FileExistsError:
                    if not exist_ok:
                        raise PathExists() from None
        except IsADirectory:  # the root itself
            if not exist_ok:
                raise PathExists() from None
        try:  # it exists: acceptable only as a directory (an in-root symlink to one is followed)
            with self._open(path, DIRECTORY) as handle:
                return handle.path
        except NotADirectory:
            raise PathExists() from None

    @_in_write_domain
    def create_directory(self, path: object, *, exist_ok: bool = True, mode: int = 0o777) -> Path:
        """Create a directory and any missing ancestors; returns its canonical path.

        The deepest existing ancestor is opened through the entry point (in-root links followed, as for any
        path); each missing level is then created beneath the previous level's fd and opened ``O_NOFOLLOW``, so a
        link planted at a new level is refused, never followed. Before each ``mkdir`` the directory is proven
        beneath its root.
        """
        if self.read_only:
            raise ReadOnly()
        absolute, parts = parse_candidate(path)
        lead = "/" if absolute else ""
        for depth in range(len(parts), -1, -1):
            try:
                with self._open(lead + "/".join(parts[:depth]) or ".", DIRECTORY) as handle:
                    if depth == len(parts):
                        if not exist_ok:
                            raise PathExists()
                        return handle.path
                    return _create_levels(handle, tuple(parts[depth:]), mode, undo=self._undo())
            except PathNotFound:
                if depth == 0:
                    raise
        raise PathNotFound()  # pragma: no cover - depth 0 (a root, or outside) returns or raises

    # -- moves and deletes ---------------------------------------------------------------------------------------

    @_in_write_domain
    def move(
        self, source: object, destination: object, *, overwrite: bool = False, expected_hash: str | None = None
    ) -> Path:
        """Rename ``source`` to ``destination`` (both beneath roots of this boundary); returns the new path.

        A symlink is moved as itself. Refused: a root, a directory holding a root, a directory into itself, and
        an existing destination unless ``overwrite`` (which replaces only a regular file the hard-link policy
        allows, never a directory, link or special file). Across file systems the kernel refuses
        (:class:`~rootbound.FileOperationFailed`); nothing is copied. ``expected_hash``: only a regular file with
        that SHA-256 moves (taken first, as a conditional delete takes it), else ``FileChanged`` and nothing moved.
        """
        if self.read_only:
            raise ReadOnly()
        with contextlib.ExitStack() as stack:
            src = self._enter_parent(stack, source, _NAMED_PARENT)
            dst = self._enter_parent(stack, destination, CREATE)
            assert src.name is not None
            assert dst.name is not None
            moving = src.lstat()
            if moving is None:
                raise PathNotFound()
            is_dir = stat.S_ISDIR(moving.st_mode)
            if expected_hash is not None and not stat.S_ISREG(moving.st_mode):
                raise NotAFile()  # only a file's content has a digest
            if is_dir:
                if beneath(dst.fd, (moving.st_dev, moving.st_ino)):
                    raise InvalidPath("a directory cannot be moved into itself")
                carried = src.path
                if any(root.path == carried or carried in root.path.parents for root in self.boundary):
                    raise InvalidPath("a root cannot be moved or replaced")
            existing = dst.lstat()
            if existing is not None:
                if not overwrite:
                    raise PathExists()
                check_file(existing, self.hardlinks, writing=True)  # a regular file, or refused
                if is_dir:
                    raise NotADirectory()
            if not beneath(src.fd, _root_id(src)) or not beneath(dst.fd, _root_id(dst)):
                raise OutsideRoots("moved outside roots")
            taking: contextlib.AbstractContextManager[str] = contextlib.nullcontext(src.name)
            if expected_hash is not None:
                taking = taken_matching(src.fd, src.name, _root_id(src), expected_hash, self._read_bytes_of)
            try:
                with taking as name:
                    _rename_checked(src, name, dst, overwrite=overwrite, directory=is_dir, undo=self._undo())
            except FileExistsError:
                raise PathExists() from None
            except OSError as exc:
                if exc.errno == errno.EXDEV:
                    raise FileOperationFailed("crosses file systems") from None
                if exc.errno == errno.EINVAL:
                    raise InvalidPath("a directory cannot be moved into itself") from None
                raise
            fsync_dir(src.fd)
            fsync_dir(dst.fd)
            return dst.path

    def _enter_parent(self, stack: contextlib.ExitStack[bool | None], path: object, intent: Intent) -> Handle:
        """Open ``path``'s parent for a rename; a root itself (which has no parent to rename in) is refused."""
        try:
            return stack.enter_context(self._open(path, intent))
        except (IsADirectory, ReadOnly):  # what the entry point answers for a directory root / a file root
            raise InvalidPath("a root cannot be moved or replaced") from None

    @_in_write_domain
    def delete_file(self, path: object, *, expected_hash: str | None = None) -> Path:
        """Remove one file (or one symlink, never its target); returns the path removed.

        Directories are refused (:class:`~rootbound.IsADirectory`): there is no recursive delete. A hard-linked
        file only loses this name (its content stays under the others), so the hard-link policy does not apply.
        ``expected_hash``: only a regular file with that SHA-256 (``conditional_delete``), else ``FileChanged``.
        """
        if self.read_only:
            raise ReadOnly()
        with self._open(path, _NAMED_PARENT) as handle:
            name = handle.name
            assert name is not None
            existing = handle.lstat()
            if existing is None:
                raise PathNotFound()
            if stat.S_ISDIR(existing.st_mode):
                raise IsADirectory()
            if not (stat.S_ISREG(existing.st_mode) or stat.S_ISLNK(existing.st_mode)):
                raise NotAFile()
            if not beneath(handle.fd, _root_id(handle)):
                raise OutsideRoots("moved outside roots")
            if expected_hash is not None:
                delete_matching(handle.fd, name, _root_id(handle), expected_hash, self._read_bytes_of)
            else:
                unlink_checked(handle.fd, name, _root_id(handle), undo=self._undo())
            fsync_dir(handle.fd)
            return handle.path


def _apply(
    data: bytes,
    st: os.stat_result,
    edits: Sequence[Edit],
    expected_hash: str | None,
    expected_mtime_ns: int | None,
    encoding: str,
) -> EditResult:
    """Check the preconditions against what was read, decode, and apply the edits (pure from here on)."""
    if expected_hash is not None and content_hash(data) != expected_hash.lower():
        raise FileChanged()
    if expected_mtime_ns is not None and st.st_mtime_ns != expected_mtime_ns:
        raise FileChanged()
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        raise NotText() from None
    return apply_edits(text, edits)


def _parent_candidate(path: object) -> str | None:
    """The candidate naming ``path``'s parent directory, lexically (``None`` if it is the first root itself)."""
    absolute, parts = parse_candidate(path)
    if len(parts) < (1 if absolute else 2):
        return None
    return ("/" if absolute else "") + "/".join(parts[:-1])


def _create_levels(handle: Handle, names: tuple[str, ...], mode: int, *, undo: bool) -> Path:
    """Create ``names`` one below the other, starting in the directory ``handle``, each beneath the last fd."""
    if ".." in names:
        raise InvalidPath("'..' in a new directory path")  # checked before anything is created
    root = _root_id(handle)
    current = os.dup(handle.fd)
    created = handle.path
    try:
        for name in names:
            checkpoint()  # thousands of levels fit in a path: each one a few syscalls (issue 48 #5)
            if not beneath(current, root):
                raise OutsideRoots("moved outside roots")
            try:
                os.mkdir(name, mode, dir_fd=current)
            except FileExistsError:
                pass  # made meanwhile: the open below checks what it is
            else:
                undo_if_outside(current, root, functools.partial(os.rmdir, name, dir_fd=current), enabled=undo)
            try:
                fd = os.open(name, _NEW_DIR, dir_fd=current)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    if stat.S_ISLNK(os.stat(name, dir_fd=current, follow_symlinks=False).st_mode):
                        raise SymlinkEscape() from None  # a link at a level to be created: never followed
                    raise NotADirectory() from None
                raise
            parent_dev = os.fstat(current).st_dev
            os.close(current)
            current = fd
            if os.fstat(current).st_dev != parent_dev:
                raise OutsideRoots("crosses a mount")
            created = created / name
    finally:
        os.close(current)
    return created


def _reopen(path_fd: int, flags: int, dir_fd: int, name: str) -> int:
    """A new fd with ``flags`` on the object ``path_fd`` (``O_PATH``) refers to: through procfs the object itself;
    without procfs ``name`` is opened again in ``dir_fd`` (``O_NOFOLLOW``) and must be the same inode."""
    try:
        return proc_open(path_fd, flags)
    except FileNotFoundError:
        if has_procfs():
            raise PathNotFound() from None
    fd = os.open(name, flags | O_NOFOLLOW | O_CLOEXEC, dir_fd=dir_fd)
    mine, theirs = os.fstat(path_fd), os.fstat(fd)
    if (mine.st_dev, mine.st_ino) != (theirs.st_dev, theirs.st_ino):
        os.close(fd)
        raise FileChanged()
    return fd


def _rename_new(src_fd: int, src: str, dst_fd: int, dst: str, *, directory: bool) -> None:
    """Rename without replacing anything: ``RENAME_NOREPLACE``; where the kernel or filesystem lacks it, ``link`` +
    ``unlink`` for a file (``link`` refuses an existing name too), and a refusal for a directory."""
    try:
        rename_noreplace(src_fd, src, dst_fd, dst)
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOSYS, errno.EINVAL):
            raise
        if directory:
            raise FileOperationFailed("no atomic rename without replace") from None
    os.link(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
    os.unlink(src, dir_fd=src_fd)


def _rename_checked(src: Handle, src_name: str, dst: Handle, *, overwrite: bool, directory: bool, undo: bool) -> None:
    """The move's rename; with ``undo`` (no kernel wall), both directories are checked after it and a move that
    took something from or put something into a directory outside is renamed back. An ``overwrite`` is then a
    ``RENAME_EXCHANGE``, so the replaced file is kept (under the source name) until the check passes."""
    assert dst.name is not None
    src_fd, dst_fd, dst_name = src.fd, dst.fd, dst.name

    def check(back: Callable[[], object]) -> None:
        undo_if_outside(dst_fd, _root_id(dst), back, enabled=undo)
        undo_if_outside(src_fd, _root_id(src), back, enabled=undo)

    if overwrite and undo:
        try:
            exchange(src_fd, src_name, dst_fd, dst_name)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOSYS, errno.EINVAL):
                raise
        else:
            check(lambda: exchange(src_fd, src_name, dst_fd, dst_name))
            discard(src_fd, src_name)  # the replaced file, now under the source name
            return
    if overwrite:
        os.rename(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    else:
        _rename_new(src_fd, src_name, dst_fd, dst_name, directory=directory)
    check(lambda: rename_noreplace(dst_fd, dst_name, src_fd, src_name))
