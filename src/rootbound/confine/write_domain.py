"""The kernel's wall for writes: worker threads that Landlock lets write only beneath one set of roots.

Why: a writing operation acts on a directory fd opened beneath a root, and a local process can move that directory
out of the root between any check of ours and the syscall (``docs/threats.md``, "writes while directories move").
Landlock checks each write against where the object sits in the tree *at the moment of the syscall*: a thread
restricted to writing beneath exactly the effective roots cannot create, replace, rename or remove anything
outside them, whatever moved meanwhile. Landlock restricts the calling thread (and the threads it starts), never
the rest of the process, so each set of roots gets threads of its own, kept as long as the
:class:`~rootbound.Boundary` that holds those roots; reading threads are not touched.

Where the kernel has no Landlock (or refuses the ruleset), :attr:`WriteDomain.enforced` is false and the writing
operations rely on their ``..`` proof and on checking after the syscall (``rootbound.confine.write_ops``).
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.thread import BrokenThreadPool
from typing import Final, TypeVar

from rootbound.confine import landlock as ll
from rootbound.core.errors import FileOperationFailed

__all__ = ["GRANTED", "WRITE_RIGHTS", "WriteDomain", "leave_behind"]

T = TypeVar("T")

WORKERS: Final = 4  # writes of one root set in parallel: a slow fsync does not hold up the others
START_TIMEOUT: Final = 30.0  # seconds for the workers to start; only a starved machine comes near it
# Every right that changes the tree or a file: handled, so each one not granted below is denied everywhere.
WRITE_RIGHTS: Final = (
    ll.ACCESS_FS_WRITE_FILE
    | ll.ACCESS_FS_REMOVE_DIR
    | ll.ACCESS_FS_REMOVE_FILE
    | ll.ACCESS_FS_MAKE_CHAR
    | ll.ACCESS_FS_MAKE_DIR
    | ll.ACCESS_FS_MAKE_REG
    | ll.ACCESS_FS_MAKE_SOCK
    | ll.ACCESS_FS_MAKE_FIFO
    | ll.ACCESS_FS_MAKE_BLOCK
    | ll.ACCESS_FS_MAKE_SYM
    | ll.ACCESS_FS_REFER
    | ll.ACCESS_FS_TRUNCATE
)
# What the writing operations do beneath a root. MAKE_SYM only because moving a symlink makes one at its new
# name (Landlock checks the moved object's type); nothing in rootbound calls symlink().
GRANTED: Final = (
    ll.ACCESS_FS_WRITE_FILE
    | ll.ACCESS_FS_REMOVE_DIR
    | ll.ACCESS_FS_REMOVE_FILE
    | ll.ACCESS_FS_MAKE_DIR
    | ll.ACCESS_FS_MAKE_REG
    | ll.ACCESS_FS_MAKE_SYM
    | ll.ACCESS_FS_REFER
    | ll.ACCESS_FS_TRUNCATE
)

_local = threading.local()  # .domain: the WriteDomain whose worker this is; .leftovers: the call's (see below)


def leave_behind(dir_fd: int, name: str) -> None:
    """On a worker whose domain refused to remove a temp file of ours (its directory was moved out of the roots
    after the file was made): the calling thread, which the domain does not restrict, removes it once the call is
    over, if the name still holds that same file. Elsewhere: nothing to do (the removal already failed for good)."""
    leftovers: list[tuple[int, str, int, int]] | None = getattr(_local, "leftovers", None)
    if leftovers is None:
        return
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return
    leftovers.append((os.dup(dir_fd), name, st.st_dev, st.st_ino))


def _tidy(leftovers: list[tuple[int, str, int, int]]) -> None:
    for dir_fd, name, dev, ino in leftovers:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if (st.st_dev, st.st_ino) == (dev, ino) and stat.S_ISREG(st.st_mode):
                os.unlink(name, dir_fd=dir_fd)
        except OSError:
            pass  # gone, or refused by the process's own sandbox: nothing more to do
        finally:
            os.close(dir_fd)


def _restrict(root_fds: Sequence[int], domain: WriteDomain) -> None:
    """A worker's first act: restrict itself to writing beneath ``root_fds`` (irreversible for this thread)."""
    handled = WRITE_RIGHTS & ll.fs_rights(domain.abi)
    with ll.Ruleset(handled) as ruleset:
        for fd in root_fds:
            grant = GRANTED & handled
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                grant &= ll.FILE_RIGHTS  # a rule on a file may only grant what applies to a file
            ruleset.allow_path(fd, grant)
        ruleset.restrict_self()
    _local.domain = domain


class WriteDomain:
    """Worker threads restricted (by Landlock, when the kernel has it) to writing beneath the given roots.

    :meth:`run` calls a function on one of them and returns its result (or raises its exception). A call made
    from a worker of this domain runs in place (a write that creates its parents first does not wait on itself).
    """

    def __init__(self, root_fds: Sequence[int], *, abi: int | None = None) -> None:
        self.abi = ll.abi_version() if abi is None else abi
        self.pid = os.getpid()  # a forked child has none of these threads: it makes a domain of its own
        self.enforced = False
        self._pool: ThreadPoolExecutor | None = None
        if self.abi < 1 or not root_fds:
            return
        pool = ThreadPoolExecutor(
            max_workers=WORKERS,
            thread_name_prefix="rootbound-writes",
            initializer=_restrict,
            initargs=(tuple(root_fds), self),
        )
        # Every worker starts (and restricts itself) now, while the caller holds the root fds open: a worker
        # started later could read fd numbers closed and reused meanwhile. A ruleset the kernel refuses is known
        # here, not at the first write.
        barrier = threading.Barrier(WORKERS)
        started = [pool.submit(barrier.wait, START_TIMEOUT) for _ in range(WORKERS)]
        try:
            for future in started:
                future.result()
        except (BrokenThreadPool, threading.BrokenBarrierError):
            barrier.abort()
            pool.shutdown(wait=False)
            return
        self._pool = pool
        self.enforced = True

    def run(self, function: Callable[[], T]) -> T:
        """``function()`` on a restricted worker (in place where the domain is not enforced, or on a worker)."""
        pool = self._pool
        if pool is None or getattr(_local, "domain", None) is self:
            return function()
        leftovers: list[tuple[int, str, int, int]] = []

        def call() -> T:
            _local.leftovers = leftovers
            try:
                return function()
            finally:
                _local.leftovers = None

        try:
            future = pool.submit(call)
        except (BrokenThreadPool, RuntimeError):  # a worker could not restrict itself, or the domain was closed
            raise FileOperationFailed("write domain unavailable") from None
        try:
            return future.result()
        finally:
            _tidy(leftovers)

    def close(self) -> None:
        """Let the workers end once idle (the roots' fds may be closed after this: each worker holds its domain)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)
