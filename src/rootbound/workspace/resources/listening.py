"""``subscriptions/listen`` (2026-07-28) for resources: the SDK's :class:`~mcp.server.subscriptions.ListenHandler`
serves the stream; this wraps it to start the watches the stream's ``resourceSubscriptions`` name before it is
acknowledged, and to drop them when the stream ends (closed, cancelled or dropped).

Why a wrapper: the SDK's handler knows which URIs a stream listens to only inside its own call, and gives no hook
when the stream closes; its call *is* the stream, so what runs before it and in its ``finally`` is exactly the
stream's lifetime. Each stream is its own subscriber in :class:`~.watches.Watches` (the same per-stream and
per-process bounds as a session's ``resources/subscribe``). A URI the request's roots do not serve refuses the
whole stream with the read's not-found error, before anything is watched.
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
from mcp.shared.subscriptions import ResourceUpdated

from rootbound.search.rooted_fs import RootedFS
from rootbound.workspace.resources.addresses import bad_request
from rootbound.workspace.resources.subscribing import SubscribeRequest, subscribe
from rootbound.workspace.resources.watches import Notify, Watches

__all__ = ["WatchedListen"]

Run = Callable[[ServerRequestContext[Any, Any], object, Callable[[RootedFS], Any]], Awaitable[Any]]


def _watch(fs: RootedFS, request: SubscribeRequest) -> dict[str, object]:
    return subscribe(fs, request)


class _Stream:
    """One listen stream, as a subscriber of :class:`Watches` (compared by identity)."""


class WatchedListen:
    """The ``subscriptions/listen`` handler: watches for the stream's resource URIs, the SDK's stream around them."""

    def __init__(self, watches: Watches, run: Run) -> None:
        self.bus = InMemorySubscriptionBus()
        self._inner = ListenHandler(self.bus, max_subscriptions=watches.per_process)
        self._watches = watches
        self._run = run

    def _notifier(self) -> Notify:
        token = anyio.lowlevel.current_token()
        bus = self.bus

        def notify(uri: str) -> None:
            with contextlib.suppress(Exception):  # the loop has gone: nobody listens any more
                anyio.from_thread.run(bus.publish, ResourceUpdated(uri), token=token)

        return notify

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        uris = list(params.notifications.resource_subscriptions or ()) if params.notifications else []
        if len(uris) > self._watches.per_session:
            bad_request(f"at most {self._watches.per_session} resource subscriptions per stream: listen on fewer")
        stream = _Stream()
        notify = self._notifier()
        try:
            for uri in uris:
                await self._run(
                    ctx, uri, functools.partial(_watch, request=SubscribeRequest(uri, stream, notify, self._watches))
                )
            return await self._inner(ctx, params)
        finally:
            with anyio.CancelScope(shield=True):  # a cancelled stream still gives its watches back
                await anyio.to_thread.run_sync(self._watches.drop_session, stream)
