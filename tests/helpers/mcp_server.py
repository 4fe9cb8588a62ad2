"""Real transports for server-side tests: in-memory, a stdio subprocess, and Streamable HTTP under uvicorn on
127.0.0.1 (stateful at ``/mcp``, stateless at ``/mcp-stateless``), plus a client-side roots source that counts
how many ``roots/list`` requests reached the client."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx2
import mcp_types as types
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Route

from mcp import Client
from tests.helpers.client_roots import ClientRoots

FIXTURES = Path(__file__).parent.parent / "fixtures"
EXAMPLES = Path(__file__).parents[2] / "examples"
TRANSPORTS = ("memory", "stdio", "http")


def http_app(server: Server[Any]) -> Starlette:
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=["127.0.0.1:*"], allowed_origins=["http://127.0.0.1:*"]
    )
    stateful = StreamableHTTPSessionManager(app=server, stateless=False, security_settings=security)
    stateless = StreamableHTTPSessionManager(app=server, stateless=True, security_settings=security)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with stateful.run(), stateless.run():
            yield

    return Starlette(
        routes=[
            Route("/mcp", endpoint=StreamableHTTPASGIApp(stateful)),
            Route("/mcp-stateless", endpoint=StreamableHTTPASGIApp(stateless)),
        ],
        lifespan=lifespan,
    )


def stdio_params(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(FIXTURES / "roots_server.py"), *args])


@contextlib.asynccontextmanager
async def connect(
    transport: str,
    server: Server[Any],
    *,
    mode: str = "legacy",
    roots: ClientRoots | None = None,
    stdio_args: Sequence[str] = (),
    http_base: str | None = None,
    path: str = "/mcp",
) -> AsyncIterator[Client]:
    """A real ``mcp.Client`` to ``server`` over ``transport`` (for stdio, a subprocess of the fixture)."""
    callback = roots.callback if roots is not None else None
    target: Any
    if transport == "memory":
        target = server
    elif transport == "stdio":
        target = stdio_params(*stdio_args)
    elif transport == "http":
        assert http_base is not None
        # httpx's default pool (100 connections) deadlocks 100 concurrent calls: each holds its POST's SSE
        # stream open while the client needs one more connection to answer roots/list. A bigger pool is the
        # host's fix, not the server's.
        http = httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300), limits=httpx2.Limits(max_connections=1000))
        async with (
            http,
            Client(
                streamable_http_client(http_base + path, http_client=http),
                mode=mode,
                list_roots_callback=callback,
            ) as client,
        ):
            yield client
        return
    else:  # pragma: no cover
        raise ValueError(transport)
    async with Client(target, mode=mode, list_roots_callback=callback) as client:
        yield client


def first_text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` fresh (examples are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
