"""Handshake-era HTTP sessions: a cap, an idle timeout, quick reaping of sessions never taken up, and room for a
new client when the table is full.

The SDK's session manager keeps every session an ``initialize`` POST opens until it idles out and refuses new ones
with 503 at its cap: a client sending bare ``initialize`` requests, or keeping many sessions alive with a ``ping``
each every few seconds, locks every real client out. Here a session counts as *taken up* once a second request
names it (a real client's ``notifications/initialized`` does, right after the handshake); until then it is
*pending* and is reaped after :attr:`SessionLimits.init_timeout`. A taken-up session remembers when it was last
*useful*: a request other than ``ping`` or a notification (a tool call, a listing). When the table is full, a new
``initialize`` first takes the place of the oldest pending session, else of a taken-up session of the client holding
the most sessions, and only if it holds more than its share of the table (the cap over the clients holding
sessions, the newcomer counted): its least recently useful session with no request in flight first (issue 48 #4).
A client is its token's principal where requests are authenticated, else the connection (peer address and port)
that took the session up. When no client holds more than its share, nothing is taken: the newcomer gets the SDK's
503 at the cap. A kept-alive
but idle session therefore never keeps a new client out (issue 33 #4); its client's next request gets 404, which
tells it to start a new session.

The SDK exposes no hook for this: this module is the only place that reaches into the session manager's private
table (``_server_instances``) and its ``_discard_session``; ``tests/workspace/test_hardening.py`` pins both.
"""

from __future__ import annotations

import contextlib
import json
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


_IDLE_METHODS: Final = (b"ping",)
_PEEK: Final = 4096  # bytes: pings and notifications are small; a larger body is a request that does something


def useful(body: bytes) -> bool:
    """Whether a POST body is a request that does something: not a lone ``ping`` or notification."""
    if len(body) > _PEEK:
        return True
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return True  # the SDK answers it; it is not a keep-alive
    if not isinstance(message, dict):
        return True  # a batch, or garbage: not a keep-alive either
    method = message.get("method")
    if not isinstance(method, str):
        return False  # a response (to our roots/list): the client answering, not using
    return "id" in message and method.encode() not in _IDLE_METHODS


@dataclass
class _Seen:
    """A taken-up session: whose, when it last did something, how many of its POSTs are in flight."""

    owner: object  # the client: its token's principal, else the connection that took the session up
    useful_at: float
    in_flight: int = 0


def _owner(scope: Scope) -> object:
    """Whose a session is (issue 48 #4): the token's principal where requests are authenticated, else the peer
    (address and port: the connection) that took it up."""
    token = getattr(scope.get("user"), "access_token", None)
    client_id = getattr(token, "client_id", None)
    if isinstance(client_id, str):
        return ("token", client_id)
    client = scope.get("client")
    return ("peer", tuple(client) if client else None)


class SessionGuard:
    """ASGI app in front of the session manager: notes which sessions were taken up and when each was last useful,
    reaps those never taken up, and makes room at the cap."""

    def __init__(self, manager: StreamableHTTPSessionManager, limits: SessionLimits) -> None:
        self._manager = manager
        self._limits = limits
        self._pending: OrderedDict[str, float] = OrderedDict()  # session id -> when it was opened, oldest first
        self._seen: dict[str, _Seen] = {}
        self.evicted = 0

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._manager.asgi_app(scope, receive, send)
            return
        named = next((value for key, value in scope["headers"] if key == _HEADER), None)
        if named is not None:
            await self._named(named.decode("latin-1"), scope, receive, send)
            return
        if scope.get("method") == "POST" and self._open() >= self._limits.max_sessions:
            await self._make_room()

        async def noting_send(message: Message) -> None:
            if message["type"] == "http.response.start" and message.get("status", 500) < 400:
                opened = next((value for key, value in message.get("headers", ()) if key == _HEADER), None)
                if opened is not None:
                    self._pending[opened.decode("latin-1")] = time.monotonic()
            await send(message)

        await self._manager.asgi_app(scope, receive, noting_send)

    async def _named(self, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        now = time.monotonic()
        opened = self._pending.pop(session_id, None)  # named by a second request: taken up
        seen = self._seen.get(session_id)
        if seen is None and (opened is not None or session_id in self._table()):
            seen = self._seen[session_id] = _Seen(_owner(scope), opened if opened is not None else now)
        if seen is None or scope.get("method") != "POST":
            await self._manager.asgi_app(scope, receive, send)
            if session_id not in self._table():
                self._seen.pop(session_id, None)  # deleted (DELETE), or gone: forget it
            return
        first = await receive()
        if first.get("type") == "http.request" and useful(first.get("body", b"")):
            seen.useful_at = now
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return first
            return await receive()

        seen.in_flight += 1
        try:
            await self._manager.asgi_app(scope, replay, send)
        finally:
            seen.in_flight -= 1

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
            table = self._table()
            for gone in [session_id for session_id in self._seen if session_id not in table]:
                del self._seen[gone]  # idled out or crashed: nothing to make room from

    def _table(self) -> dict[str, Any]:
        table: dict[str, Any] = self._manager._server_instances
        return table

    def _open(self) -> int:
        return len(self._table())

    async def _make_room(self) -> None:
        if await self._reap(oldest=1):
            return
        table = self._table()
        candidates = [(session_id, seen) for session_id, seen in self._seen.items() if session_id in table]
        if not candidates:
            return  # sessions we never saw taken up (none in practice): the SDK answers 503
        held: dict[object, int] = {}
        for _session_id, seen in candidates:
            held[seen.owner] = held.get(seen.owner, 0) + 1
        share = -(-self._limits.max_sessions // (len(held) + 1))  # the newcomer counted: its share of the table
        over = [item for item in candidates if held[item[1].owner] > share]
        if not over:
            return  # nobody holds more than its share: no session is taken; the SDK answers 503 at its cap
        session_id, _seen = min(over, key=lambda item: (-held[item[1].owner], item[1].in_flight > 0, item[1].useful_at))
        del self._seen[session_id]
        await self._manager._discard_session(session_id, table[session_id])
        self.evicted += 1
        logger.info("the session table was full: closed the least recently useful session for a new client")

    async def _reap(self, *, oldest: int) -> int:
        table = self._table()
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
        return reaped
