"""The one place where rootbound touches private attributes of the server-side SDKs.

Each accessor is pinned by ``tests/mcp/test_sdk_pins.py`` (with the client side's): if an SDK release moves the
attribute, that test fails before any roots behaviour silently degrades. :class:`Link2` is the mcp 2.x side of the
handshake port (``_handshake_port``); mcp 1.x has its own in ``_sdk1_server``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from pydantic import ValidationError

from rootbound.core.errors import InvalidRootsAnswer, RootsUnavailable
from rootbound.mcp._handshake_port import (
    ANSWERED_WITH_ERROR,
    CONNECTION_CLOSED,
    NOT_A_LIST_ROOTS_RESULT,
    RawResult,
    not_answered,
)

__all__ = ["Link2", "connection_of", "lowlevel_server_of", "request_context_of"]


class Link2:
    """The handshake port on mcp 2.x: a request's (or notification's) ``ServerRequestContext``."""

    __slots__ = ("connection", "ctx")

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self.ctx = ctx
        self.connection = connection_of(ctx)

    @property
    def state(self) -> dict[str, Any]:
        return self.connection.state

    def on_close(self, callback: Callable[[], None]) -> None:
        self.connection.exit_stack.callback(callback)

    def declared(self) -> Mapping[str, Any] | None:
        capabilities = self.ctx.session.client_capabilities
        if capabilities is None:
            return None
        return capabilities.model_dump(by_alias=True, exclude_none=True, include={"roots"})

    def can_send(self) -> bool:
        return self.ctx.session.can_send_request

    async def list_roots(self, wait: float, *, related: bool) -> Mapping[str, Any]:
        metadata = ServerMessageMetadata(related_request_id=self.ctx.request_id) if related else None
        try:
            raw = await self.ctx.session.send_request(
                types.ListRootsRequest(), RawResult, request_read_timeout_seconds=wait, metadata=metadata
            )
        except NoBackChannelError:
            raise RootsUnavailable("no back-channel") from None
        except MCPError as error:
            if error.code == types.REQUEST_TIMEOUT:
                raise not_answered(wait) from None
            reason = CONNECTION_CLOSED if error.code == types.CONNECTION_CLOSED else ANSWERED_WITH_ERROR
            raise RootsUnavailable(reason) from None
        except ValidationError:
            raise InvalidRootsAnswer(NOT_A_LIST_ROOTS_RESULT) from None
        return raw.model_extra or {}


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
