"""Per-session slots (issue 16 #3) as pure code: one session's backlog does not hold up another session."""

from __future__ import annotations

import anyio
import pytest

from rootbound.workspace._fairness import SessionSlots

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
