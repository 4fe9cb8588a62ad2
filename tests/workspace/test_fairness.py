"""Per-session slots (issue 16 #3) as pure code: one session's backlog does not hold up another session."""

from __future__ import annotations

import anyio
import pytest

from rootbound.workspace.limits.fairness import SessionSlots, Token

pytestmark = pytest.mark.anyio


class Session:
    pass


async def test_a_busy_session_waits_for_its_own_slots_only() -> None:
    slots = SessionSlots(per_session=2)
    greedy, other = Session(), Session()
    release = anyio.Event()
    running: list[str] = []

    async def call(session: Session, name: str) -> None:
        async with slots.slot(session):
            running.append(name)
            await release.wait()

    async with anyio.create_task_group() as tg:
        for i in range(5):
            tg.start_soon(call, greedy, f"greedy-{i}")
        await anyio.wait_all_tasks_blocked()
        assert running == ["greedy-0", "greedy-1"]  # the other three wait for greedy's own slots
        tg.start_soon(call, other, "other")
        await anyio.wait_all_tasks_blocked()
        assert running[-1] == "other"  # not behind greedy's backlog
        release.set()
    assert len(running) == 6


async def test_a_token_is_taken_in_arrival_order_and_given_back_on_error_and_cancel() -> None:
    """``Token`` skips anyio's scheduling point when a token is free, but waiters still enter in arrival order, a
    full limiter makes a newcomer wait, and errors and cancellation give the token back."""
    limiter = anyio.CapacityLimiter(1)
    order: list[int] = []
    gate = anyio.Event()

    async def take(i: int) -> None:
        async with Token(limiter):
            order.append(i)
            await gate.wait()

    async with anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(take, i)
            await anyio.wait_all_tasks_blocked()
        assert order == [0]
        gate.set()
    assert order == [0, 1, 2]

    with pytest.raises(ValueError, match="tool failed"):
        async with Token(limiter):
            raise ValueError("tool failed")
    with anyio.move_on_after(0.05):
        async with Token(limiter):
            await anyio.sleep(1)
    assert limiter.borrowed_tokens == 0

    async with anyio.create_task_group() as tg:
        async with Token(limiter):
            waiter_entered = anyio.Event()

            async def waiter() -> None:
                async with Token(limiter):
                    waiter_entered.set()

            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            assert not waiter_entered.is_set()  # a full limiter makes it wait
        await waiter_entered.wait()
