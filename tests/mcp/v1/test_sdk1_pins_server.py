"""Pins for every mcp 1.x server-side internal ``rootbound.mcp._sdk1_server`` relies on (issue 28).

If an mcp 1.x release moves one of them, a test here fails before any roots behaviour silently degrades: the
private ``FastMCP._mcp_server``, and the behaviour the wiring builds on (``Server.run`` enters ``lifespan`` once
per connection and starts each message's task from its own, notification handlers get no session, the
``call_tool`` decorators' error texts, the read timeout's code and message, ``client_params`` of a stateless
session).
"""

from __future__ import annotations

import contextvars
import inspect
from typing import Any

import anyio
import pytest
from mcp.server.fastmcp import FastMCP
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.server import request_ctx
from mcp.server.session import ServerSession
from mcp.shared.session import BaseSession

from mcp import types
from rootbound.mcp import RootsService
from rootbound.mcp._sdk1_server import (
    CONNECTION,
    REQUEST_TIMEOUT,
    TIMEOUT_MESSAGE,
    Connection1,
    lowlevel_server_of,
    notification_link,
)
from tests.mcp.both.server_harness import ClientRoots, connect, raw_connection

pytestmark = pytest.mark.anyio


def test_fastmcp_keeps_its_lowlevel_server_in_mcp_server() -> None:
    app = FastMCP("pin")
    assert isinstance(app._mcp_server, Server)
    assert lowlevel_server_of(app) is app._mcp_server


def test_request_ctx_is_the_lowlevel_request_contextvar() -> None:
    assert isinstance(request_ctx, contextvars.ContextVar)
    with pytest.raises(LookupError):
        request_ctx.get()


def test_run_enters_the_lifespan_per_connection_before_the_session_and_shares_its_context() -> None:
    source = inspect.getsource(Server.run)
    assert source.index("self.lifespan(self)") < source.index("ServerSession(")
    assert "tg.start_soon(" in source and "self._handle_message" in source


async def test_every_message_task_sees_the_connection_and_notification_handlers_get_no_session() -> None:
    """The lifespan wrapper's connection reaches requests and notifications; it closes after the session."""
    server: Server[Any, Any] = Server("pin")
    seen: list[tuple[str, Any]] = []
    RootsService(warn_deprecated=False).install(server)

    async def on_progress(notification: types.ProgressNotification) -> None:
        seen.append(("notification", notification_link()))

    server.notification_handlers[types.ProgressNotification] = on_progress

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        seen.append(("request", CONNECTION.get()))
        return []

    assert len(inspect.signature(on_progress).parameters) == 1
    async with raw_connection(server) as peer:
        await peer.request("tools/list", {})
        progress = {"progressToken": 1, "progress": 1}
        await peer.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
        await peer.request("ping")
        with anyio.fail_after(5):
            while len(seen) < 2:
                await anyio.sleep(0.01)
    (kind1, connection), (kind2, link) = seen
    assert (kind1, kind2) == ("request", "notification")
    assert isinstance(connection, Connection1)
    assert link is not None and link.connection is connection


async def test_connection_closes_after_the_session() -> None:
    closed: list[bool] = []
    server: Server[Any, Any] = Server("pin")
    RootsService(warn_deprecated=False).install(server)

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        connection = CONNECTION.get()
        assert connection is not None
        connection.on_close(lambda: closed.append(True))
        return []

    async with raw_connection(server) as peer:
        await peer.request("tools/list", {})
        assert closed == []
    with anyio.fail_after(5):
        while not closed:
            await anyio.sleep(0.01)


def test_send_request_timeout_code_and_message() -> None:
    source = inspect.getsource(BaseSession.send_request)
    assert "httpx.codes.REQUEST_TIMEOUT" in source and REQUEST_TIMEOUT == 408
    assert f'f"{TIMEOUT_MESSAGE}"' in source
    assert types.CONNECTION_CLOSED == -32000


def test_client_params_are_set_only_by_initialize() -> None:
    """``Link1.can_send``: a request handled with ``client_params`` None can only be a stateless session's."""
    assert ServerSession._client_params is None  # the class default
    assert "self._client_params = params" in inspect.getsource(ServerSession._received_request)
    assert "Received request before initialization was complete" in inspect.getsource(ServerSession._received_request)


async def test_call_tool_error_texts_rootbound_recognises() -> None:
    """Lowlevel ``call_tool``: any exception -> isError with ``str(e)``; FastMCP 1.x: "Error executing tool
    NAME: " + it (``_sdk1_server._shows`` strips exactly that for a rootbound denial)."""
    app = FastMCP("pin")

    @app.tool()
    async def boom() -> str:
        raise ValueError("fixed text")

    server: Server[Any, Any] = Server("pin-lowlevel")

    @server.call_tool()  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        raise ValueError("fixed text")

    for target in (app._mcp_server, server):
        async with connect("memory", target, ClientRoots()) as client:
            is_error, text = await client.call("boom")
        assert is_error
        assert text == ("Error executing tool boom: fixed text" if target is app._mcp_server else "fixed text")
