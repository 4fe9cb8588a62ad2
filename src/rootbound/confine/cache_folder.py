"""The search index's cache folder, reached one component at a time without following links (issue 48 #8): the
wall's one place outside every root, so it is opened the way the wall opens what is under a root.

Why: ``~/.cache/rootbound/index`` was made with ``mkdir(parents=True)`` and its stale folders removed with
``shutil.rmtree`` by name, so a link planted anywhere above it (by a process that can write one of those
directories) sent the start-up clean-up, ``--clear-index`` and the postings into the link's target. Here every
component from ``/`` down is opened with ``O_NOFOLLOW`` beneath the previous one's fd, and must be a directory
owned by root or this user that no one else may write (unless sticky, as ``/tmp``: then only its owner can rename
or remove what is in it), so no other user can swap a component later either. The folders rootbound makes
(``rootbound``, ``index``, one per process) are made ``0700``, owned by this user, and what is removed under them is
removed through fds, never by a name resolved again from ``/``.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "SavedEntry",
    "hold_secure",
    "make_private",
    "open_saved",
    "open_secure",
    "remove_matching",
    "remove_under",
    "saved_entries",
    "touch",
    "write_saved",
]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _safe(st: os.stat_result, own: bool) -> bool:
    if not stat.S_ISDIR(st.st_mode):
        return False
    if own:
        return st.st_uid == os.getuid() and not st.st_mode & 0o077
    if st.st_uid not in (0, os.getuid()):
        return False
    return not st.st_mode & 0o022 or bool(st.st_mode & stat.S_ISVTX)


@contextlib.contextmanager
def open_secure(path: Path, *, made: int) -> Iterator[int]:
    """The directory ``path`` (absolute) as an fd, each component opened without following links; its last
    ``made`` components are rootbound's own (created ``0700`` when missing, and required to be this user's with
    no access for others). Raises :class:`OSError` (``ELOOP``, ``EPERM``) when a component is a link or unsafe."""
    parts = [p for p in path.parts[1:] if p]
    if not path.is_absolute() or ".." in parts:
        raise OSError(13, "not an absolute path")
    fd = os.open("/", _DIR)
    try:
        for index, name in enumerate(parts):
            own = index >= len(parts) - made
            if own:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=fd)
            try:
                child = os.open(name, _DIR, dir_fd=fd)  # ELOOP (or ENOTDIR) on a link: never followed
            except FileNotFoundError:  # a missing parent (no ~/.cache yet): made as mkdir -p would, but 0700
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=fd)
                child = os.open(name, _DIR, dir_fd=fd)
            os.close(fd)
            fd = child
            st = os.fstat(fd)
            if own and stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and st.st_mode & 0o077:
                os.fchmod(fd, 0o700)  # ours, made wider by an older rootbound (parents made with the umask)
                st = os.fstat(fd)
            if not _safe(st, own):
                raise OSError(1, "an unsafe directory on the cache path")
        yield fd
    finally:
        os.close(fd)


def remove_under(dir_fd: int, name: str) -> None:
    """Remove ``name`` in ``dir_fd`` and everything beneath it, through fds, following no link."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        return
    fd = os.open(name, _DIR, dir_fd=dir_fd)
    try:
        for entry in os.listdir(fd):
            remove_under(fd, entry)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=dir_fd)


def remove_matching(dir_fd: int, stale: Callable[[str], bool]) -> int:
    """Remove each entry of ``dir_fd`` whose name ``stale`` picks (through fds, as :func:`remove_under`); how many
    went (one that cannot be removed is left, silently: the next start tries again)."""
    removed = 0
    for name in os.listdir(dir_fd):
        if stale(name):
            with contextlib.suppress(OSError):
                remove_under(dir_fd, name)
                removed += 1
    return removed


def make_private(dir_fd: int, name: str) -> bool:
    """``name`` in ``dir_fd`` made anew (whatever held the name first removed), mode 0700: whether it is now a
    directory of this user's."""
    remove_under(dir_fd, name)
    os.mkdir(name, 0o700, dir_fd=dir_fd)
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


# -- the saved indexes (issue 51): one file per DIR in a folder of this user's, held open from start -------------


def hold_secure(path: Path, *, made: int) -> int | None:
    """:func:`open_secure`'s fd, kept (the caller closes it): the saved indexes' folder, opened before the kernel
    sandbox (which would refuse the walk down from ``/``) and used beneath this fd alone afterwards. ``None``
    when it cannot be opened safely."""
    try:
        with open_secure(path, made=made) as fd:
            return os.dup(fd)
    except OSError:
        return None


_SAVED_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def open_saved(dir_fd: int, name: str, max_bytes: int) -> tuple[int, int] | None:
    """A saved file of ``dir_fd`` for reading, with its size: ``None`` unless it is a regular file (not a link,
    never followed), this user's, readable by no one else, and at most ``max_bytes``."""
    try:
        fd = os.open(name, _SAVED_READ, dir_fd=dir_fd)
    except OSError:
        return None
    st = os.fstat(fd)
    if (
        not stat.S_ISREG(st.st_mode)
        or st.st_uid != os.getuid()
        or st.st_mode & 0o077
        or st.st_nlink != 1
        or st.st_size > max_bytes
    ):
        os.close(fd)
        return None
    return fd, st.st_size


def write_saved(dir_fd: int, name: str, chunks: Iterable[bytes | memoryview]) -> int:
    """Write ``name`` in ``dir_fd`` atomically: a new file of its own (``O_EXCL``, 0600) filled, synced, then
    renamed over ``name`` and the folder synced, so a reader finds the old file or the whole new one, never a part
    (a server killed meanwhile leaves only its ``.tmp``, which no reader opens). Returns the bytes written;
    raises :class:`OSError` (the temporary file removed)."""
    tmp = f".{name}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=dir_fd)  # this process's own leftover
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    written = 0
    try:
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    done = os.write(fd, view)
                    view, written = view[done:], written + done
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)
    return written


class SavedEntry(NamedTuple):
    name: str
    size: int
    used_ns: int
    """Its modification time: when it was written or last used (:func:`touch`)."""


def saved_entries(dir_fd: int) -> list[SavedEntry]:
    """The entries of ``dir_fd`` (links not followed), for the bound on disk and its eviction."""
    found = []
    for name in os.listdir(dir_fd):
        with contextlib.suppress(OSError):
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            found.append(SavedEntry(name, st.st_size, st.st_mtime_ns))
    return found


def touch(fd: int) -> None:
    """Mark an opened saved file as used now (its modification time: least recently used goes first)."""
    with contextlib.suppress(OSError):
        os.utime(fd)
