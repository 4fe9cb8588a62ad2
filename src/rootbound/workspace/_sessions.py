"""Handshake-era HTTP sessions: a cap, an idle timeout, and quick reaping of sessions never taken up.

The SDK's session manager keeps every session an ``initialize`` POST opens until it idles out (30 minutes) and
refuses new ones with 503 at 10,000: a client sending bare ``initialize`` requests fills the table in seconds and
locks every real client out for half an hour. Here a session counts as *taken up* once a second request names
it (a real client's ``notifications/initialized`` does, right after the handshake); until then it is *pending*
and is reaped after :attr:`SessionLimits.init_timeout`. When the table is full, the oldest pending session makes
room for a new ``initialize`` before anyone gets a 503; a full table of taken-up sessions still answers 503 until
one idles out (:attr:`SessionLimits.idle_timeout`) or is deleted.

The SDK exposes no hook for this: this module is the only place that reaches into the session manager's private
table (``_server_instances``) and its ``_discard_session``; ``tests/workspace/test_hardening.py`` pins both.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["SessionGuard", "SessionLimits"]

logger = logging.getLogger("rootbound.serve.sessions")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_HEADER: Final = MCP_SESSION_ID_HEADER.encode("ascii")


@dataclass(frozen=True)
class SessionLimits:
    """How many handshake-era sessions may be open, and how long they may sit unused."""

    max_sessions: int = 256
    idle_timeout: float = 600.0
    """Seconds without a request in flight before a taken-up session is closed (its id then answers 404)."""
    init_timeout: float = 10.0
    """Seconds a session opened by ``initialize`` may wait for its next request before it is reaped."""

    def __post_init__(self) -> None:
        if self.max_sessions <= 0 or not self.idle_timeout > 0 or not self.init_timeout > 0:
            raise ValueError("session limits must be positive")


def session_manager(server: Any, limits: SessionLimits, **kwargs: Any) -> StreamableHTTPSessionManager:
    """The SDK's stateful session manager with ``limits`` applied."""
    return StreamableHTTPSessionManager(
        app=server,
        stateless=False,
        session_idle_timeout=limits.idle_timeout,
        max_sessions=limits.max_sessions,
        **kwargs,
    )


class SessionGuard:
    """ASGI app in front of the session manager: notes which sessions were never taken up and reaps them."""

    def __init__(self, manager: StreamableHTTPSessionManager, limits: SessionLimits) -> None:
        self._manager = manager
        self._limits = limits
        self._pending: OrderedDict[str, float] = OrderedDict()  # session id -> when it was opened, oldest first

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._manager.asgi_app(scope, receive, send)
            return
        named = next((value for key, value in scope["headers"] if key == _HEADER), None)
        if named is not None:
            self._pending.pop(named.decode("latin-1"), None)  # named by a second request: taken up
            await self._manager.asgi_app(scope, receive, send)
            return
        if scope.get("method") == "POST" and self._open() >= self._limits.max_sessions:
            await self._reap(oldest=1)

        async def noting_send(message: Message) -> None:
            if message["type"] == "http.response.start" and message.get("status", 500) < 400:
                opened = next((value for key, value in message.get("headers", ()) if key == _HEADER), None)
                if opened is not None:
                    self._pending[opened.decode("latin-1")] = time.monotonic()
            await send(message)

        await self._manager.asgi_app(scope, receive, noting_send)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Reap pending sessions past their ``init_timeout`` while the app runs."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._reaper)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    async def _reaper(self) -> None:
        period = min(1.0, self._limits.init_timeout / 4)
        while True:
            await anyio.sleep(period)
            cutoff = time.monotonic() - self._limits.init_timeout
            stale = sum(1 for opened in self._pending.values() if opened <= cutoff)
            if stale:
                await self._reap(oldest=stale)

    def _open(self) -> int:
        table: dict[str, Any] = self._manager._server_instances
        return len(table)

    async def _reap(self, *, oldest: int) -> None:
        table: dict[str, Any] = self._manager._server_instances
        reaped = 0
        while self._pending and reaped < oldest:
            session_id, _opened = self._pending.popitem(last=False)
            transport = table.get(session_id)
            if transport is None:
                continue  # already gone (deleted, crashed, idled out)
            await self._manager._discard_session(session_id, transport)
            reaped += 1
        if reaped:
            logger.info("reaped %d session(s) never taken up after initialize", reaped)
