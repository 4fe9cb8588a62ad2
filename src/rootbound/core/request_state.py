"""The ``requestState`` payload rootbound carries between input rounds of one 2026-07-28 call, sans I/O.

Roots obtained in one round must reach the later rounds of the same call (the tool may ask for more input after
it has its roots), and the application may carry its own state too. Both ride in one string. The SDK's
``RequestStateBoundary`` seals and unseals it (integrity, audience, expiry); this codec only says what is
inside, so a state that is not ours passes through untouched as the application's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from rootbound.core.errors import InvalidRootsAnswer
from rootbound.core.roots import DEFAULT_LIMITS, RootLimits, RootSet

__all__ = ["STATE_PREFIX", "CarriedState", "decode_request_state", "encode_request_state"]

STATE_PREFIX: Final = "rootbound/1:"


@dataclass(frozen=True)
class CarriedState:
    """What an (unsealed) ``requestState`` held: our roots, the application's own state, whether it was ours."""

    roots: RootSet | None = None
    app: str | None = None
    ours: bool = False


def encode_request_state(roots: RootSet | None, app: str | None) -> str | None:
    """Our ``requestState`` with ``roots`` and the application's ``app`` state; just ``app`` without roots."""
    if roots is None:
        return app
    document: dict[str, Any] = {"roots": roots.to_wire()}
    if app is not None:
        document["app"] = app
    return STATE_PREFIX + json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def decode_request_state(state: Any, *, limits: RootLimits = DEFAULT_LIMITS) -> CarriedState:
    """Split a retry's (unsealed) ``requestState``; carried roots are validated again like any answer.

    Raises :class:`~rootbound.InvalidRootsAnswer` for a state with our prefix that does not decode.
    """
    if not isinstance(state, str) or not state.startswith(STATE_PREFIX):
        return CarriedState(app=state if isinstance(state, str) else None)
    try:
        document = json.loads(state[len(STATE_PREFIX) :])
    except ValueError:
        raise InvalidRootsAnswer("request state is malformed") from None
    if not isinstance(document, dict):
        raise InvalidRootsAnswer("request state is malformed")
    app = document.get("app")
    carried = document.get("roots")
    roots = None if carried is None else RootSet.parse(carried, "2026-07-28", limits=limits)
    return CarriedState(roots, app if isinstance(app, str) else None, True)
