"""``rootbound serve --http``: one Streamable HTTP endpoint for both eras, on a socket we bind ourselves."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

__all__ = ["http_app", "serve_http"]


def http_app(server: Any, *, allowed_hosts: Sequence[str]) -> Any:
    """One Streamable HTTP endpoint at ``/mcp`` for both eras (2026-07-28 requests are always stateless)."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    hosts = list(allowed_hosts)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{h}" for h in hosts] + [f"https://{h}" for h in hosts],
    )
    manager = StreamableHTTPSessionManager(app=server, stateless=False, security_settings=security)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=[Route("/mcp", endpoint=StreamableHTTPASGIApp(manager))], lifespan=lifespan)


def serve_http(server: Any, host: str, port: int, extra_hosts: Sequence[str]) -> int:
    import socket

    import anyio
    import uvicorn

    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    # IPPROTO_TCP, not 0: accepted sockets inherit the protocol, and asyncio disables Nagle only on sockets that
    # say TCP. Without it uvicorn's separate header and body writes meet the peer's delayed ACK: ~40 ms a response.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bare, port))
    except OSError as error:
        sock.close()
        print(f"rootbound serve: cannot listen on {host}:{port} ({error.strerror})", file=sys.stderr)
        return 2
    port = sock.getsockname()[1]  # the real port when 0 was asked for
    shown = f"[{bare}]" if family == socket.AF_INET6 else bare
    hosts = [f"{shown}:{port}", f"{shown}:*"]
    if bare in ("127.0.0.1", "localhost", "::1"):
        hosts += [f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"]
    hosts += list(extra_hosts)
    app = http_app(server, allowed_hosts=hosts)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: web.serve(sockets=[sock]))
            while not web.started and not web.should_exit:  # noqa: ASYNC110 - uvicorn exposes no event
                await anyio.sleep(0.01)
            # Printed once listening, with the bound port: a supervisor (or a test) can wait for this line.
            print(f"rootbound serve: Streamable HTTP on http://{shown}:{port}/mcp", file=sys.stderr, flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run)
    return 0
