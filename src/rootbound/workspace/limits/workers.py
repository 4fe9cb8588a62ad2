"""Worker threads of our own: at most ``limit`` at once, and an idle one ends after :data:`IDLE` seconds by itself.

Why not anyio's pool: anyio keeps an idle worker thread 10 s and retires it only on its next use (the next
``to_thread`` call), so after a burst of calls the server's threads stay up for 10 s at least, and for ever when no
call comes (issue 49: 200 sessions subscribing and closing must leave the threads at the baseline within 10 s,
counted). Here a thread with nothing to do waits :data:`IDLE` s for a job and then ends, whether or not anything
else happens. Calls wait in order (first come, first served) when all ``limit`` threads are busy; the fair shares
are :class:`~.call_slots.FairSlots`' business, before a call gets here.

:meth:`Workers.run` waits for its function to end even when the caller is cancelled (as ``anyio.to_thread``
does by default): the cancellation is delivered once the thread has finished, never while it still runs.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import threading
import time
import weakref
from collections.abc import Callable
from typing import Final, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

__all__ = ["IDLE", "Workers", "retire_idle"]

T = TypeVar("T")

IDLE: Final = 1.0
"""Seconds an idle worker thread waits for a job before it ends."""
_POOLS: weakref.WeakSet[Workers] = weakref.WeakSet()


def retire_idle() -> None:
    """Every pool's idle threads end now, and none waits for a job any more (a process about to exit: it joins
    what is still running, a call finishing, and should not wait out the idle ones)."""
    for pool in list(_POOLS):
        pool.retire_idle()


class Workers:
    """A bounded pool of worker threads whose idle threads end by themselves (one per event loop's server)."""

    def __init__(self, limit: int, *, idle: float = IDLE, name: str = "rootbound-worker") -> None:
        if limit <= 0 or idle <= 0:
            raise ValueError("limit and idle must be positive")
        self.limit = limit
        self._idle_for = idle
        self._name = name
        self._ready = threading.Condition()
        self._jobs: collections.deque[Callable[[], None]] = collections.deque()
        self._threads = 0
        self._idle = 0
        self._retiring = False
        _POOLS.add(self)

    def threads(self) -> int:
        """Worker threads alive now (busy or idle): what a test counts back to zero."""
        with self._ready:
            return self._threads

    def retire_idle(self) -> None:
        """Idle threads end now; from now on a thread ends as soon as it has nothing to do."""
        with self._ready:
            self._retiring = True
            self._ready.notify_all()

    async def run(self, function: Callable[[], T]) -> T:
        """``function()`` on a worker thread (the caller's context variables copied); its result, or its error."""
        await anyio.lowlevel.checkpoint()
        token = anyio.lowlevel.current_token()
        done = anyio.Event()
        outcome: list[tuple[bool, object]] = []
        context = contextvars.copy_context()

        def job() -> None:
            try:
                outcome.append((True, context.run(function)))
            except BaseException as error:  # handed to the caller, raised there
                outcome.append((False, error))
            with contextlib.suppress(Exception):  # the loop has gone: nobody waits any more
                anyio.from_thread.run_sync(done.set, token=token)

        self._submit(job)
        with anyio.CancelScope(shield=True):  # the work is waited for, never abandoned on its thread
            await done.wait()
        ok, value = outcome[0]
        if not ok:
            assert isinstance(value, BaseException)
            raise value
        return value  # type: ignore[return-value]

    def _submit(self, job: Callable[[], None]) -> None:
        with self._ready:
            self._jobs.append(job)
            if self._idle >= len(self._jobs):
                self._ready.notify()
            elif self._threads < self.limit:
                self._threads += 1
                try:
                    # not a daemon: a process that exits joins a call still running (a write finishing), as it
                    # joined anyio's workers; the idle ones end first (retire_idle)
                    threading.Thread(target=self._serve, name=self._name, daemon=False).start()
                except BaseException:
                    self._threads -= 1
                    self._jobs.remove(job)
                    raise
            # else: every thread is busy; the first to finish takes it

    def _serve(self) -> None:
        with self._ready:
            while True:
                if not self._jobs:
                    end = time.monotonic() + self._idle_for
                    self._idle += 1
                    try:
                        while not self._jobs and not self._retiring and (left := end - time.monotonic()) > 0:
                            self._ready.wait(left)
                    finally:
                        self._idle -= 1
                    if not self._jobs:  # idle for IDLE s: this thread ends
                        self._threads -= 1
                        return
                job = self._jobs.popleft()
                self._ready.release()
                try:
                    job()
                finally:
                    self._ready.acquire()
