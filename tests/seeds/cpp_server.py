"""mcp-cpp-sdk's roots server example, written on rootbound (a lowlevel ``Server`` run as a stdio subprocess).

mcp-cpp-sdk: ``request_roots()`` from the tool context, and an example tool that asks for the roots and returns a
text summary. Here: ``await service.roots(ctx)``. Two probe tools let the client-flow tests see the wire from the
server's side: the ``roots`` capability the client declared, and how many ``list_changed`` notifications arrived.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from rootbound.core.mrtr import LIST_CHANGED, era_of, request_capabilities
from rootbound.mcp import RootsService

TOOLS = ("roots_summary", "declared_roots_capability", "list_changed_count")


def build() -> Server[Any]:
    service = RootsService(debounce=0.05, warn_deprecated=False)
    notifications = 0

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema={"type": "object"}) for n in TOOLS])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == "roots_summary":
            roots = await service.roots(ctx)  # mcp-cpp-sdk: ctx.request_roots()
            lines = [f"{len(roots)} root(s):"]
            lines += [f"- {root.name} ({root.uri})" if root.name else f"- {root.uri}" for root in roots]
            text = "\n".join(lines)
        elif params.name == "declared_roots_capability":
            if era_of(ctx.protocol_version) == "2026-07-28":
                declared = request_capabilities(ctx.params)
                text = json.dumps(declared.get("roots") if isinstance(declared, dict) else None)
            else:
                capabilities = ctx.session.client_capabilities
                declared_roots = None if capabilities is None else capabilities.roots
                dumped = None if declared_roots is None else declared_roots.model_dump(by_alias=True, exclude_none=True)
                text = json.dumps(dumped)
        elif params.name == "list_changed_count":
            text = str(notifications)
        else:
            raise ValueError("unknown tool")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    async def count(ctx: ServerRequestContext[Any, Any], params: types.NotificationParams) -> None:
        nonlocal notifications
        notifications += 1

    server: Server[Any] = Server("cpp-seed", on_list_tools=list_tools, on_call_tool=call_tool)
    server.add_notification_handler(LIST_CHANGED, types.NotificationParams, count)
    service.install(server)  # chains the counter after rootbound's own handler
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
