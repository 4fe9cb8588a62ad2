"""A stdio server for the Snodo.Roots examples: one tool that answers with the roots it got, in wire form.

Run as a subprocess and driven by raw JSON-RPC lines, so a test controls every byte the server receives.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from rootbound.mcp import RootsService


def build() -> Server[Any]:
    service = RootsService(timeout=5.0, warn_deprecated=False)

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="roots_wire", input_schema={"type": "object"})])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        roots = await service.roots(ctx)
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(roots.to_wire()))])

    server: Server[Any] = Server("snodo-seed", on_list_tools=list_tools, on_call_tool=call_tool)
    service.install(server)
    return server


def main() -> None:
    server = build()

    async def run() -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
