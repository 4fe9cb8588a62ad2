"""Shared set-up for the seed examples: a client over a real stdio subprocess, and tool-call helpers."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from rootbound.mcp import RootsProvider

HERE = Path(__file__).parent
ERAS = ("legacy", "2026-07-28")  # the SDK Client's own mode= values for the handshake era and 2026-07-28


@contextlib.asynccontextmanager
async def stdio_client(script: str, provider: RootsProvider | None, mode: str, **options: Any) -> AsyncIterator[Client]:
    """An ``mcp.Client`` to ``tests/seeds/<script>`` run as a subprocess, roots from ``provider``."""
    params = StdioServerParameters(command=sys.executable, args=[str(HERE / script)])
    kwargs: dict[str, Any] = dict(provider.client_kwargs()) if provider is not None else {}
    with anyio.fail_after(60):
        async with Client(params, mode=mode, **kwargs, **options) as client:
            yield client


def text_of(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent), result
    return content.text


async def tool_text(client: Client, name: str, arguments: dict[str, Any] | None = None) -> str:
    result = await client.call_tool(name, arguments or {})
    assert not result.is_error, text_of(result)
    return text_of(result)


async def tool_error(client: Client, name: str, arguments: dict[str, Any] | None = None) -> str:
    result = await client.call_tool(name, arguments or {})
    assert result.is_error, text_of(result)
    return text_of(result)
