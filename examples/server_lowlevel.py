"""A lowlevel SDK server whose tool sees the client's roots, in every protocol revision.

Run over stdio: ``python examples/server_lowlevel.py``.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from rootbound.mcp import RootsService

service = RootsService()
TOOL = types.Tool(name="workspace_roots", description="The client's roots.", input_schema={"type": "object"})


async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[TOOL])


async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    roots = await service.roots(ctx)  # roots/list (cached) or an input-required round, by era
    return types.CallToolResult(content=[types.TextContent(type="text", text="\n".join(roots.uris))])


server: Server[Any] = service.install(Server("roots-lowlevel", on_list_tools=list_tools, on_call_tool=call_tool))


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
