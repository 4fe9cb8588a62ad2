"""Our worker threads (``limits/workers.py``, issue 49): bounded, idle ones end by themselves with no further use of
the pool, a cancelled caller still waits for its work, errors reach the caller. Counted, never timed: the waits
below are bounds on waiting (a loaded machine), not measurements."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from rootbound.workspace.limits.workers import Workers

WAIT = 30.0  # a bound on waiting, never a measurement


def named(name: str) -> int:
    return sum(thread.name == name for thread in threading.enumerate())


def test_idle_threads_end_by_themselves_without_another_call() -> None:
    pool = Workers(4, idle=0.2, name="test-workers-idle")

    async def main() -> None:
        gate = threading.Event()
        async with anyio.create_task_group() as tasks:
            for _ in range(4):
                tasks.start_soon(pool.run, lambda: gate.wait(WAIT))
            while pool.threads() < 4:
                await anyio.sleep(0.01)
            gate.set()
        assert named("test-workers-idle") >= 1  # they outlive their work for a while (reused)...
        end = time.monotonic() + WAIT
        while (pool.threads() or named("test-workers-idle")) and time.monotonic() < end:
            await anyio.sleep(0.05)  # ...and end with nothing else done with the pool (anyio's never did)
        assert pool.threads() == 0 and named("test-workers-idle") == 0

    anyio.run(main)


def test_at_most_limit_threads_and_every_job_is_run_in_order_of_arrival() -> None:
    pool = Workers(2, name="test-workers-bound")
    running = 0
    most = 0
    ran: list[int] = []
    lock = threading.Lock()

    def job(n: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.01)
        with lock:
            running -= 1
            ran.append(n)
        return n * 2

    async def main() -> None:
        results: list[int] = []

        async def one(n: int) -> None:
            results.append(await pool.run(lambda: job(n)))

        async with anyio.create_task_group() as tasks:
            for n in range(12):
                tasks.start_soon(one, n)
        assert sorted(results) == [n * 2 for n in range(12)]
        assert most <= 2 and pool.threads() <= 2

    anyio.run(main)
    assert sorted(ran) == list(range(12))


def test_a_cancelled_caller_waits_for_its_work_and_errors_reach_the_caller() -> None:
    pool = Workers(1, name="test-workers-cancel")
    ended = threading.Event()

    def slow() -> None:
        time.sleep(0.3)
        ended.set()

    async def main() -> None:
        with anyio.CancelScope() as scope:
            scope.cancel()  # cancelled before it starts: nothing runs
            await pool.run(slow)
        assert not ended.is_set()
        with anyio.move_on_after(0.05):
            await pool.run(slow)
        assert ended.is_set()  # the cancellation came once the work had ended, not before
        with pytest.raises(ZeroDivisionError):
            await pool.run(lambda: 1 // 0)

    anyio.run(main)


def test_retire_idle_ends_the_idle_threads_now_and_the_pool_still_serves() -> None:
    """A process about to exit (stdio's serve) joins its non-daemon threads: the idle ones end at once, not after
    their idle wait (60 s here); a call after it still runs."""
    pool = Workers(2, idle=60.0, name="test-workers-retire")

    async def main() -> None:
        assert await pool.run(lambda: 1) == 1
        assert pool.threads() == 1
        pool.retire_idle()
        end = time.monotonic() + WAIT
        while pool.threads() and time.monotonic() < end:
            await anyio.sleep(0.05)
        assert pool.threads() == 0
        assert await pool.run(lambda: 2) == 2

    anyio.run(main)
