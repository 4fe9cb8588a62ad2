"""The one place where rootbound touches private attributes of the server-side SDKs.

Each accessor is pinned by ``tests/mcp/test_sdk_pins.py`` (with the client side's): if an SDK release moves the
attribute, that test fails before any roots behaviour silently degrades.
"""

from __future__ import annotations

from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

__all__ = ["connection_of", "lowlevel_server_of", "request_context_of"]


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The per-client ``Connection`` behind a request or notification context.

    mcp 2.x rebuilds ``ServerSession`` for every request and ``ServerRequestContext`` has no ``connection``
    field, so the session's private ``_connection`` is the only stable per-connection key (the SDK's own tests
    use it too). Its ``state`` dict and ``exit_stack`` close hook are public.
    """
    connection = ctx.session._connection
    if not isinstance(connection, Connection):  # pragma: no cover - guarded by the pin test
        raise TypeError("unexpected SDK layout: ServerSession._connection is not a Connection")
    return connection


def lowlevel_server_of(server: Any) -> Server[Any]:
    """The lowlevel ``Server`` of a lowlevel server, an ``MCPServer`` or a FastMCP 4 app."""
    if isinstance(server, Server):
        return server
    for attribute in ("_lowlevel_server", "_mcp_server"):  # MCPServer, FastMCP 4
        inner = getattr(server, attribute, None)
        if isinstance(inner, Server):
            return inner
    raise TypeError("expected an mcp lowlevel Server, an MCPServer or a FastMCP app")


def request_context_of(context: Any) -> ServerRequestContext[Any, Any] | None:
    """The lowlevel request context behind an ``MCPServer`` or FastMCP ``Context`` (``None`` if unknown)."""
    if isinstance(context, ServerRequestContext):
        return context
    try:
        inner = context.request_context  # MCPServer Context: public; raises outside a request
    except Exception:
        return None
    if isinstance(inner, ServerRequestContext):
        return inner
    inner = getattr(inner, "_srctx", None)  # FastMCP 4: FastMCPRequestContext's private escape hatch
    return inner if isinstance(inner, ServerRequestContext) else None
