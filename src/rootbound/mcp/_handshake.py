"""Handshake-era roots on the SDK: the I/O around the per-connection cache of ``rootbound.core.roots_cache``.

The state machine decides (cached, lead, follow, store, debounce); this module only sends ``roots/list``, waits
on flights, sleeps the debounce window and ties each cache entry to its connection's lifetime
(``Connection.state`` / ``Connection.exit_stack``).

Waiting (issue 24 #3). Every caller waits for the one fetch of its generation, at most ``timeout`` seconds from
when it started waiting; a fetch the client does not answer in time fails each of them with "roots are unavailable
(the client did not answer roots/list within N s)", a tool error in words. Under load this is what 200 parallel
first calls on the SDK's own HTTP client see: its connection pool holds 100 connections, every call keeps one
open while the roots are fetched, so the client's POST of the ``roots/list`` answer queues behind the calls waiting
for it until the timeout frees them. No server can answer such calls without the roots; the client needs a pool
larger than its parallel calls (``docs/reliability.md``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel, ConfigDict, ValidationError

from rootbound.core.errors import InvalidRootsAnswer, RootsError, RootsUnavailable
from rootbound.core.mrtr import client_supports_roots
from rootbound.core.roots import RootLimits, RootsChange, RootSet
from rootbound.core.roots_cache import MAX_ATTEMPTS, ConnectionRoots, Flight, Lead
from rootbound.mcp._sdk_server import connection_of

__all__ = ["HandshakeRoots", "OnChange", "handshake_supports_roots"]

logger = logging.getLogger("rootbound.server")

OnChange = Callable[[RootsChange], Awaitable[None]]


def not_answered(seconds: float) -> RootsUnavailable:
    """The error of a caller that waited ``seconds`` for the client's roots in vain."""
    return RootsUnavailable(f"the client did not answer roots/list within {seconds:g} s")


class _RawResult(BaseModel):
    """Keeps the client's roots answer exactly as sent: the SDK's ``FileUrl`` would normalise it first."""

    model_config = ConfigDict(extra="allow")


_DECLARED_ROOTS: Final = "rootbound.declared_roots"


def handshake_supports_roots(rctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client declared ``roots`` in ``initialize``, by the core rule, read once per connection
    (the declaration cannot change after ``initialize``, and dumping the model costs more than a tool call's
    cached roots)."""
    capabilities = rctx.session.client_capabilities
    if capabilities is None:
        return False  # not initialized yet: nothing to remember
    state = connection_of(rctx).state
    declared = state.get(_DECLARED_ROOTS)
    if not isinstance(declared, bool):
        declared = state[_DECLARED_ROOTS] = client_supports_roots(
            capabilities.model_dump(by_alias=True, exclude_none=True, include={"roots"})
        )
    return declared


class _Connection:
    """A connection's cache state machine plus the events its flights' followers wait on."""

    __slots__ = ("events", "state")

    def __init__(self) -> None:
        self.state = ConnectionRoots()
        self.events: dict[Flight, anyio.Event] = {}


class HandshakeRoots:
    """One service's handshake-era roots: per-connection caches, ``roots/list`` round trips, refreshes."""

    def __init__(self, *, timeout: float, debounce: float, limits: RootLimits, key: str, on_change: OnChange):
        self.timeout = timeout
        self.debounce = debounce
        self.limits = limits
        self.key = key
        self.on_change = on_change
        self.entries: set[_Connection] = set()
        self.fetches = 0
        self.refreshes = 0

    # -- the calls a request makes ---------------------------------------------------------------------

    async def roots(self, rctx: ServerRequestContext[Any, Any], *, force: bool = False) -> RootSet:
        """The cached set, or one fetched on the request's own stream (single flight). ``force``: refresh."""
        return await self._obtain(self._entry(rctx), rctx, force=force, background=False)

    def snapshot(self, rctx: ServerRequestContext[Any, Any]) -> RootSet | None:
        """The connection's current cached set, without any I/O."""
        entry = connection_of(rctx).state.get(self.key)
        return entry.state.fresh() if isinstance(entry, _Connection) else None

    def invalidate(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """On receipt of ``list_changed``, before any await."""
        entry = connection_of(ctx).state.get(self.key)
        if isinstance(entry, _Connection):
            entry.state.invalidate()

    async def refresh_after_change(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Trailing debounce: only the last notification of a burst refreshes, on the standalone channel."""
        entry = connection_of(ctx).state.get(self.key)
        if not isinstance(entry, _Connection):
            return  # nothing was ever fetched on this connection: nothing to refresh
        noticed = entry.state.generation
        await anyio.sleep(self.debounce)
        if not entry.state.refresh_due(noticed):
            return
        self.refreshes += 1
        try:
            await self._obtain(entry, ctx, force=False, background=True)
        except RootsError as error:
            logger.info("roots refresh after list_changed failed (%s); cache stays empty", error.reason)

    # -- the state machine's I/O -----------------------------------------------------------------------

    async def _obtain(
        self, entry: _Connection, rctx: ServerRequestContext[Any, Any], *, force: bool, background: bool
    ) -> RootSet:
        """The cached set, or the answer of the one flight this caller leads or follows.

        That answer was asked for after the caller started, so it is the client's roots at a moment during the
        call, and is served even when a ``list_changed`` arrived while it was in flight (the state machine then
        does not cache it): a notification storm costs a caller at most one fetch, never a retry loop.
        """
        state = entry.state
        for _ in range(MAX_ATTEMPTS):  # again only when the flight followed was abandoned (cancelled leader)
            step = state.next_step(force=force, background=background)
            if isinstance(step, RootSet):
                return step
            if isinstance(step, Lead):
                return await self._lead(entry, step.flight, rctx, related=not background)
            event = entry.events.get(step.flight)
            if event is not None:
                with anyio.move_on_after(self.timeout) as waited:
                    await event.wait()
                if waited.cancelled_caught:  # a background refresh's flight outlasted this caller's patience
                    raise not_answered(self.timeout)
            followed = state.followed(step.flight)
            if followed is not None:
                return followed
        raise ConnectionRoots.gave_up()

    async def _lead(
        self, entry: _Connection, flight: Flight, rctx: ServerRequestContext[Any, Any], *, related: bool
    ) -> RootSet:
        entry.events[flight] = anyio.Event()
        change: RootsChange | None = None
        try:
            roots = await self._fetch(rctx, related=related)
        except RootsError as error:
            entry.state.failed(flight, error)
            raise
        except BaseException:
            entry.state.abandoned(flight)  # cancelled leader: followers retry and one of them leads
            raise
        else:
            change = entry.state.landed(flight, roots)
        finally:
            entry.events.pop(flight).set()
        if change is not None:
            await self.on_change(change)
        return roots

    async def _fetch(self, rctx: ServerRequestContext[Any, Any], *, related: bool) -> RootSet:
        """One ``roots/list`` round trip; every failure is a fixed-message ``RootsError``."""
        self.fetches += 1
        metadata = ServerMessageMetadata(related_request_id=rctx.request_id) if related else None
        try:
            raw = await rctx.session.send_request(
                types.ListRootsRequest(), _RawResult, request_read_timeout_seconds=self.timeout, metadata=metadata
            )
        except NoBackChannelError:
            raise RootsUnavailable("no back-channel") from None
        except MCPError as error:
            if error.code == types.REQUEST_TIMEOUT:
                raise not_answered(self.timeout) from None
            reason = "connection closed" if error.code == types.CONNECTION_CLOSED else "client answered with an error"
            raise RootsUnavailable(reason) from None
        except ValidationError:
            raise InvalidRootsAnswer("answer does not match the ListRootsResult schema") from None
        return RootSet.parse(raw.model_extra or {}, "handshake", limits=self.limits)

    def _entry(self, rctx: ServerRequestContext[Any, Any]) -> _Connection:
        connection = connection_of(rctx)
        entry = connection.state.get(self.key)
        if isinstance(entry, _Connection):
            return entry
        entry = _Connection()
        connection.state[self.key] = entry
        self.entries.add(entry)

        def forget() -> None:
            entry.state.close()
            self.entries.discard(entry)

        connection.exit_stack.callback(forget)
        return entry
