"""Publishing writes beneath held directory fds: temp files, ``renameat2(RENAME_NOREPLACE)``, the beneath proof.

Why: a write is only atomic if the new content is complete before its name appears, and only confined if the
directory it lands in is still inside the root when it lands. So content goes to a fresh temp name
(``O_CREAT|O_EXCL|O_NOFOLLOW``) beside the target, is ``fsync``\\ ed, and is published by one rename relative
to the same directory fd: ``rename`` to replace, ``renameat2(RENAME_NOREPLACE)`` to create (a name that appears
meanwhile, a planted symlink included, makes it fail instead of being replaced). Just before publishing,
:func:`beneath` walks ``..`` from the directory fd up to the root's inode: a local process that moved the
directory out of the root before that gets the temp file removed and a denial, not a file outside. The walk is
not the syscall: a move during or after it is refused by the kernel on the write domain's threads
(``write_domain``), or, without Landlock, caught by :func:`undo_if_outside` after the syscall and undone.

Nothing here resolves a path: callers pass fds they opened beneath a root (``rootbound.confine.rooted_files``).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
import sys
from collections.abc import Callable
from typing import Final

from rootbound.confine.write_domain import leave_behind
from rootbound.core.errors import OutsideRoots
from rootbound.text.edit import FileChanged

__all__ = [
    "beneath",
    "discard",
    "exchange",
    "fsync_dir",
    "publish",
    "rename_noreplace",
    "same_file",
    "undo_if_outside",
    "write_temp",
]

RENAME_NOREPLACE: Final = 1
RENAME_EXCHANGE: Final = 2
MAX_DEPTH: Final = 2048  # a path of at most 4096 bytes has at most 2048 components
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_PATH: Final = getattr(os, "O_PATH", os.O_RDONLY)
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
_UP: Final = _O_PATH | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
TEMP_PREFIX: Final = ".rootbound-"
TEMP_SUFFIX: Final = ".tmp"


def _load_renameat2() -> object | None:
    if sys.platform != "linux":
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # no libc, or a libc without the wrapper (glibc < 2.28)
        return None
    function.restype = ctypes.c_int
    function.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    return function


_renameat2 = _load_renameat2()


def rename_noreplace(src_dir_fd: int, src: str, dst_dir_fd: int, dst: str) -> None:
    """``renameat2(..., RENAME_NOREPLACE)``: :class:`OSError` ``EEXIST`` if ``dst`` exists (even as a dangling
    symlink); ``ENOSYS`` where the libc or kernel lacks it, ``EINVAL`` where the filesystem does."""
    _rename2(src_dir_fd, src, dst_dir_fd, dst, RENAME_NOREPLACE)


def exchange(src_dir_fd: int, src: str, dst_dir_fd: int, dst: str) -> None:
    """``renameat2(..., RENAME_EXCHANGE)``: the two names trade objects atomically (both must exist: ``ENOENT``
    otherwise); ``ENOSYS``/``EINVAL`` where unsupported. Done twice, it is undone."""
    _rename2(src_dir_fd, src, dst_dir_fd, dst, RENAME_EXCHANGE)


def _rename2(src_dir_fd: int, src: str, dst_dir_fd: int, dst: str, flags: int) -> None:
    if _renameat2 is None:
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
    source, target = os.fsencode(src), os.fsencode(dst)
    if b"\x00" in source or b"\x00" in target:
        raise ValueError("embedded null byte")
    while True:
        if _renameat2(src_dir_fd, source, dst_dir_fd, target, flags) == 0:  # type: ignore[operator]
            return
        err = ctypes.get_errno()
        if err != errno.EINTR:
            raise OSError(err, os.strerror(err))


def beneath(fd: int, root: tuple[int, int], *, max_depth: int = MAX_DEPTH) -> bool:
    """Whether the directory ``fd`` is (at this instant) the directory ``root`` (``(st_dev, st_ino)``) or below it.

    Walks ``..`` with ``O_PATH|O_NOFOLLOW`` fds: the kernel's ``..`` of the object itself, not of any path name,
    so a moved directory is seen where it now is. Reaching ``/`` (its own parent) without meeting the root, or
    any error, is ``False``.
    """
    current = os.dup(fd)
    try:
        for _ in range(max_depth + 1):
            st = os.fstat(current)
            if (st.st_dev, st.st_ino) == root:
                return True
            parent = os.open("..", _UP, dir_fd=current)
            os.close(current)
            current = parent
            up = os.fstat(current)
            if (up.st_dev, up.st_ino) == (st.st_dev, st.st_ino):
                return False  # "/" is its own parent
        return False
    except OSError:
        return False
    finally:
        os.close(current)


def write_temp(
    dir_fd: int, data: bytes | bytearray | memoryview, *, new_mode: int = 0o600, keep_mode: int | None = None
) -> str:
    """A new temp file beside the target holding ``data`` (written in full and ``fsync``\\ ed); returns its name.

    A new file gets ``new_mode`` minus the umask (as ``open`` gives it); ``keep_mode`` (a replaced file's
    ``st_mode``) is applied exactly with ``fchmod`` instead, so a replaced file keeps its bits.
    """
    name = f"{TEMP_PREFIX}{secrets.token_hex(8)}{TEMP_SUFFIX}"
    try:
        fd = os.open(name, _CREATE, 0o600 if keep_mode is not None else new_mode, dir_fd=dir_fd)
    except FileExistsError:
        raise  # not made by us: never removed
    except OSError:
        _discard_unopened(dir_fd, name)
        raise
    try:
        try:
            if keep_mode is not None:
                os.fchmod(fd, stat.S_IMODE(keep_mode))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        discard(dir_fd, name)
        raise
    return name


def _discard_unopened(dir_fd: int, name: str) -> None:
    """After a failed ``O_CREAT|O_EXCL`` open: the kernel may have made the file and then refused to open it.
    Landlock checks the right to make it on the directory (at creation) and the right to write it on the new
    file (at open): a directory moved out of the roots between the two leaves an empty file of ours at the fresh
    name, which is removed here (or left to the calling thread, as :func:`discard` does)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return  # not made: the usual case
    if stat.S_ISREG(st.st_mode) and st.st_size == 0 and st.st_nlink == 1:
        discard(dir_fd, name)


def discard(dir_fd: int, name: str) -> None:
    """Remove a temp file we created (best effort: it may already be gone). Where the write domain refuses
    (the directory was moved out of the roots after the file was made), it is left to the calling thread."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except PermissionError:
        leave_behind(dir_fd, name)
    except OSError:
        pass


def publish(
    dir_fd: int,
    temp: str,
    name: str,
    *,
    root: tuple[int, int],
    replace: bool,
    undo: bool = False,
    expect: os.stat_result | None = None,
) -> None:
    """Give the complete temp file its final ``name`` in ``dir_fd``, if ``dir_fd`` is still beneath ``root``.

    ``replace=False`` never replaces anything (:class:`FileExistsError`); it uses ``RENAME_NOREPLACE``, or, where
    that is unsupported, ``link`` + ``unlink`` (``link`` refuses an existing name the same way). On any failure
    the temp file is removed. A directory no longer beneath the root is :class:`~rootbound.OutsideRoots`.

    ``undo=True`` is for threads the kernel does not hold to the roots (no Landlock, ``write_domain``): the
    directory is checked again *after* the rename, and a rename that landed outside is undone: a created name is
    removed, a replaced file is put back (the replace is a ``RENAME_EXCHANGE``, so the old file is kept under the
    temp name until the check passes).

    ``expect`` (an edit's precondition: the file as it was read) is checked last before the rename, after the
    ``..`` proof: another inode, size or modification time under ``name`` is
    :class:`~rootbound.text.edit.FileChanged` and nothing is replaced. With ``undo`` the replaced file is checked
    again after the exchange, and traded back if it changed in between.
    """
    try:
        if not beneath(dir_fd, root):
            raise OutsideRoots("moved outside roots")
        if expect is not None:
            try:
                now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                raise FileChanged() from None
            if not same_file(now, expect):
                raise FileChanged()  # written in place, replaced or touched since it was read
        if replace and undo and _exchanged(dir_fd, temp, name, root, expect):
            return
        if replace and not undo:
            os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:
            _create(dir_fd, temp, name)
            undo_if_outside(dir_fd, root, lambda: os.unlink(name, dir_fd=dir_fd), enabled=undo)
    except _Stranded:
        raise  # the temp name holds the replaced object: never remove it
    except BaseException:
        discard(dir_fd, temp)
        raise
    fsync_dir(dir_fd)


def fsync_dir(fd: int) -> None:
    """Make a rename in the directory ``fd`` durable, best effort: the rename itself happened (an ``O_PATH`` fd
    cannot be fsynced, and that is not a failure)."""
    with contextlib.suppress(OSError):
        os.fsync(fd)


class _Stranded(OutsideRoots):
    """A replace that landed outside and could not be traded back: the old object stays under the temp name."""


def same_file(a: os.stat_result, b: os.stat_result) -> bool:
    """Same inode with the same size and modification time: nothing changed it in between."""
    return (a.st_dev, a.st_ino, a.st_size, a.st_mtime_ns) == (b.st_dev, b.st_ino, b.st_size, b.st_mtime_ns)


def _create(dir_fd: int, temp: str, name: str) -> None:
    try:
        rename_noreplace(dir_fd, temp, dir_fd, name)
    except OSError as exc:
        if exc.errno not in (errno.ENOSYS, errno.EINVAL):
            raise
        os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        discard(dir_fd, temp)


def _exchanged(dir_fd: int, temp: str, name: str, root: tuple[int, int], expect: os.stat_result | None) -> bool:
    """Replace ``name`` by trading it with ``temp``, check, and keep or undo the trade. ``False``: nothing to trade
    with (``name`` is gone: the caller creates it) or no ``RENAME_EXCHANGE`` here (the caller renames)."""
    try:
        exchange(dir_fd, temp, dir_fd, name)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOSYS, errno.EINVAL):
            return False
        raise
    old = os.stat(temp, dir_fd=dir_fd, follow_symlinks=False)
    changed = expect is not None and not same_file(old, expect)
    if not changed and beneath(dir_fd, root) and not stat.S_ISDIR(old.st_mode):
        discard(dir_fd, temp)  # the replaced file
        return True
    try:
        exchange(dir_fd, temp, dir_fd, name)  # put the old object back under its name; ours is the temp again
    except OSError:
        # Cannot put it back: keep both (never remove what was there), and say the write did not happen here.
        raise _Stranded("moved outside roots") from None
    if changed:
        raise FileChanged()
    if stat.S_ISDIR(old.st_mode):
        raise FileExistsError(errno.EEXIST, "a directory took the name")
    raise OutsideRoots("moved outside roots")


def undo_if_outside(dir_fd: int, root: tuple[int, int], undo: Callable[[], object], *, enabled: bool = True) -> None:
    """After a syscall in ``dir_fd``: if the directory is no longer beneath ``root``, run ``undo`` and refuse.

    Closes nothing by itself: the syscall already ran in a directory that may have been outside at that instant;
    this makes its effect short-lived and the call a denial, where the kernel does not check (no Landlock).
    """
    if enabled and not beneath(dir_fd, root):
        with contextlib.suppress(OSError):
            undo()
        raise OutsideRoots("moved outside roots")
