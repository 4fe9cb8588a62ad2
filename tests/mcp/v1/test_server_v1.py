"""RootsService on mcp 1.x only: what the handshake era on the 1.x SDK adds to the both-majors tests — the public
names import, the 2026-07-28-only API refuses with a typed error naming the SDK it needs, ``install`` is
idempotent and chains, ``tool_errors()`` in FastMCP 1.x tools, refusals outside a tool, and Streamable HTTP on
127.0.0.1 (stateful session delete, stateless without a back-channel)."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import McpError

import rootbound.mcp
from mcp import types
from rootbound.mcp import RootsService, tool_errors
from tests.helpers.uvicorn_serve import serve_http
from tests.mcp.both.server_harness import ClientRoots, Conn, build, connect, raw_connection

pytestmark = pytest.mark.anyio


def test_rootbound_mcp_and_its_server_names_import_on_mcp_1() -> None:
    module = importlib.import_module("rootbound.mcp")
    for name in ("ChangeCallback", "InputRequired", "RootsService", "mcp_error", "tool_errors"):
        assert getattr(module, name) is not None
    assert issubclass(rootbound.mcp.InputRequired, McpError)
    never_raised_here = rootbound.mcp.InputRequired()  # there is no 2026-07-28 on mcp 1.x; the name still works
    assert str(never_raised_here) == never_raised_here.error.message and never_raised_here.error.code == -32603


def test_2026_only_api_is_a_typed_error_naming_the_sdk_it_needs() -> None:
    with pytest.raises(RuntimeError) as info:
        RootsService(state_security=[b"k" * 32])
    assert "mcp>=2.3,<3" in str(info.value) and "2026-07-28" in str(info.value)
    service = RootsService(warn_deprecated=False)
    request = types.ListRootsRequest(method="roots/list")
    for call in (lambda: service.ask("confirm", request), service.require_inputs):
        with pytest.raises(RuntimeError) as info:
            call()
        assert type(info.value).__name__ == "RequiresMcp2"
        assert "mcp>=2.3,<3" in str(info.value) and "service.roots(ctx)" in str(info.value)


def test_roots_outside_a_request_says_where_to_call_it() -> None:
    with pytest.raises(RuntimeError, match="inside a request of a server it is installed on"):
        anyio.run(RootsService(warn_deprecated=False).roots)


async def test_install_is_idempotent_and_chains_an_existing_list_changed_handler() -> None:
    service = RootsService(warn_deprecated=False, debounce=0.05)
    server, _ = build("lowlevel", RootsService(warn_deprecated=False))  # a first service already installed
    lowlevel: Server[Any, Any] = server
    seen: list[Any] = []

    async def existing(notification: Any) -> None:
        seen.append(notification)

    lowlevel.notification_handlers[types.RootsListChangedNotification] = existing
    assert service.install(server) is server
    handler = lowlevel.notification_handlers[types.RootsListChangedNotification]
    handlers = dict(lowlevel.request_handlers)
    lifespan = lowlevel.lifespan
    assert service.install(server) is server  # twice: nothing more is wrapped or chained
    assert lowlevel.notification_handlers[types.RootsListChangedNotification] is handler
    assert lowlevel.request_handlers == handlers and lowlevel.lifespan is lifespan
    roots = ClientRoots(["file:///work/a"])
    async with connect("memory", server, roots) as client:
        await client.notify_changed()
        with anyio.fail_after(5):
            while not seen:
                await anyio.sleep(0.01)
    assert isinstance(seen[0], types.RootsListChangedNotification)


def fastmcp_app(service: RootsService, tmp: Path) -> FastMCP:
    app = FastMCP("v1-only")

    @app.tool()
    async def read(path: str, ctx: Context[Any, Any, Any]) -> str:
        with tool_errors(), await service.boundary(ctx) as boundary:
            return boundary.resolve(path).read_text()

    @app.tool()
    async def unguarded(path: str) -> str:
        with await service.boundary() as boundary:
            return boundary.resolve(path).read_text()

    @app.resource("roots://list")
    async def roots_resource() -> str:
        return "\n".join((await service.roots()).uris)

    service.install(app)
    return app


async def test_tool_errors_gives_a_fastmcp_1_tool_the_fixed_denial_text(tmp_path: Path) -> None:
    (tmp_path / "inside.txt").write_text("hello")
    (tmp_path.parent / "outside-secret.txt").write_text("secret")
    app = fastmcp_app(RootsService(warn_deprecated=False), tmp_path)
    async with connect("memory", app._mcp_server, ClientRoots([tmp_path.as_uri()])) as client:
        assert await client.text("read", path=str(tmp_path / "inside.txt")) == "hello"
        for tool in ("read", "unguarded"):
            is_error, text = await client.call(tool, path=str(tmp_path.parent / "outside-secret.txt"))
            assert is_error
            fixed = "path is outside the allowed roots (outside roots)"
            # tool_errors(): the fixed text alone; without it FastMCP 1.x names the tool in front of it
            assert text == (fixed if tool == "read" else f"Error executing tool unguarded: {fixed}")
            assert "secret" not in text and str(tmp_path) not in text  # never the caller's path


async def test_refusals_outside_a_tool_are_json_rpc_errors(tmp_path: Path) -> None:
    app = fastmcp_app(RootsService(warn_deprecated=False), tmp_path)
    async with connect("memory", app._mcp_server, None) as client:  # no roots capability
        with pytest.raises(McpError) as info:
            await client.session.read_resource("roots://list")  # type: ignore[arg-type]
    assert info.value.error.code == -32021
    failing = ClientRoots()
    failing.fail = True
    async with connect("memory", app._mcp_server, failing) as client:
        with pytest.raises(McpError) as info:
            await client.session.read_resource("roots://list")  # type: ignore[arg-type]
    assert info.value.error.code == -32603
    assert info.value.error.message == "roots are unavailable"


async def test_a_client_leaving_while_the_server_awaits_roots_list_ends_the_call_not_the_timeout() -> None:
    service = RootsService(warn_deprecated=False, timeout=30)
    server, _ = build("lowlevel", service)
    with anyio.fail_after(10):
        async with raw_connection(server, answer=None) as peer:
            await peer.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "roots"}})
            while peer.roots_requests == 0:
                item = await peer._read.receive()
                if item.message.model_dump().get("method") == "roots/list":
                    peer.roots_requests += 1
            assert service.cache_size == 1
        with anyio.fail_after(5):
            while service.cache_size:
                await anyio.sleep(0.01)


# ------------------------------------------------------------------------------------ Streamable HTTP


@contextlib.asynccontextmanager
async def http_server(stateless: bool, service: RootsService) -> AsyncIterator[str]:
    app = FastMCP(
        "v1-http",
        stateless_http=stateless,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @app.tool()
    async def roots() -> str:
        return "\n".join((await service.roots()).uris)

    service.install(app)
    async with serve_http(app.streamable_http_app()) as base:
        yield base + "/mcp"


@contextlib.asynccontextmanager
async def http_client(url: str, roots: ClientRoots | None) -> AsyncIterator[Conn]:
    callback = roots.callback if roots is not None else None
    async with (
        streamable_http_client(url) as (read, write, _),
        ClientSession(read, write, list_roots_callback=callback) as session,
    ):
        with anyio.fail_after(30):
            await session.initialize()
        yield Conn(session)


async def test_stateful_http_session_delete_drops_the_cache_entry() -> None:
    service = RootsService(warn_deprecated=False)
    async with http_server(False, service) as url:
        async with http_client(url, ClientRoots(["file:///work/h"])) as client:
            assert await client.text("roots") == "file:///work/h"
            assert service.cache_size == 1
        with anyio.fail_after(10):
            while service.cache_size:
                await anyio.sleep(0.01)


async def test_stateless_http_has_no_back_channel_and_says_so() -> None:
    service = RootsService(warn_deprecated=False)
    async with http_server(True, service) as url, http_client(url, ClientRoots()) as client:
        is_error, text = await client.call("roots")
    assert is_error
    assert text == (
        "roots are unavailable (no back-channel: stateless HTTP cannot carry roots/list; use a stateful session)"
    )
    fallback = RootsService(warn_deprecated=False, fallback=["/srv/allowed"])
    async with http_server(True, fallback) as url, http_client(url, ClientRoots()) as client:
        assert await client.text("roots") == "file:///srv/allowed"


async def test_handlers_registered_after_install_are_wired_too() -> None:
    """``@server.call_tool()`` after ``install``: the per-connection wiring still gives a -32021 its JSON-RPC form."""
    service = RootsService(warn_deprecated=False)
    server: Server[Any, Any] = Server("late")
    service.install(server)

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return [types.Tool(name="roots", inputSchema={"type": "object"})]

    @server.call_tool()  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        return [types.TextContent(type="text", text="\n".join((await service.roots()).uris))]

    async with connect("memory", server, None) as client:
        with pytest.raises(McpError) as info:
            await client.call("roots")
    assert info.value.error.code == -32021
    async with connect("memory", server, ClientRoots(["file:///work/late"])) as client:
        assert await client.text("roots") == "file:///work/late"
