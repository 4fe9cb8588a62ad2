"""DNS-rebinding protection with exact matching: ``Host`` and ``Origin`` compared whole, never as prefixes.

The SDK's ``TransportSecuritySettings`` reads an allowed ``HOST:*`` as "starts with ``HOST:``", so
``127.0.0.1:8765@evil.example`` and ``http://127.0.0.1:8765.evil.example`` passed (issue 33 #6; no browser sends
them, but the check was looser than it read). Here ``HOST:*`` means ``HOST:`` and a port number (1 to 5 digits, at
most 65535) and nothing after it; every other entry must equal the header (hosts compared case-insensitively).
A wrong ``Host`` is answered 421 and a wrong ``Origin`` 403, as the SDK does; an absent ``Origin`` is allowed (not
a browser). The SDK's own check is then switched off (its ``Content-Type`` check stays).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

__all__ = ["ExactHosts", "host_matches"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


def _port(text: str) -> bool:
    return 1 <= len(text) <= 5 and text.isascii() and text.isdigit() and int(text) <= 65535


def host_matches(value: str, allowed: Sequence[str]) -> bool:
    """Whether ``value`` (a ``Host`` header, or an origin ``scheme://host[:port]``) is one of ``allowed``."""
    value = value.lower()
    for entry in allowed:
        entry = entry.lower()
        if entry.endswith(":*"):
            base = entry[:-1]  # "host:"
            if value.startswith(base) and _port(value[len(base) :]):
                return True
        elif value == entry:
            return True
    return False


class ExactHosts:
    """ASGI middleware: HTTP requests whose ``Host`` or ``Origin`` is not exactly allowed are refused."""

    def __init__(self, app: ASGIApp, *, hosts: Sequence[str], origins: Sequence[str]) -> None:
        self._app = app
        self._hosts = tuple(hosts)
        self._origins = tuple(origins)

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]], send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        host = origin = None
        for key, value in scope.get("headers", ()):
            if key == b"host":
                host = value.decode("latin-1")
            elif key == b"origin":
                origin = value.decode("latin-1")
        if host is None or not host_matches(host, self._hosts):
            await _refuse(send, 421, b"Invalid Host header")
        elif origin is not None and not host_matches(origin, self._origins):
            await _refuse(send, 403, b"Invalid Origin header")
        else:
            await self._app(scope, receive, send)


async def _refuse(send: Any, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
