"""Pins for every private SDK attribute rootbound's server side touches (``rootbound.mcp._sdk_server``).

If an SDK release moves one of these, this file fails first and says which assumption broke.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import mcp_types as types
import pytest
from fastmcp import Context as FastMCPContext
from fastmcp import FastMCP
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer

from mcp import Client
from rootbound.mcp._sdk_server import connection_of, lowlevel_server_of, request_context_of

pytestmark = pytest.mark.anyio


async def test_connection_is_stable_per_connection_and_has_state_and_exit_stack() -> None:
    seen: list[tuple[int, int]] = []
    alive: list[object] = []  # hold every session so id() cannot be reused by a later one
    closed: list[int] = []

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        connection = connection_of(ctx)
        assert isinstance(connection, Connection)
        assert isinstance(connection.state, dict)
        assert isinstance(connection.exit_stack, AsyncExitStack)
        if "pinned" not in connection.state:
            connection.state["pinned"] = True
            connection.exit_stack.callback(closed.append, id(connection))
        alive.append(ctx.session)
        seen.append((id(connection), id(ctx.session)))
        return types.CallToolResult(content=[])

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema={"type": "object"}) for n in "ab"])

    server: Server[Any] = Server("pins", on_list_tools=list_tools, on_call_tool=call_tool)
    async with Client(server, mode="legacy") as client:
        await client.call_tool("a", {})
        await client.call_tool("b", {})
        assert closed == []
    connections = {connection for connection, _ in seen}
    sessions = {session for _, session in seen}
    assert len(connections) == 1  # one Connection for the whole handshake connection...
    assert len(sessions) == 2  # ...while ServerSession is rebuilt per request (never key on it)
    assert closed == [seen[0][0]]  # and its exit_stack unwinds when the connection closes


def test_lowlevel_server_of_each_flavour() -> None:
    lowlevel: Server[Any] = Server("pins")
    assert lowlevel_server_of(lowlevel) is lowlevel
    mcpserver = MCPServer("pins")
    assert isinstance(lowlevel_server_of(mcpserver), Server)
    assert lowlevel_server_of(mcpserver).middleware is mcpserver.middleware
    fast = FastMCP("pins")
    assert isinstance(lowlevel_server_of(fast), Server)
    with pytest.raises(TypeError):
        lowlevel_server_of(object())


async def test_request_context_of_framework_contexts() -> None:
    found: list[Any] = []
    mcpserver = MCPServer("pins")

    @mcpserver.tool()
    async def probe(ctx: Context) -> str:
        found.append(request_context_of(ctx))
        return "ok"

    fast = FastMCP("pins")

    @fast.tool
    async def fast_probe(ctx: FastMCPContext) -> str:
        found.append(request_context_of(ctx))
        return "ok"

    async with Client(mcpserver, mode="legacy") as client:
        await client.call_tool("probe", {})
    async with Client(lowlevel_server_of(fast), mode="legacy") as client:
        await client.call_tool("fast_probe", {})
    assert len(found) == 2
    assert all(isinstance(ctx, ServerRequestContext) for ctx in found)
    assert request_context_of(object()) is None
