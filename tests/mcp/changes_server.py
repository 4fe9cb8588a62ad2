"""A stdio MCP server (run as a subprocess) exercising ``RootsService.snapshot``, ``refresh`` and ``on_change``.

Tools (each answers JSON text):
* ``roots``: ``await service.roots()``;
* ``snapshot``: ``service.snapshot()`` (``null`` when nothing is known);
* ``snapshot_then_roots``: the snapshot before and after ``await service.roots()`` in one request;
* ``refresh``: ``await service.refresh()``;
* ``changes``: every change the ``on_change`` callbacks saw, oldest first;
* ``break_callbacks``: from now on the first registered callback raises (the second must still run).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from rootbound import RootsChange, RootSet
from rootbound.mcp import RootsService

NAMES = ("roots", "snapshot", "snapshot_then_roots", "refresh", "changes", "break_callbacks")


def uris(roots: RootSet | None) -> list[str] | None:
    return None if roots is None else list(roots.uris)


def build(debounce: float) -> Server[Any]:
    service = RootsService(debounce=debounce, timeout=5.0, warn_deprecated=False)
    seen: list[dict[str, Any]] = []
    broken = False

    @service.on_change
    async def explode(change: RootsChange) -> None:
        if broken:
            raise RuntimeError("a callback bug")

    @service.on_change
    async def record(change: RootsChange) -> None:
        seen.append(
            {
                "old": uris(change.old),
                "new": uris(change.new),
                "added": [root.canonical for root in change.added],
                "removed": [root.canonical for root in change.removed],
            }
        )

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema={"type": "object"}) for n in NAMES])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        nonlocal broken
        value: Any
        if params.name == "roots":
            value = uris(await service.roots(ctx))
        elif params.name == "snapshot":
            value = uris(service.snapshot(ctx))
        elif params.name == "snapshot_then_roots":
            before = uris(service.snapshot(ctx))
            value = {"before": before, "after": uris(await service.roots(ctx))}
        elif params.name == "refresh":
            value = uris(await service.refresh(ctx))
        elif params.name == "changes":
            value = seen
        elif params.name == "break_callbacks":
            broken = True
            value = True
        else:
            raise ValueError("unknown tool")
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(value))])

    server: Server[Any] = Server("changes", on_list_tools=list_tools, on_call_tool=call_tool)
    service.install(server)
    return server


def main() -> None:
    server = build(float(sys.argv[1]) if len(sys.argv) > 1 else 0.1)

    async def run() -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
