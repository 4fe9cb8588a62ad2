"""Handshake-era roots on the SDK: the I/O around the per-connection cache of ``rootbound.core.roots_cache``.

The state machine decides (cached, lead, follow, store, debounce); this module only sends ``roots/list``, waits
on flights, sleeps the debounce window and ties each cache entry to its connection's lifetime. It imports no SDK:
every SDK touch goes through a :class:`~rootbound.mcp._handshake_port.Link` (mcp 2.x: ``_sdk_server``; mcp 1.x:
``_sdk1_server``), so both majors share these rules.

Waiting (issue 24 #3). Every caller waits for the one fetch of its generation, at most ``timeout`` seconds from
when it started waiting; a fetch the client does not answer in time fails each of them with "roots are unavailable
(the client did not answer roots/list within N s)", a tool error in words. Under load this is what 200 parallel
first calls on the SDK's own HTTP client see: its connection pool holds 100 connections, every call keeps one
open while the roots are fetched, so the client's POST of the ``roots/list`` answer queues behind the calls waiting
for it until the timeout frees them. No server can answer such calls without the roots; the client needs a pool
larger than its parallel calls (``docs/reliability.md``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import Final

import anyio

from rootbound.core.errors import RootsError
from rootbound.core.mrtr import client_supports_roots
from rootbound.core.roots import RootLimits, RootsChange, RootSet
from rootbound.core.roots_cache import MAX_ATTEMPTS, ConnectionRoots, Flight, Lead
from rootbound.mcp._handshake_port import Link, not_answered

__all__ = ["HandshakeRoots", "OnChange", "handshake_supports_roots", "not_answered"]

logger = logging.getLogger("rootbound.server")

WARM_WAITS: Final = (1.0, 4.0)
"""Seconds the warm-up waits before asking again (then the roots timeout): see :meth:`HandshakeRoots.warm`."""

OnChange = Callable[[RootsChange], Awaitable[None]]

_DECLARED_ROOTS: Final = "rootbound.declared_roots"


def handshake_supports_roots(link: Link) -> bool:
    """Whether the client declared ``roots`` in ``initialize``, by the core rule, read once per connection
    (the declaration cannot change after ``initialize``, and dumping the model costs more than a tool call's
    cached roots)."""
    state = link.state
    declared = state.get(_DECLARED_ROOTS)
    if isinstance(declared, bool):
        return declared
    capabilities = link.declared()
    if capabilities is None:
        return False  # not initialized yet: nothing to remember
    declared = state[_DECLARED_ROOTS] = client_supports_roots(capabilities)
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

    async def roots(self, link: Link, *, force: bool = False) -> RootSet:
        """The cached set, or one fetched on the request's own stream (single flight). ``force``: refresh."""
        return await self._obtain(self._entry(link), link, force=force, background=False)

    def snapshot(self, link: Link) -> RootSet | None:
        """The connection's current cached set, without any I/O."""
        entry = link.state.get(self.key)
        return entry.state.fresh() if isinstance(entry, _Connection) else None

    def ever_listed(self, link: Link) -> bool:
        """Whether the connection's client ever answered ``roots/list`` with at least one root."""
        entry = link.state.get(self.key)
        return isinstance(entry, _Connection) and entry.state.listed

    async def warm(self, link: Link) -> None:
        """At ``notifications/initialized``: fetch the roots before any call asks, so the first calls find them
        cached and "has listed a root" is known from the client's first answer, not from the first tool call.
        Never waited on: a call arriving meanwhile fetches on its own stream. Nothing where the client declared no
        roots or cannot be sent a request (stateless HTTP); a failure only leaves the cache empty.

        Asked again when not answered within :data:`WARM_WAITS` (then the roots timeout): over Streamable HTTP the
        request goes on the client's GET stream, and the SDK drops one sent before that stream is open (a client
        opens it as it sends ``initialized``, so which comes first is a race, lost more often on a busy machine).
        """
        if not handshake_supports_roots(link) or not link.can_send():
            return
        entry = self._entry(link)
        for wait in (*WARM_WAITS, self.timeout):
            step = entry.state.next_step(warm=True)
            if not isinstance(step, Lead):
                return  # cached, or a call's fetch is in flight
            wait = min(wait, self.timeout)
            try:
                await self._lead(entry, step.flight, link, related=False, wait=wait)
                return
            except RootsError as error:
                if error.reason != not_answered(wait).reason:
                    logger.info("roots warm-up after initialized failed (%s); the first call asks again", error.reason)
                    return
        logger.info("roots warm-up after initialized was not answered; the first call asks again")

    def invalidate(self, link: Link) -> None:
        """On receipt of ``list_changed``, before any await."""
        entry = link.state.get(self.key)
        if isinstance(entry, _Connection):
            entry.state.invalidate()

    async def refresh_after_change(self, link: Link) -> None:
        """Trailing debounce: only the last notification of a burst refreshes, on the standalone channel."""
        entry = link.state.get(self.key)
        if not isinstance(entry, _Connection):
            return  # nothing was ever fetched on this connection: nothing to refresh
        noticed = entry.state.generation
        await anyio.sleep(self.debounce)
        if not entry.state.refresh_due(noticed):
            return
        self.refreshes += 1
        try:
            await self._obtain(entry, link, force=False, background=True)
        except RootsError as error:
            logger.info("roots refresh after list_changed failed (%s); cache stays empty", error.reason)

    # -- the state machine's I/O -----------------------------------------------------------------------

    async def _obtain(self, entry: _Connection, link: Link, *, force: bool, background: bool) -> RootSet:
        """The cached set, or the answer of the one flight this caller leads or follows.

        That answer was asked for after the caller started, so it is the client's roots at a moment during the
        call, and is served even when a ``list_changed`` arrived while it was in flight (the state machine then
        does not cache it): a notification storm costs a caller at most one fetch, never a retry loop.
        """
        state = entry.state
        for _ in range(MAX_ATTEMPTS):  # again only when the flight followed was abandoned (cancelled leader)
            step = state.next_step(force=force, background=background)
            assert step is not None  # only a warm-up is told there is nothing to do
            if isinstance(step, RootSet):
                return step
            if isinstance(step, Lead):
                return await self._lead(entry, step.flight, link, related=not background)
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
        self, entry: _Connection, flight: Flight, link: Link, *, related: bool, wait: float | None = None
    ) -> RootSet:
        entry.events[flight] = anyio.Event()
        change: RootsChange | None = None
        try:
            roots = await self._fetch(link, related=related, wait=wait)
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
            await self.on_change(dataclasses.replace(change, connection=link.state))
        return roots

    async def _fetch(self, link: Link, *, related: bool, wait: float | None = None) -> RootSet:
        """One ``roots/list`` round trip, judged raw (the SDK's ``FileUrl`` would normalise the URIs first), waited
        for ``wait`` seconds (default: the roots timeout)."""
        self.fetches += 1
        raw = await link.list_roots(self.timeout if wait is None else wait, related=related)
        return RootSet.parse(raw, "handshake", limits=self.limits)

    def _entry(self, link: Link) -> _Connection:
        state = link.state
        entry = state.get(self.key)
        if isinstance(entry, _Connection):
            return entry
        entry = _Connection()
        state[self.key] = entry
        self.entries.add(entry)

        def forget() -> None:
            entry.state.close()
            self.entries.discard(entry)

        link.on_close(forget)
        return entry
