"""HTTP connections a slow or stalled client cannot pile up (issue 33 #3): a cap, and read deadlines.

uvicorn reads a request's headers and body with no deadline and accepts connections without limit: 800 connections
that declare ``Content-Length: 1000000`` and send one byte all stay open, and at about ``RLIMIT_NOFILE`` of them
``accept()`` fails with ``EMFILE`` and a victim's call on its own connection fails too. Here each connection is
in one of three phases: *headers* (no request in progress: waiting for the next request line and headers), *body*
(headers read, the body still coming) or *app* (the whole request read: the tool runs, an SSE stream is open).
Headers and body must each arrive within :attr:`ConnectionLimits.read_timeout` (answered ``408`` and closed
otherwise); the app phase is the tools' own deadline's business. At most :attr:`ConnectionLimits.max_connections`
connections are open: a new one at the cap closes the connection that has been *stalled* longest (in the headers
or body phase with no byte for :attr:`ConnectionLimits.stall_grace` s) to make room, or, when every connection is
making progress or serving, is itself answered ``503`` and closed at once. A stalled flood therefore costs a
bounded number of fds and never keeps a real client out.

This module is the one place that subclasses uvicorn's h11 protocol (``H11Protocol``: ``connection_made``,
``data_received``, ``on_response_complete``, ``connection_lost``, ``cycle``, ``transport``);
``tests/workspace/test_slow_clients.py`` pins what it uses.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
import weakref
from dataclasses import dataclass
from typing import Any, Final

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["ConnectionLimits", "guarded_protocol"]

logger = logging.getLogger("rootbound.serve.connections")

SWEEP: Final = 0.5  # seconds between deadline checks of the open connections
_TIMED_OUT: Final = b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
_FULL_BODY: Final = b"the server has too many connections open; retry in a moment\n"
_FULL: Final = (
    b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 1\r\ncontent-type: text/plain\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_FULL_BODY), _FULL_BODY)
)


def default_max_connections() -> int:
    """Half the process's fd limit (the rest is for roots, files and the SDK), between 64 and 4,096."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 16
    return max(64, min(4096, soft // 2))


@dataclass(frozen=True)
class ConnectionLimits:
    """How many HTTP connections may be open, and how long a client may take to send a request."""

    max_connections: int = 0
    """Open connections at most (``--max-connections``); 0: :func:`default_max_connections`."""
    read_timeout: float = 30.0
    """Seconds for a request's headers, and again for its body (``--request-read-timeout``)."""
    stall_grace: float = 1.0
    """A connection in the headers or body phase that sent nothing for this long may be closed to make room."""

    def __post_init__(self) -> None:
        if self.max_connections < 0 or not self.read_timeout > 0 or not self.stall_grace >= 0:
            raise ValueError("connection limits must be positive")

    @property
    def cap(self) -> int:
        return self.max_connections or default_max_connections()


def guarded_protocol(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with ``limits`` applied (``uvicorn.Config(http=...)``); one registry per server."""
    cap = limits.cap
    open_now: weakref.WeakSet[Guarded] = weakref.WeakSet()
    sweeper: list[asyncio.TimerHandle | None] = [None]

    def sweep(loop: asyncio.AbstractEventLoop) -> None:
        now = time.monotonic()
        for connection in list(open_now):
            connection.check(now)
        sweeper[0] = loop.call_later(SWEEP, sweep, loop) if open_now else None

    class Guarded(H11Protocol):
        """One connection, with its phase's start and the time of its last byte."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            now = time.monotonic()
            self.phase_since = now
            self.last_byte = now
            self.closed_by_us = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(open_now) >= cap and not self._make_room(time.monotonic()):
                self.closed_by_us = True
                transport.write(_FULL)
                transport.close()
                logger.warning("refused a connection: %d open, the cap (--max-connections)", len(open_now))
                return
            open_now.add(self)
            if sweeper[0] is None:
                sweeper[0] = self.loop.call_later(SWEEP, sweep, self.loop)

        def connection_lost(self, exc: Exception | None) -> None:
            open_now.discard(self)
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            now = time.monotonic()
            self.last_byte = now
            before = self.cycle
            super().data_received(data)
            if self.cycle is not before:
                self.phase_since = now  # a new request's headers are in: its body phase starts now

        def on_response_complete(self) -> None:
            self.phase_since = time.monotonic()  # waiting for the next request's headers from now
            super().on_response_complete()

        @property
        def phase(self) -> str:
            cycle = self.cycle
            if cycle is None or cycle.response_complete:
                return "headers"
            return "body" if cycle.more_body else "app"

        @property
        def reading(self) -> bool:
            """Whether it is still reading a request (not closing, not handed to the app)."""
            return not (self.closed_by_us or self.transport.is_closing() or self.phase == "app")

        def stalled_for(self, now: float) -> float | None:
            """Seconds since its last byte, if it is reading a request; ``None`` while the app has it."""
            return now - self.last_byte if self.reading else None

        def check(self, now: float) -> None:
            if self.reading and now - self.phase_since > limits.read_timeout:
                self.drop()

        def drop(self) -> None:
            """Answer ``408`` and close: the request did not arrive in time (or room was needed)."""
            self.closed_by_us = True
            open_now.discard(self)
            self.transport.write(_TIMED_OUT)
            self.transport.close()

        def _make_room(self, now: float) -> bool:
            stalled = [
                (idle, id(c), c)
                for c in open_now
                if (idle := c.stalled_for(now)) is not None and idle >= limits.stall_grace
            ]
            if not stalled:
                return False
            _idle, _id, victim = max(stalled, key=lambda item: (item[0], item[1]))
            victim.drop()
            return True

    return Guarded
