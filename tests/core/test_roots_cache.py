"""rootbound.core.roots_cache: the handshake-era per-connection cache as a pure state machine.

Generation counter, single flight, invalidate-on-receipt, the debounce decision and change detection, driven
step by step the way ``rootbound.mcp._handshake`` drives them (the wire tests in tests/mcp prove the wiring).
"""

from __future__ import annotations

import pytest

from rootbound import RootsChange, RootSet, RootsUnavailable
from rootbound.core.roots_cache import ConnectionRoots, Follow, Lead

A = RootSet.of(["/a"])
B = RootSet.of(["/a", "/b"])


def lead(state: ConnectionRoots, **kw: bool) -> Lead:
    step = state.next_step(**kw)
    assert isinstance(step, Lead), step
    return step


def test_first_call_leads_then_the_answer_is_cached() -> None:
    state = ConnectionRoots()
    assert state.fresh() is None
    step = lead(state)
    assert state.landed(step.flight, A) is None  # the first set is not a change
    assert state.next_step() is A
    assert step.flight.done and state.flights == {}


def test_single_flight_followers_share_the_leaders_answer() -> None:
    state = ConnectionRoots()
    step = lead(state)
    followers = [state.next_step() for _ in range(3)]
    assert all(isinstance(f, Follow) and f.flight is step.flight for f in followers)
    state.landed(step.flight, A)
    assert [state.followed(f.flight) for f in followers if isinstance(f, Follow)] == [A, A, A]


def test_followers_get_a_fresh_copy_of_the_leaders_failure() -> None:
    state = ConnectionRoots()
    step = lead(state)
    follower = state.next_step()
    error = RootsUnavailable("timed out")
    state.failed(step.flight, error)
    assert isinstance(follower, Follow)
    with pytest.raises(RootsUnavailable) as info:
        state.followed(follower.flight)
    assert info.value is not error and info.value.reason == "timed out"
    assert state.fresh() is None  # nothing cached: fail closed
    assert isinstance(state.next_step(), Lead)  # the next caller asks again


def test_an_abandoned_or_background_flight_makes_followers_try_themselves() -> None:
    state = ConnectionRoots()
    step = lead(state)
    follower = state.next_step()
    state.abandoned(step.flight)
    assert isinstance(follower, Follow) and state.followed(follower.flight) is None
    background = lead(state, background=True)
    follower = state.next_step()
    state.failed(background.flight, RootsUnavailable("timed out"))
    assert isinstance(follower, Follow) and state.followed(follower.flight) is None


def test_invalidation_on_receipt_drops_the_cache_and_refuses_a_stale_answer() -> None:
    state = ConnectionRoots()
    state.landed(lead(state).flight, A)
    step = lead(state, force=True)  # a fetch in flight...
    state.invalidate()  # ...when list_changed arrives
    assert state.fresh() is None
    assert not state.current(step.flight.generation)
    assert state.landed(step.flight, B) is None  # answered for the old generation: not stored
    assert state.fresh() is None
    assert isinstance(state.next_step(), Lead)  # a new generation gets its own flight


def test_flights_are_per_generation() -> None:
    state = ConnectionRoots()
    old = lead(state)
    state.invalidate()
    new = state.next_step()
    assert isinstance(new, Lead) and new.flight is not old.flight
    state.landed(old.flight, A)  # the old leader finishing must not end the new flight
    assert state.flights == {new.flight.generation: new.flight}


def test_force_skips_the_cache_but_joins_a_flight_in_progress() -> None:
    state = ConnectionRoots()
    state.landed(lead(state).flight, A)
    forced = lead(state, force=True)
    assert isinstance(state.next_step(force=True), Follow)
    assert state.landed(forced.flight, B) == RootsChange(A, B, (B[1],), ())
    assert state.fresh() is B


def test_a_change_is_measured_against_the_previous_set_across_invalidation() -> None:
    state = ConnectionRoots()
    state.landed(lead(state).flight, A)
    state.invalidate()
    state.invalidate()
    change = state.landed(lead(state).flight, B)
    assert change is not None and change.old is A and change.new is B
    state.invalidate()
    assert state.landed(lead(state).flight, B) is None  # same set again: no change


def test_debounce_refreshes_only_after_the_last_notification_of_a_burst() -> None:
    state = ConnectionRoots()
    state.landed(lead(state).flight, A)
    noticed = []
    for _ in range(5):
        state.invalidate()
        noticed.append(state.generation)
    assert [state.refresh_due(n) for n in noticed] == [False] * 4 + [True]
    state.landed(lead(state).flight, B)  # a tool call fetched meanwhile
    assert not state.refresh_due(noticed[-1])


def test_nothing_is_stored_or_refreshed_after_close() -> None:
    state = ConnectionRoots()
    step = lead(state)
    state.close()
    assert state.landed(step.flight, A) is None
    assert state.fresh() is None
    assert not state.refresh_due(state.generation)
    assert "cancelled before the client answered" in ConnectionRoots.gave_up().reason
