"""Turns at the interpreter (issue 48): least demand first between clients, handed on at budget checks once a
slice is used and another client waits, never a hang. Threads and events only: nothing here depends on pace
except the slice, set to zero or to an hour so that the outcome is decided by order alone."""

from __future__ import annotations

import threading
from collections.abc import Hashable

import pytest

from rootbound.workspace.limits.cpu_turns import CpuTurns
from rootbound.workspace.tools.calls import Budget

HOUR = 3600.0


def waiter(turns: CpuTurns, flow: Hashable, order: list[Hashable]) -> threading.Thread:
    """A thread that asks for a turn, notes its flow when granted, and gives it back."""

    def run() -> None:
        with turns.turn(flow) as turn:
            turn.offer()  # the first check takes the turn
            order.append(flow)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def wait_queued(turns: CpuTurns, count: int) -> None:
    for _ in range(10_000):
        with turns._lock:
            if len(turns._waiting) >= count:
                return
        threading.Event().wait(0.001)
    raise AssertionError(f"{count} waiters never queued")


def test_a_freed_turn_goes_to_the_client_holding_fewest_not_to_the_first_in_line() -> None:
    turns = CpuTurns(2, max_wait_s=HOUR)
    turns.acquire("greedy")
    turns.acquire("greedy")  # the greedy client holds both turns
    order: list[Hashable] = []
    first = [waiter(turns, "greedy", order) for _ in range(3)]  # its backlog asks first
    wait_queued(turns, 3)
    victim = waiter(turns, "victim", order)
    wait_queued(turns, 4)
    turns.release("greedy")
    victim.join(10)
    assert order[0] == "victim", order  # first come first served would give it to the greedy backlog
    turns.release("greedy")
    for thread in first:
        thread.join(10)
    assert order.count("greedy") == 3 and turns.in_use == 0 and not turns._held


def test_a_turn_is_handed_on_at_a_check_only_when_another_client_waits() -> None:
    turns = CpuTurns(1, slice_s=1e-9, max_wait_s=HOUR)
    with turns.turn("a") as turn:
        assert turns.held("a") == 0  # nothing taken before the call's first check
        turn.offer()  # taken
        turn.offer()  # nobody waits: kept, no wait
        assert turns.held("a") == 1
        order: list[Hashable] = []
        other = waiter(turns, "b", order)
        wait_queued(turns, 1)
        turn.offer()  # b waits: b runs, then a has its turn back
        other.join(10)
        assert order == ["b"] and turns.held("a") == 1 and turns.held("b") == 0
    assert turns.in_use == 0


def test_a_client_without_a_backlog_never_hands_its_turn_to_one() -> None:
    turns = CpuTurns(2, slice_s=1e-9, max_wait_s=HOUR)
    order: list[Hashable] = []
    with turns.turn("greedy") as greedy, turns.turn("victim") as victim:
        greedy.offer()
        victim.offer()
        backlog = [waiter(turns, "greedy", order) for _ in range(3)]
        wait_queued(turns, 3)
        victim.offer()  # the greedy client wants 4 turns, the victim 1: kept
        assert order == [] and turns.held("victim") == 1
        greedy.offer()  # the greedy client's own backlog waits: equal flow, nothing owed to another client
        assert turns.held("victim") == 1
    for thread in backlog:
        thread.join(10)
    assert order == ["greedy"] * 3 and turns.in_use == 0


def test_a_turn_is_kept_for_its_slice() -> None:
    turns = CpuTurns(1, slice_s=HOUR, max_wait_s=HOUR)
    order: list[Hashable] = []
    with turns.turn("a") as turn:
        turn.offer()
        other = waiter(turns, "b", order)
        wait_queued(turns, 1)
        turn.offer()  # within its slice: not handed on
        assert order == [] and turns.held("a") == 1
    other.join(10)
    assert order == ["b"]


def test_a_holder_that_never_checks_delays_a_waiter_by_the_bound_only() -> None:
    turns = CpuTurns(1, max_wait_s=0.05)
    turns.acquire("stuck")  # blocked where it cannot check: never hands on
    order: list[Hashable] = []
    other = waiter(turns, "b", order)
    other.join(30)
    assert order == ["b"] and not other.is_alive()  # ran anyway
    turns.release("stuck")
    assert turns.in_use == 0 and not turns._held and not turns._waiting


def test_the_calls_budget_check_hands_the_turn_on_and_still_raises_first() -> None:
    budget = Budget(60)
    offers: list[int] = []
    budget.on_check = lambda: offers.append(1)
    budget.check()
    assert offers == [1]
    budget.cancel()
    with pytest.raises(Exception, match="cancelled"):
        budget.check()
    assert offers == [1]  # a cancelled call stops; it does not wait for a turn first


def test_bad_settings_are_refused() -> None:
    for capacity, slice_s, wait_s in ((0, 0.02, 1.0), (1, 0.0, 1.0), (1, 0.02, 0.0)):
        with pytest.raises(ValueError, match="must be positive"):
            CpuTurns(capacity, slice_s=slice_s, max_wait_s=wait_s)
