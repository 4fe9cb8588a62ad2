"""What the handshake-era roots machinery needs from an SDK major: the port ``_handshake`` drives (no SDK here).

``_handshake`` keeps the per-connection caches, single flights and debounced refreshes; it reaches the SDK only
through a :class:`Link`, one request's (or notification's) way to its connection. mcp 2.x implements it in
``_sdk_server`` and mcp 1.x in ``_sdk1_server``; each maps every ``roots/list`` failure of its SDK to the same
fixed-message ``RootsError`` (:func:`not_answered` and the reasons below), so both majors answer a tool alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

from pydantic import BaseModel, ConfigDict

from rootbound.core.errors import RootsUnavailable

__all__ = ["ANSWERED_WITH_ERROR", "CONNECTION_CLOSED", "NOT_A_LIST_ROOTS_RESULT", "Link", "RawResult", "not_answered"]

CONNECTION_CLOSED: Final = "connection closed"
ANSWERED_WITH_ERROR: Final = "client answered with an error"
NOT_A_LIST_ROOTS_RESULT: Final = "answer does not match the ListRootsResult schema"


class RawResult(BaseModel):
    """The result type of both majors' ``roots/list`` request: keeps the client's answer exactly as sent (the
    SDK's ``FileUrl`` would normalise it first, and rootbound judges the raw answer)."""

    model_config = ConfigDict(extra="allow")


def not_answered(seconds: float) -> RootsUnavailable:
    """The error of a caller that waited ``seconds`` for the client's roots in vain."""
    return RootsUnavailable(f"the client did not answer roots/list within {seconds:g} s")


class Link(Protocol):
    """One request's (or notification's) view of its connection, on one SDK major."""

    @property
    def state(self) -> dict[str, Any]:
        """A store that lives exactly as long as the connection (one per client connection)."""
        ...

    def on_close(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once when the connection ends."""
        ...

    def declared(self) -> Mapping[str, Any] | None:
        """The ``roots`` part of the client's ``initialize`` capabilities as a wire dict (``{}`` when absent),
        or ``None`` before ``initialize``."""
        ...

    def can_send(self) -> bool:
        """Whether a server-to-client request can reach this client at all (not stateless HTTP)."""
        ...

    async def list_roots(self, wait: float, *, related: bool) -> Mapping[str, Any]:
        """One ``roots/list`` round trip: the client's raw answer, before any SDK normalisation. ``related``: on
        the request's own stream. Every failure is a fixed-message ``RootsError``."""
        ...
