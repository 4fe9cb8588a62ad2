"""Shared set-up for the seed examples: a client over a real stdio subprocess, and tool-call helpers.

Both SDK majors: on mcp 2.x the SDK's ``Client`` (either era); on mcp 1.x a ``ClientSession`` with the provider's
``session_kwargs()`` (handshake era only, so :data:`ERAS` is ``("legacy",)`` there and 2026-07-28-only tests are
marked :data:`needs_2026`). :func:`seed` names the server script for this major (``v1_*.py`` where the 1.x
lowlevel ``Server`` is written differently).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters

from rootbound.mcp import RootsProvider
from rootbound.mcp._sdk_major import MCP_V2

if MCP_V2:
    from mcp import Client
else:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client as sdk_stdio_client

HERE = Path(__file__).parent
ERAS = ("legacy", "2026-07-28") if MCP_V2 else ("legacy",)  # the SDK Client's own mode= values
V1_SCRIPTS = ("snodo_server.py", "cpp_server.py")

needs_2026 = pytest.mark.skipif(not MCP_V2, reason="2026-07-28 needs mcp>=2.3 (mcp 1.x speaks the handshake era)")


def seed(script: str) -> str:
    """The seed server script for the installed SDK major."""
    return script if MCP_V2 or script not in V1_SCRIPTS else f"v1_{script}"


class SessionClient:
    """mcp 1.x: the part of mcp 2.x's ``Client`` the seed tests use, over a ``ClientSession``."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.session.call_tool(name, arguments)


@contextlib.asynccontextmanager
async def stdio_client(script: str, provider: RootsProvider | None, mode: str, **options: Any) -> AsyncIterator[Any]:
    """A client to ``tests/seeds/<script>`` (this major's variant) run as a subprocess, roots from ``provider``."""
    params = StdioServerParameters(command=sys.executable, args=[str(HERE / seed(script))], env=dict(os.environ))
    with anyio.fail_after(60):
        if MCP_V2:
            kwargs: dict[str, Any] = dict(provider.client_kwargs()) if provider is not None else {}
            async with Client(params, mode=mode, **kwargs, **options) as client:
                yield client
        else:
            assert mode == "legacy", "mcp 1.x speaks the handshake era only"
            session_kwargs: dict[str, Any] = dict(provider.session_kwargs()) if provider is not None else {}
            options.pop("log_level", None)  # FastMCP 1.x has no logging/setLevel: it sends every level anyway
            async with (
                sdk_stdio_client(params) as (read, write),
                ClientSession(read, write, **session_kwargs, **options) as session,
            ):
                await session.initialize()
                yield SessionClient(session)


def _wire(result: Any) -> dict[str, Any]:
    wire: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return wire


def text_of(result: Any) -> str:
    content = _wire(result)["content"][0]
    assert content["type"] == "text", result
    return str(content["text"])


async def tool_text(client: Any, name: str, arguments: dict[str, Any] | None = None) -> str:
    result = await client.call_tool(name, arguments or {})
    assert _wire(result).get("isError") is not True, text_of(result)
    return text_of(result)


async def tool_error(client: Any, name: str, arguments: dict[str, Any] | None = None) -> str:
    result = await client.call_tool(name, arguments or {})
    assert _wire(result).get("isError") is True, text_of(result)
    return text_of(result)
