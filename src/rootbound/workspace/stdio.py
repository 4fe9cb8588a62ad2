"""``rootbound serve`` over stdio."""

from __future__ import annotations

import contextlib
from typing import Any

__all__ = ["serve_stdio"]


def serve_stdio(server: Any) -> int:
    import anyio
    from mcp.server.stdio import stdio_server

    from ._deep_json import AnsweringTooDeep

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(AnsweringTooDeep(read, write), write, server.create_initialization_options())

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run)
    return 0
