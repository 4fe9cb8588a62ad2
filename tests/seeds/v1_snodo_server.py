"""``snodo_server.py`` on mcp 1.x: the same one tool (the roots it got, in wire form) on 1.x's lowlevel ``Server``,
run as a stdio subprocess and driven by raw JSON-RPC lines."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

if __name__ == "__main__":  # run as a script: this worktree's src first
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from mcp.server.lowlevel import Server

from mcp import types
from rootbound.mcp import RootsService


def build() -> Server[Any, Any]:
    service = RootsService(timeout=5.0, warn_deprecated=False)
    server: Server[Any, Any] = Server("snodo-seed")

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return [types.Tool(name="roots_wire", inputSchema={"type": "object"})]

    @server.call_tool()  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        roots = await service.roots()  # the request being handled: no ctx needed
        return [types.TextContent(type="text", text=json.dumps(roots.to_wire()))]

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
