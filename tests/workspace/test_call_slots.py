"""Fair pools and work that ends with its call (issue 48 #1-#3), in process: grant order and slot lifetimes."""

from __future__ import annotations

import threading

import anyio
import pytest

from rootbound.workspace.limits.call_slots import CallSlots, FairSlots, client_of, run_to_end


async def hold_until(pool: FairSlots, flow: str, got: list[str], release: anyio.Event) -> None:
    """Hold one of ``pool``'s slots for ``flow`` (noted in ``got`` once granted) until ``release`` is set."""
    async with pool.hold(flow):
        got.append(flow)
        await release.wait()


def test_one_flow_never_takes_the_reserved_share() -> None:
    async def main() -> None:
        pool = FairSlots(4, 1)
        got: list[str] = []
        release = anyio.Event()

        async with anyio.create_task_group() as tasks:
            for _ in range(6):
                tasks.start_soon(hold_until, pool, "greedy", got, release)
            await anyio.wait_all_tasks_blocked()
            assert got == ["greedy"] * 3  # 4 slots, 1 kept for the others
            tasks.start_soon(hold_until, pool, "victim", got, release)
            await anyio.wait_all_tasks_blocked()
            assert got[-1] == "victim"
            release.set()
        assert pool.in_use == 0 and not pool.held("greedy")

    anyio.run(main)


def test_many_flows_with_backlogs_never_take_the_share_a_newcomer_finds() -> None:
    """Issue 48's attacker is several clients without a token (sessions and a stateless peer), each within its own
    bound: together they used to fill the pool, and a victim's first write waited 2-13 s for one of their calls to
    end. The reserved share now goes only to a flow holding none."""

    async def main() -> None:
        pool = FairSlots(16, 4)
        got: list[str] = []
        release = anyio.Event()

        async with anyio.create_task_group() as tasks:
            for n in range(3):  # three greedy clients, each asking for more than its bound
                for _ in range(14):
                    tasks.start_soon(hold_until, pool, f"greedy{n}", got, release)
            await anyio.wait_all_tasks_blocked()
            # The first backlog holds 12; the two others' first calls took a reserved slot each, and no more:
            # before, the three filled the pool (12 + 4).
            assert len(got) == 14, got
            tasks.start_soon(hold_until, pool, "victim", got, release)
            await anyio.wait_all_tasks_blocked()
            assert got[-1] == "victim"  # at once: no call of theirs had to end
            release.set()
        assert pool.in_use == 0

    anyio.run(main)


def test_a_backlog_yields_the_next_free_slot_to_a_flow_without_one() -> None:
    async def main() -> None:
        pool = FairSlots(1)
        order: list[str] = []
        gates = {name: anyio.Event() for name in ("g0", "g1", "g2", "g3", "v")}

        async def take(flow: str, name: str) -> None:
            async with pool.hold(flow):
                order.append(name)
                await gates[name].wait()

        async with anyio.create_task_group() as tasks:
            for n in range(4):
                tasks.start_soon(take, "greedy", f"g{n}")
                await anyio.wait_all_tasks_blocked()
            tasks.start_soon(take, "victim", "v")  # asked last
            await anyio.wait_all_tasks_blocked()
            gates["g0"].set()
            await anyio.wait_all_tasks_blocked()
            assert order == ["g0", "v"]  # after one call's work, not the backlog's
            for gate in gates.values():
                gate.set()

    anyio.run(main)


def test_a_cancelled_waiter_leaves_nothing_held() -> None:
    async def main() -> None:
        pool = FairSlots(1)
        async with pool.hold("a"):
            with anyio.move_on_after(0.05):
                async with pool.hold("b"):
                    pytest.fail("granted while held")
        assert pool.in_use == 0 and not pool.held("b")

    anyio.run(main)


def test_cancelled_work_is_told_to_stop_and_its_slot_held_until_it_has() -> None:
    async def main() -> None:
        slots = CallSlots(1)
        stop = threading.Event()
        ended = threading.Event()
        seen: list[int] = []

        def work() -> str:
            stop.wait(30)
            seen.append(slots.workers.in_use)  # still held while the work runs on
            ended.set()
            return "stopped"

        with anyio.move_on_after(0.1):
            async with slots.hold("c", walks=True, writes=True):
                await run_to_end(work, stop.set, slots.threads)
        assert ended.is_set()  # the call ended after its work, not before
        assert seen == [1]
        assert slots.workers.in_use == slots.walks.in_use == slots.writes.in_use == 0

    anyio.run(main)


def test_client_of_prefers_the_token_then_the_session_then_the_peer() -> None:
    class Token:
        client_id = "alice"

    class User:
        access_token = Token()

    class Request:
        def __init__(self, scope: dict[str, object]) -> None:
            self.scope = scope

    class Ctx:
        def __init__(self, scope: dict[str, object]) -> None:
            self.request = Request(scope)
            self.session = object()

    peer: dict[str, object] = {"client": ("127.0.0.1", 5000), "headers": []}
    assert client_of(Ctx({**peer, "user": User()})) == ("token", "alice")
    assert client_of(Ctx({**peer, "headers": [(b"mcp-session-id", b"s1")]})) == ("session", b"s1")
    assert client_of(Ctx(peer)) == ("peer", "127.0.0.1")


def test_client_of_over_stdio_is_the_connection_not_the_per_request_session() -> None:
    """mcp 2.x makes a ``ServerSession`` per request: two requests of one connection are one client."""

    class Session:
        def __init__(self, connection: object) -> None:
            self._connection = connection

    class Ctx:
        request = None

        def __init__(self, connection: object) -> None:
            self.session = Session(connection)

    one, other = object(), object()
    assert client_of(Ctx(one)) == client_of(Ctx(one)) != client_of(Ctx(other))
