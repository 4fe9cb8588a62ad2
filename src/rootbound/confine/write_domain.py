"""The kernel's wall for writes: worker threads that Landlock lets write only beneath one set of roots.

Why: a writing operation acts on a directory fd opened beneath a root, and a local process can move that directory
out of the root between any check of ours and the syscall (``docs/threats.md``, "writes while directories move").
Landlock checks each write against where the object sits in the tree *at the moment of the syscall*: a thread
restricted to writing beneath exactly the effective roots cannot create, replace, rename or remove anything
outside them, whatever moved meanwhile. Landlock restricts the calling thread (and the threads it starts), never
the rest of the process, so each set of roots gets threads of its own; reading threads are not touched.

Lifetimes (issue 33 #1, #2). A domain's ruleset is built once, at its root set's first write (one fd); its threads
start only when a write waits for one, each restricting itself with that ruleset first, and end after
:data:`IDLE` seconds without work, at once when another root set waits for a thread, and when the domain closes.
The process has at most :data:`MAX_THREADS` write threads whatever the number of root sets, one root set at most
:data:`PER_DOMAIN`, and writes waiting for a thread are served in arrival order.

The wall is there or the write fails: where the kernel has Landlock, anything that keeps a ruleset or a thread
from being made (``EMFILE``, no thread to be had) refuses that one write with :class:`~rootbound.core.errors.
ServerBusy` ("retry"), and the next write tries again. Only a kernel without Landlock makes a domain that is not
:attr:`WriteDomain.enforced`; the writing operations then rely on their ``..`` proof and on checking after the
syscall (``rootbound.confine.write_ops``).
"""

from __future__ import annotations

import contextvars
import errno
import os
import stat
import threading
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Final, TypeVar

from rootbound.confine import landlock as ll
from rootbound.confine.syscalls import name_thread
from rootbound.core.errors import FileOperationFailed, ServerBusy

__all__ = [
    "GRANTED",
    "WRITE_RIGHTS",
    "WriteDomain",
    "WriteThreads",
    "leave_behind",
    "on_write_worker",
    "write_wall",
]

T = TypeVar("T")

MAX_THREADS: Final = 16  # write threads in the whole process, whatever the number of root sets
PER_DOMAIN: Final = 4  # writes of one root set in parallel: a slow fsync does not hold up the others
IDLE: Final = 2.0  # seconds a worker with nothing to do waits for more of its root set's writes before it ends
WAIT: Final = 30.0  # seconds a write may wait for a thread before it is refused as busy
THREAD_NAME: Final = "rootbound-write"  # also the kernel's name of the thread (15 bytes at most)
TRANSIENT: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN, errno.ENOSPC})
"""Errnos that say "not now" (out of fds, memory, threads): a busy refusal, never the fallback."""
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


def write_wall() -> str:
    """What holds this process's writes beneath their roots, in words (``serve``'s start-up line and ``list_roots``)."""
    abi = ll.abi_version()
    if abi >= 1:
        return f"the kernel (Landlock ABI {abi}: each root set's writes run on threads restricted to its roots)"
    return "checks before and after each syscall, undoing what lands outside (this kernel has no Landlock)"


def on_write_worker() -> bool:
    """Whether the calling thread is a write domain's worker (restricted by Landlock to that domain's roots)."""
    return getattr(_local, "domain", None) is not None


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


def _ruleset(root_fds: Sequence[int], abi: int) -> int:
    """A finished ruleset (its fd) that allows writing beneath ``root_fds`` only (the fds must be open now)."""
    handled = WRITE_RIGHTS & ll.fs_rights(abi)
    with ll.Ruleset(handled) as ruleset:
        for fd in root_fds:
            grant = GRANTED & handled
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                grant &= ll.FILE_RIGHTS  # a rule on a file may only grant what applies to a file
            ruleset.allow_path(fd, grant)
        return ruleset.detach()


def _refusal(error: OSError) -> FileOperationFailed | ServerBusy:
    if error.errno in TRANSIENT:
        return ServerBusy()
    return FileOperationFailed("no write wall")  # the kernel has Landlock and refused it: writes fail closed


class WriteThreads:
    """The process's write threads, shared by every domain: at most ``cap``, handed out in arrival order."""

    def __init__(self, cap: int = MAX_THREADS) -> None:
        self.cap = cap
        self._reset()

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self.live = 0
        self._waiting: deque[object] = deque()
        self._domains: weakref.WeakSet[WriteDomain] = weakref.WeakSet()

    @property
    def contended(self) -> bool:
        """Whether a write waits for a thread (an idle worker of another root set then ends at once)."""
        return bool(self._waiting)

    def take(self, timeout: float) -> bool:
        """A thread's place, waiting at most ``timeout`` s behind earlier waiters; ``False`` if none came."""
        cond = self._cond
        with cond:
            if self.live < self.cap and not self._waiting:
                self.live += 1
                return True
            ticket = object()
            self._waiting.append(ticket)
            domains = list(self._domains)
        try:
            for domain in domains:
                domain._wake_idle()  # outside our lock: a worker ending takes it to give its place back
            with cond:
                taken = cond.wait_for(lambda: self._waiting[0] is ticket and self.live < self.cap, timeout)
                if taken:
                    self.live += 1
                return taken
        finally:
            with cond:
                self._waiting.remove(ticket)
                cond.notify_all()

    def register(self, domain: WriteDomain) -> None:
        with self._cond:
            self._domains.add(domain)

    def unregister(self, domain: WriteDomain) -> None:
        with self._cond:
            self._domains.discard(domain)

    def give_back(self) -> None:
        with self._cond:
            self.live -= 1
            self._cond.notify_all()


THREADS: Final = WriteThreads()
os.register_at_fork(after_in_child=THREADS._reset)  # a child of fork() has none of the parent's threads


class WriteDomain:
    """Writes of one root set on threads restricted (by Landlock, when the kernel has it) to beneath its roots.

    :meth:`run` calls a function on one of them and returns its result (or raises its exception). A call made
    from a worker of this domain runs in place (a write that creates its parents first does not wait on itself).
    Made while the caller holds ``root_fds`` open; only the ruleset built from them is kept.
    """

    def __init__(self, root_fds: Sequence[int], *, abi: int | None = None, threads: WriteThreads = THREADS) -> None:
        self.abi = ll.abi_version() if abi is None else abi
        self.pid = os.getpid()  # a forked child has none of these threads: it makes a domain of its own
        self.enforced = self.abi >= 1 and bool(root_fds)
        """Whether the kernel holds this domain's writes beneath its roots; false only without Landlock."""
        self._threads = threads
        self._cond = threading.Condition(threading.Lock())
        self._jobs: deque[tuple[Future[object], Callable[[], object]]] = deque()
        self._workers = 0
        self._idle = 0
        self._closed = False
        self._ruleset: int | None = None
        if not self.enforced:
            return
        try:
            self._ruleset = _ruleset(root_fds, self.abi)
        except OSError as error:
            raise _refusal(error) from None
        self._finalizer = weakref.finalize(self, os.close, self._ruleset)
        threads.register(self)

    def run(self, function: Callable[[], T]) -> T:
        """``function()`` on a restricted worker (in place where the domain is not enforced, or on a worker)."""
        if not self.enforced or getattr(_local, "domain", None) is self:
            return function()
        leftovers: list[tuple[int, str, int, int]] = []
        caller = contextvars.copy_context()  # the call's budget check goes with its work (issue 48 #5)

        def call() -> T:
            _local.leftovers = leftovers
            try:
                return caller.run(function)
            finally:
                _local.leftovers = None

        future: Future[object] = Future()
        job = (future, call)
        try:
            self._submit(job)
            return future.result()  # type: ignore[return-value]
        finally:
            _tidy(leftovers)

    def _submit(self, job: tuple[Future[object], Callable[[], object]]) -> None:
        with self._cond:
            if self._closed:
                raise FileOperationFailed("write domain unavailable")
            self._jobs.append(job)
            if self._idle > 0:
                self._cond.notify()
                return
            if self._workers >= PER_DOMAIN:
                return  # a busy worker of ours takes it next
            self._workers += 1  # counted before the thread exists: two callers never both start the last one
        if not self._threads.take(WAIT):
            self._not_started(job)
            return
        try:
            threading.Thread(target=self._work, name=THREAD_NAME, daemon=True).start()
        except RuntimeError:  # can't start new thread: the machine is out of threads for now
            self._threads.give_back()
            self._not_started(job)

    def _not_started(self, job: tuple[Future[object], Callable[[], object]]) -> None:
        with self._cond:
            self._workers -= 1
            if job in self._jobs:  # no worker took it meanwhile: refused, nothing ran
                self._jobs.remove(job)
                job[0].set_exception(ServerBusy())

    def _work(self) -> None:
        name_thread(THREAD_NAME)
        try:
            with self._cond:
                ruleset = self._ruleset  # read and enforced under the lock: close() cannot close it meanwhile
                if ruleset is None:
                    raise OSError(errno.EBADF, "domain closed")
                ll.restrict_thread(ruleset)
        except OSError as error:
            self._end(_refusal(error))
            return
        _local.domain = self
        while True:
            with self._cond:
                job = self._next_job()
                if job is None:
                    self._workers -= 1
                    break
            future, call = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as exc:  # handed to the caller, who re-raises it
                    future.set_exception(exc)
        self._threads.give_back()

    def _next_job(self) -> tuple[Future[object], Callable[[], object]] | None:
        """The next write of ours, waiting up to :data:`IDLE` s for one (called under the lock)."""
        if not self._jobs and not self._closed and not self._threads.contended:
            self._idle += 1
            try:
                self._cond.wait_for(lambda: self._jobs or self._closed or self._threads.contended, IDLE)
            finally:
                self._idle -= 1
        return self._jobs.popleft() if self._jobs else None

    def _end(self, refusal: FileOperationFailed | ServerBusy) -> None:
        """A worker that could not restrict itself ends without running anything; a write nobody else will take
        is refused (the next write starts a worker again)."""
        with self._cond:
            self._workers -= 1
            stranded = list(self._jobs) if self._workers == 0 else []
            for job in stranded:
                self._jobs.remove(job)
        self._threads.give_back()
        for future, _call in stranded:
            future.set_exception(refusal)

    def _wake_idle(self) -> None:
        with self._cond:
            if self._idle:
                self._cond.notify_all()

    def close(self) -> None:
        """Refuse further writes; idle workers end now, busy ones after their write (each holds its domain). The
        roots' fds may be closed after this: only the ruleset was made from them, and it closes here."""
        with self._cond:
            self._closed = True
            ruleset, self._ruleset = self._ruleset, None
            self._cond.notify_all()
        if ruleset is not None:
            self._finalizer()  # closes the ruleset once: at exit the finaliser may have run before this close
        self._threads.unregister(self)
