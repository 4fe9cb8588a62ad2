"""A host that gives MCP servers its roots with ``RootsProvider``, in both protocol eras.

``python examples/client_example.py`` runs against an in-process server (a ``RootsService`` tool that echoes
the roots it sees). ``python examples/client_example.py http://127.0.0.1:8000/mcp`` or
``python examples/client_example.py -- python examples/server_lowlevel.py`` connects to a real server and calls
its ``workspace_roots`` tool.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_client_server_memory_streams

from mcp import Client
from rootbound import Root
from rootbound.mcp import RootsService
from rootbound.mcp.client import RootsProvider

TOOL = "workspace_roots"


def demo_server() -> Server[Any]:
    """An in-process server whose one tool reports the client's roots (roots/list or MRTR, by era)."""
    service = RootsService(debounce=0.01, warn_deprecated=False)

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=TOOL, input_schema={"type": "object"})])

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: Any) -> types.CallToolResult:
        roots = await service.roots(ctx)
        return types.CallToolResult(content=[types.TextContent(type="text", text=" ".join(roots.uris))])

    return service.install(Server("demo", on_list_tools=list_tools, on_call_tool=call_tool))


async def show(client: Client, label: str) -> None:
    result = await client.call_tool(TOOL, {})
    text = result.content[0].text if result.content and result.content[0].type == "text" else result
    print(f"  {label:<22} {text}")


async def main(argv: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace, docs = Path(tmp, "workspace"), Path(tmp, "docs")
        provider = RootsProvider([Root.from_path(workspace, "Workspace")])  # paths, URIs or Root objects

        targets: list[tuple[str, Any]]
        if argv[:1] == ["--"]:
            targets = [("auto", StdioServerParameters(command=argv[1], args=argv[2:]))]
        elif argv:
            targets = [("auto", argv[0])]
        else:
            targets = [(mode, demo_server()) for mode in ("legacy", "2026-07-28")]

        for mode, target in targets:
            await provider.set_roots([Root.from_path(workspace, "Workspace")])
            # The one-line integration: roots, era-correct capability and list_changed, all from the provider.
            async with Client(target, mode=mode, **provider.client_kwargs()) as client:
                print(f"mode={mode} negotiated {client.protocol_version}")
                await show(client, "initial roots:")
                await provider.add(docs)  # handshake era: one coalesced notifications/roots/list_changed
                await provider.flush()
                await anyio.sleep(0.05)
                await show(client, "after add(docs):")

        if not argv:
            # A bare ClientSession takes the same callback; initialize() (or discover()) advertises the capability.
            server = demo_server()
            streams = create_client_server_memory_streams()
            async with streams as (client_streams, server_streams), anyio.create_task_group() as tg:
                tg.start_soon(server.run, *server_streams, server.create_initialization_options())
                async with ClientSession(*client_streams, **provider.session_kwargs()) as session:
                    await session.initialize()
                    result = await session.call_tool(TOOL, {})
                    content = result.content[0]
                    print("bare ClientSession:", content.text if content.type == "text" else content)
                tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
