"""``cpp_server.py`` (mcp-cpp-sdk's roots example on rootbound) on mcp 1.x's lowlevel ``Server``: the example tool
and the two probes (the ``roots`` capability the client declared, how many ``list_changed`` arrived)."""

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

TOOLS = ("roots_summary", "declared_roots_capability", "list_changed_count")


def build() -> Server[Any, Any]:
    service = RootsService(debounce=0.05, warn_deprecated=False)
    server: Server[Any, Any] = Server("cpp-seed")
    notifications = 0

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return [types.Tool(name=n, inputSchema={"type": "object"}) for n in TOOLS]

    @server.call_tool()  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        if name == "roots_summary":
            roots = await service.roots(server.request_context)  # mcp-cpp-sdk: ctx.request_roots()
            lines = [f"{len(roots)} root(s):"]
            lines += [f"- {root.name} ({root.uri})" if root.name else f"- {root.uri}" for root in roots]
            text = "\n".join(lines)
        elif name == "declared_roots_capability":
            params = server.request_context.session.client_params
            declared = None if params is None else params.capabilities.roots
            text = json.dumps(None if declared is None else declared.model_dump(by_alias=True, exclude_none=True))
        elif name == "list_changed_count":
            text = str(notifications)
        else:
            raise ValueError("unknown tool")
        return [types.TextContent(type="text", text=text)]

    async def count(notification: types.RootsListChangedNotification) -> None:
        nonlocal notifications
        notifications += 1

    server.notification_handlers[types.RootsListChangedNotification] = count
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
