"""The servers ``bench/server.py`` compares, each with one tool ``t`` that answers the same text.

Run one over stdio: ``python bench/bench_servers.py VARIANT``.
"""

from __future__ import annotations

import sys
import warnings
from typing import Annotated, Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import ListRoots, Resolve
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.message import ServerMessageMetadata

from rootbound.mcp import RootsService

warnings.simplefilter("ignore", MCPDeprecationWarning)

TOOL = types.Tool(name="t", input_schema={"type": "object"})
VARIANTS = ("baseline", "roots_every_call", "mcpserver_resolve", "rootbound", "raw_mrtr")


def _text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


async def _list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[TOOL])


def get_roots() -> ListRoots:
    """The resolver ``Resolve`` calls (module level: MCPServer evaluates the annotation in module globals)."""
    return ListRoots()


def build(variant: str) -> Any:
    """A server object ``mcp.Client`` can connect to in-process."""
    if variant == "baseline":

        async def plain(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
            return _text("file:///a")

        return Server("bench", on_list_tools=_list_tools, on_call_tool=plain)
    if variant == "roots_every_call":

        async def every(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
            result = await ctx.session.send_request(
                types.ListRootsRequest(),
                types.ListRootsResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
            return _text(",".join(str(root.uri) for root in result.roots))

        return Server("bench", on_list_tools=_list_tools, on_call_tool=every)
    if variant == "mcpserver_resolve":
        app = MCPServer("bench")

        @app.tool(name="t")
        async def resolved(roots: Annotated[types.ListRootsResult, Resolve(get_roots)]) -> str:
            return ",".join(str(root.uri) for root in roots.roots)

        return app
    if variant == "rootbound":
        service = RootsService(warn_deprecated=False)

        async def cached(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
            roots = await service.roots(ctx)
            return _text(",".join(roots.uris))

        return service.install(Server("bench", on_list_tools=_list_tools, on_call_tool=cached))
    if variant == "raw_mrtr":

        async def mrtr(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
            answer = (params.input_responses or {}).get("roots")
            if isinstance(answer, types.ListRootsResult):
                return _text(",".join(str(root.uri) for root in answer.roots))
            return types.InputRequiredResult(input_requests={"roots": types.ListRootsRequest()}, request_state="r")

        server: Server[Any] = Server("bench", on_list_tools=_list_tools, on_call_tool=mrtr)
        server.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience="bench"))
        return server
    raise ValueError(variant)


def main() -> None:
    target = build(sys.argv[1])
    if isinstance(target, MCPServer):
        target.run("stdio")
        return

    async def run() -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await target.run(read, write, target.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
