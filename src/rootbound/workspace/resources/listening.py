"""``subscriptions/listen`` (2026-07-28) for resources: the SDK's :class:`~mcp.server.subscriptions.ListenHandler`
serves the stream; this wraps it to start the watches the stream asks for before it is acknowledged, and to drop
them when the stream ends (closed, cancelled or dropped).

What a stream may ask for here (the spec's filter, ``docs/resources.md``): ``resourceSubscriptions`` (an
``updated`` when one of those resources changes) and ``resourcesListChanged`` (a ``list_changed`` when a directory
root's top level changes: what ``resources/list`` answers for the stream's roots). This server sends no tools or
prompts ``list_changed``, so those are left out of the acknowledgement (the spec: types the server does not
support are omitted).

Why a wrapper: the SDK's handler knows which URIs a stream listens to only inside its own call, and gives no hook
when the stream closes; its call *is* the stream, so what runs before it and in its ``finally`` is exactly the
stream's lifetime. Each stream has its own bus: what its watches see reaches it alone (another client's roots'
changes never do, and two streams listening to one URI each get its updates once). Each stream is two subscribers
in :class:`~.watches.Watches` (its URIs; its roots' top levels), under the same per-stream and per-process bounds
as a session's ``resources/subscribe``. A URI the request's roots do not serve refuses the whole stream with the
read's not-found error, before anything is watched.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent

from rootbound.search.rooted_fs import RootedFS
from rootbound.workspace.resources.addresses import bad_request
from rootbound.workspace.resources.subscribing import SubscribeRequest, subscribe, watch_top_levels
from rootbound.workspace.resources.watches import BOOKKEEPING, Notify, Watches

__all__ = ["WatchedListen"]

Run = Callable[[ServerRequestContext[Any, Any], object, Callable[[RootedFS], Any]], Awaitable[Any]]
InRoots = Callable[[ServerRequestContext[Any, Any], Callable[[RootedFS], Any], bool], Awaitable[Any]]


def _watch(fs: RootedFS, request: SubscribeRequest) -> dict[str, object]:
    return subscribe(fs, request)


class _Stream:
    """One listen stream's resource subscriptions, as a subscriber of :class:`Watches` (compared by identity)."""


class _TopLevels:
    """One listen stream's watch on its roots' top levels, as a subscriber of :class:`Watches`."""


def _publisher(bus: InMemorySubscriptionBus, event: Callable[[str], ServerEvent]) -> Notify:
    """How the reader thread tells one stream: ``event(uri)`` published on the stream's own bus, on its loop."""
    token = anyio.lowlevel.current_token()

    def notify(uri: str) -> None:
        with contextlib.suppress(Exception):  # the loop has gone: nobody listens any more
            anyio.from_thread.run(bus.publish, event(uri), token=token)

    return notify


def _list_changed(uri: str) -> ServerEvent:
    return ResourcesListChanged()


class WatchedListen:
    """The ``subscriptions/listen`` handler: watches for what the stream asks, the SDK's stream around them."""

    def __init__(self, watches: Watches, run: Run, in_roots: InRoots) -> None:
        self._watches = watches
        self._run = run
        self._in_roots = in_roots
        self.streams = 0
        """Listen streams open now (at most ``watches.per_process``)."""

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        asked = params.notifications
        uris = list(asked.resource_subscriptions or ()) if asked else []
        if len(uris) > self._watches.per_session:
            bad_request(f"at most {self._watches.per_session} resource subscriptions per stream: listen on fewer")
        if self.streams >= self._watches.per_process:
            raise MCPError(
                types.INTERNAL_ERROR,
                f"this server already serves {self._watches.per_process} listen streams (its bound): close one first",
            )
        list_changed = bool(asked and asked.resources_list_changed)
        honored = types.SubscriptionFilter(
            resources_list_changed=True if list_changed else None, resource_subscriptions=uris or None
        )
        bus = InMemorySubscriptionBus()
        inner = ListenHandler(bus, max_subscriptions=1)  # this stream's own: the bound is ours, above
        stream, top_levels = _Stream(), _TopLevels()
        self.streams += 1
        try:
            notify = _publisher(bus, ResourceUpdated)
            for uri in uris:
                await self._run(
                    ctx, uri, functools.partial(_watch, request=SubscribeRequest(uri, stream, notify, self._watches))
                )
            if list_changed:  # no roots: nothing is listed, nothing to watch
                told = _publisher(bus, _list_changed)
                await self._in_roots(ctx, lambda fs: watch_top_levels(fs, top_levels, told, self._watches), False)
            return await inner(ctx, params.model_copy(update={"notifications": honored}))
        finally:
            self.streams -= 1

            def drop() -> None:
                self._watches.drop_session(stream)
                self._watches.drop_session(top_levels)

            with anyio.CancelScope(shield=True):  # a cancelled stream still gives its watches back
                await BOOKKEEPING.run(drop)
