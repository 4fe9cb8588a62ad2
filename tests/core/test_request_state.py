"""rootbound.core.request_state: the requestState payload that carries roots between input rounds."""

from __future__ import annotations

from typing import Any

import pytest

from rootbound import InvalidRootsAnswer, RootLimits, RootSet
from rootbound.core.request_state import STATE_PREFIX, CarriedState, decode_request_state, encode_request_state

ROOTS = RootSet.parse({"roots": [{"uri": "file:///work", "name": "Work", "x-extra": [1]}]}, "2026-07-28")


def test_round_trip_keeps_roots_and_app_state() -> None:
    state = encode_request_state(ROOTS, "app-state")
    assert state is not None and state.startswith(STATE_PREFIX)
    carried = decode_request_state(state)
    assert carried.ours and carried.app == "app-state"
    assert carried.roots is not None and carried.roots.to_wire() == ROOTS.to_wire()  # extra fields survive


def test_without_roots_the_app_state_is_passed_through() -> None:
    assert encode_request_state(None, "app") == "app"
    assert encode_request_state(None, None) is None
    assert encode_request_state(ROOTS, None) is not None
    assert decode_request_state("app") == CarriedState(app="app")
    assert decode_request_state(None) == CarriedState()
    assert decode_request_state({"not": "a string"}) == CarriedState()


@pytest.mark.parametrize("body", ["{not json", "[]", '"roots"', '{"roots": "x"}', '{"roots": {"roots": [1]}}'])
def test_a_broken_state_of_ours_is_an_invalid_answer(body: str) -> None:
    with pytest.raises(InvalidRootsAnswer) as info:
        decode_request_state(STATE_PREFIX + body)
    assert body not in str(info.value)


def test_carried_roots_are_held_to_the_limits_again() -> None:
    state = encode_request_state(RootSet.of(["/a", "/b", "/c"]), None)
    with pytest.raises(InvalidRootsAnswer, match="too many roots"):
        decode_request_state(state, limits=RootLimits(max_roots=2))


def test_a_non_string_app_field_is_dropped() -> None:
    document: Any = '{"roots": {"roots": []}, "app": 7}'
    carried = decode_request_state(STATE_PREFIX + document)
    assert carried.ours and carried.app is None and carried.roots == RootSet()
