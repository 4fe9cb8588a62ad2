"""``rootbound serve`` over stdio."""

from __future__ import annotations

import contextlib
from typing import Any

__all__ = ["serve_stdio"]


def serve_stdio(server: Any) -> int:
    """Serve until stdin closes. Pipes and sockets (what MCP hosts use) go through the event-loop transport of
    :mod:`._stdio_transport`; anything else (a terminal, a regular file) through the SDK's thread-backed one."""
    import anyio

    from ._stdio_transport import pipe_streams, servable

    async def run() -> None:
        if servable():
            async with pipe_streams() as (read, write):
                await server.run(read, write, server.create_initialization_options())
            return
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run)
    return 0
