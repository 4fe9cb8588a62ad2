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


# -- the warm-up at notifications/initialized (issue 33 #5) -------------------------------------------------


def test_a_warm_up_leads_only_where_nothing_is_known_or_in_flight() -> None:
    state = ConnectionRoots()
    warm = lead(state, warm=True)
    assert warm.flight.warm and warm.flight.background
    assert state.next_step(warm=True) is None  # one warm-up at a time
    state.landed(warm.flight, A)
    assert state.next_step(warm=True) is None  # cached: nothing to warm
    assert state.next_step() is A  # the first call finds it cached


def test_a_call_never_follows_a_warm_up_it_leads_its_own_fetch() -> None:
    state = ConnectionRoots()
    warm = lead(state, warm=True)
    call = lead(state)  # not Follow: a warm-up the transport cannot deliver must not hold the call up
    assert call.flight is not warm.flight and not call.flight.warm
    follower = state.next_step()
    assert isinstance(follower, Follow) and follower.flight is call.flight  # later calls follow the call's fetch
    state.landed(call.flight, A)
    assert state.followed(call.flight) is A
    state.landed(warm.flight, A)  # the warm-up lands late, same generation: harmless
    assert state.next_step() is A and state.flights == {}


def test_a_background_refresh_follows_a_warm_up() -> None:
    state = ConnectionRoots()
    warm = lead(state, warm=True)
    step = state.next_step(background=True)
    assert isinstance(step, Follow) and step.flight is warm.flight


def test_listed_is_any_answer_with_a_root_even_one_overtaken_by_list_changed() -> None:
    state = ConnectionRoots()
    empty = lead(state)
    state.landed(empty.flight, RootSet.of([]))
    assert not state.listed  # an empty answer lists nothing
    step = lead(state, force=True)
    state.invalidate()  # list_changed while the answer was on its way: not cached...
    state.landed(step.flight, A)
    assert state.fresh() is None
    assert state.listed  # ...but the client did list a root
    state.close()
    assert state.listed
