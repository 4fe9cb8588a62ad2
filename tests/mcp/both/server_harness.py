"""RootsService servers and a client for tests that run on BOTH SDK majors (mcp 1.x and 2.x).

Per major it builds the same tools on a lowlevel ``Server`` and on the major's decorator framework (mcp 2.x
``MCPServer``, mcp 1.x ``FastMCP``), and connects the SDK's ``ClientSession`` (it exists on both majors) over
in-memory streams or to this file run as a real stdio subprocess (``python server_harness.py KIND [--debounce S]
[--timeout S] [--fallback DIR ...]``). ``roots/list`` requests are counted on the client side (``ClientRoots``).

Tools (text answers): ``roots`` (URIs, one a line; the decorator flavour passes its ``Context``), ``check``
(``{"path"}`` -> ``inside``/``outside``), ``snapshot`` / ``refresh`` / ``snapshot_then_roots`` / ``changes`` /
``break_callbacks`` (JSON; ``RootsService.snapshot``, ``refresh``, ``on_change``), ``stats`` (the service's
``fetches`` / ``refreshes`` / ``cache_size``, for a subprocess; ``probe`` is the same, under the name
``tests/fixtures/hostile_wire.StdioPeer.probe`` calls).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import anyio

if __name__ == "__main__":  # run as a stdio server: make ``tests`` and this worktree's ``src`` importable
    sys.path[:0] = [str(Path(__file__).parents[3]), str(Path(__file__).parents[3] / "src")]

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_client_server_memory_streams

from rootbound import RootsChange, RootsError, RootSet
from rootbound.mcp import RootsService, tool_errors
from rootbound.mcp._sdk_major import MCP_V2
from tests.helpers import raw_peer
from tests.helpers.client_roots import ClientRoots
from tests.helpers.raw_peer import RawPeer, RootsAnswer, answer_with

if MCP_V2:
    import mcp_types as types
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.shared.exceptions import MCPError as RpcError
else:
    from mcp.server.fastmcp import Context as Context1
    from mcp.server.fastmcp import FastMCP
    from mcp.shared.exceptions import McpError as RpcError

    from mcp import types

__all__ = [
    "KINDS",
    "TRANSPORTS",
    "ClientRoots",
    "Conn",
    "RawPeer",
    "RpcError",
    "answer_with",
    "build",
    "connect",
    "lowlevel_of",
    "raw_connection",
]

HERE = Path(__file__)
KINDS = ("lowlevel", "framework")
TRANSPORTS = ("memory", "stdio")
NAMES = (
    "roots",
    "check",
    "snapshot",
    "snapshot_then_roots",
    "refresh",
    "changes",
    "break_callbacks",
    "stats",
    "probe",
)
SCHEMAS: dict[str, dict[str, Any]] = {
    name: {"type": "object", "properties": {"path": {"type": "string"}}} if name == "check" else {"type": "object"}
    for name in NAMES
}


# ------------------------------------------------------------------------------------------------- the tools


def _uris(roots: RootSet | None) -> list[str] | None:
    return None if roots is None else list(roots.uris)


class Tools:
    """The tools' bodies, shared by both flavours on both majors (``ctx``: the flavour's context or ``None``)."""

    def __init__(self, service: RootsService) -> None:
        self.service = service
        self.seen: list[dict[str, Any]] = []
        self.failures: list[str] = []
        """The text of every RootsError a tool ended with, in order (seen even when no client is left to tell)."""
        self.broken = False
        service.on_change(self._explode)
        service.on_change(self._record)

    async def _explode(self, change: RootsChange) -> None:
        if self.broken:
            raise RuntimeError("a callback bug")

    def _record(self, change: RootsChange) -> None:
        self.seen.append(
            {
                "old": _uris(change.old),
                "new": _uris(change.new),
                "added": [root.canonical for root in change.added],
                "removed": [root.canonical for root in change.removed],
            }
        )

    async def run(self, name: str, arguments: dict[str, Any], ctx: Any = None) -> str:
        try:
            return await self._run(name, arguments, ctx)
        except RootsError as error:
            self.failures.append(str(error))
            raise

    async def _run(self, name: str, arguments: dict[str, Any], ctx: Any) -> str:
        service = self.service
        if name == "roots":
            return "\n".join((await service.roots(ctx)).uris)
        if name == "check":
            path = PurePosixPath(str(arguments["path"]))
            roots = await service.roots(ctx)
            inside = any(path == root or root in path.parents for root in map(PurePosixPath, roots.paths))
            return "inside" if inside else "outside"
        value: Any
        if name == "snapshot":
            value = _uris(service.snapshot(ctx))
        elif name == "snapshot_then_roots":
            before = _uris(service.snapshot(ctx))
            value = {"before": before, "after": _uris(await service.roots(ctx))}
        elif name == "refresh":
            value = _uris(await service.refresh(ctx))
        elif name == "changes":
            value = self.seen
        elif name == "break_callbacks":
            self.broken = True
            value = True
        elif name in ("stats", "probe"):
            value = {"fetches": service.fetches, "refreshes": service.refreshes, "cache": service.cache_size}
        else:
            raise ValueError("unknown tool")
        return json.dumps(value)


def _lowlevel(tools: Tools) -> Any:
    """The tools on a lowlevel ``Server``: RootsErrors propagate to rootbound's wiring as they are."""
    if MCP_V2:
        from mcp.server.context import ServerRequestContext

        async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
            return types.ListToolsResult.model_validate(
                {"tools": [{"name": n, "inputSchema": SCHEMAS[n]} for n in NAMES]}
            )

        async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
            text = await tools.run(params.name, dict(params.arguments or {}), ctx)
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

        return Server("harness-lowlevel", on_list_tools=list_tools, on_call_tool=call_tool)
    else:
        server: Server[Any, Any] = Server("harness-lowlevel")

        @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
        async def list_tools_v1() -> list[types.Tool]:
            return [types.Tool.model_validate({"name": n, "inputSchema": SCHEMAS[n]}) for n in NAMES]

        @server.call_tool()  # type: ignore[untyped-decorator]
        async def call_tool_v1(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
            text = await tools.run(name, arguments)  # no ctx: service.roots() finds the request itself
            return [types.TextContent(type="text", text=text)]

        return server


def _framework(tools: Tools) -> Any:
    """The tools on the major's decorator framework (mcp 2.x ``MCPServer``, mcp 1.x ``FastMCP``), each inside
    ``tool_errors()`` so a denial reaches the model with its fixed text on both."""
    if MCP_V2:
        app = MCPServer("harness-framework")

        @app.tool(name="roots")
        async def roots(ctx: Context[Any, Any]) -> str:
            with tool_errors():
                return await tools.run("roots", {}, ctx)

    else:
        app = FastMCP("harness-framework")

        @app.tool(name="roots")
        async def roots_v1(ctx: Context1[Any, Any, Any]) -> str:
            with tool_errors():
                return await tools.run("roots", {}, ctx)

    @app.tool(name="check")
    async def check(path: str) -> str:
        with tool_errors():
            return await tools.run("check", {"path": path})

    def plain(name: str) -> Callable[[], Awaitable[str]]:
        async def tool() -> str:
            with tool_errors():
                return await tools.run(name, {})

        return tool

    for name in NAMES[2:]:
        app.add_tool(plain(name), name=name)
    return app


def build(kind: str, service: RootsService) -> tuple[Any, Tools]:
    """A server of ``kind`` (``lowlevel`` or ``framework``) with ``service`` installed, and its tools."""
    tools = Tools(service)
    server = _lowlevel(tools) if kind == "lowlevel" else _framework(tools)
    service.install(server)
    return server, tools


def lowlevel_of(server: Any) -> Any:
    if isinstance(server, Server):
        return server
    inner = getattr(server, "_lowlevel_server" if MCP_V2 else "_mcp_server")
    assert isinstance(inner, Server)
    return inner


# ------------------------------------------------------------------------------------------------ the client


class Conn:
    """A ``ClientSession`` with major-neutral helpers."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, tool: str, **arguments: Any) -> tuple[bool, str]:
        """``(is_error, text)`` of a tool call; a JSON-RPC error raises ``RpcError``."""
        result = await self.session.call_tool(tool, arguments)
        wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return wire.get("isError") is True, str(wire["content"][0]["text"])

    async def text(self, tool: str, **arguments: Any) -> str:
        is_error, text = await self.call(tool, **arguments)
        assert not is_error, text
        return text

    async def json(self, tool: str) -> Any:
        return json.loads(await self.text(tool))

    async def notify_changed(self) -> None:
        with warnings.catch_warnings():  # mcp 2.x: roots are deprecated as of 2026-07-28 (SEP-2577)
            warnings.simplefilter("ignore")
            await self.session.send_roots_list_changed()


def stdio_params(kind: str, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(HERE), kind, *args], env=dict(os.environ))


@contextlib.asynccontextmanager
async def connect(
    transport: str,
    server: Any = None,
    roots: ClientRoots | None = None,
    *,
    kind: str = "lowlevel",
    stdio_args: Sequence[str] = (),
) -> AsyncIterator[Conn]:
    """An initialised ``ClientSession`` to ``server`` in memory, or to a stdio subprocess serving ``kind``."""
    callback = roots.callback if roots is not None else None
    if transport == "stdio":
        async with (
            stdio_client(stdio_params(kind, *stdio_args)) as (read, write),
            ClientSession(read, write, list_roots_callback=callback) as session,
        ):
            with anyio.fail_after(30):
                await session.initialize()
            yield Conn(session)
        return
    lowlevel = lowlevel_of(server)
    async with (
        create_client_server_memory_streams() as ((c_read, c_write), (s_read, s_write)),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(lambda: lowlevel.run(s_read, s_write, lowlevel.create_initialization_options()))
        try:
            async with ClientSession(c_read, c_write, list_roots_callback=callback) as session:
                with anyio.fail_after(30):
                    await session.initialize()
                yield Conn(session)
        finally:
            await c_write.aclose()
            tg.cancel_scope.cancel()


# -------------------------------------------------------------------------------------------- the raw peer


@contextlib.asynccontextmanager
async def raw_connection(
    server: Any, *, answer: RootsAnswer | None = None, capabilities: dict[str, Any] | None = None
) -> AsyncIterator[RawPeer]:
    """An initialised handshake-era connection to ``server`` (any flavour; protocol 2025-06-18, known to both
    majors); closing the client stream ends the server loop."""
    async with raw_peer.raw_connection(
        lowlevel_of(server), answer=answer, capabilities=capabilities, protocol="2025-06-18"
    ) as peer:
        yield peer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--debounce", type=float, default=0.05)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--fallback", nargs="*", default=None)
    args = parser.parse_args(argv)
    service = RootsService(debounce=args.debounce, timeout=args.timeout, fallback=args.fallback, warn_deprecated=False)
    server, _ = build(args.kind, service)
    lowlevel = lowlevel_of(server)

    async def run() -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
