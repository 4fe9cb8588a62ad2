"""An ASGI app under uvicorn on an ephemeral 127.0.0.1 port, for tests on either SDK major (imports no SDK)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import anyio
import uvicorn

__all__ = ["serve_http"]


@contextlib.asynccontextmanager
async def serve_http(app: Any) -> AsyncIterator[str]:
    """Run an ASGI app under uvicorn on an ephemeral 127.0.0.1 port; yields the base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: server.serve(sockets=[sock]))
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
