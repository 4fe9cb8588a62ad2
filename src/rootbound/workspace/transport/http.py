"""``rootbound serve --http``: one Streamable HTTP endpoint for both eras, on a socket we bind ourselves."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rootbound.search.index.registry import close_all
from rootbound.search.scan_helper import close_helpers
from rootbound.workspace.limits.answer_budget import AnswerMeter
from rootbound.workspace.limits.slow_clients import ConnectionLimits, guarded_protocol
from rootbound.workspace.sessions import SessionGuard, SessionLimits, session_manager
from rootbound.workspace.transport.deep_json import DepthGuard
from rootbound.workspace.transport.host_origin import ExactHosts

if TYPE_CHECKING:
    from mcp.server.auth.provider import TokenVerifier

    from rootbound.workspace.sandbox import Sandbox

__all__ = ["HttpListen", "http_app", "is_loopback", "serve_http"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address) is reachable only from this machine; a name other than localhost is not."""
    import ipaddress

    bare = host.strip("[]")
    if bare == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def http_app(
    server: Any,
    *,
    allowed_hosts: Sequence[str],
    token_verifier: TokenVerifier | None = None,
    resource_server_url: str | None = None,
    resource_metadata_url: str | None = None,
    public_routes: Sequence[Any] = (),
    sessions: SessionLimits | None = None,
) -> Any:
    """One Streamable HTTP endpoint at ``/mcp`` for both eras (2026-07-28 requests are always stateless).

    With ``token_verifier`` every request needs an ``Authorization: Bearer`` token it accepts (``auth.py``);
    ``public_routes`` (e.g. the SDK's ``create_protected_resource_routes``) are served without one.
    """
    from mcp.server.streamable_http_manager import DEFAULT_MAX_REQUEST_BODY_SIZE
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    hosts = list(allowed_hosts)
    origins = [f"http://{h}" for h in hosts] + [f"https://{h}" for h in hosts]
    # Host and Origin are checked by ExactHosts below (whole values, not the SDK's prefixes); the SDK keeps its
    # Content-Type check.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    limits = sessions or SessionLimits()  # issue 16 #6: cap, idle timeout, uninitialised sessions reaped
    manager = session_manager(server, limits, security_settings=security)
    guard = SessionGuard(manager, limits)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with manager.run(), guard.running():
                yield
        finally:  # uvicorn re-raises SIGTERM once it has served: nothing after it runs
            close_helpers()  # none outlives the server holding its stderr
            close_all()  # the search index's cache folders

    # DepthGuard: issue 16 #12; AnswerMeter: answers being sent count against the answer budget (issue 24 #4)
    endpoint = ExactHosts(
        AnswerMeter(DepthGuard(guard, max_body=DEFAULT_MAX_REQUEST_BODY_SIZE)), hosts=hosts, origins=origins
    )
    routes = [Route("/mcp", endpoint=endpoint), *public_routes]
    app = Starlette(routes=routes, lifespan=lifespan)
    if token_verifier is None:
        return app
    from rootbound.workspace.transport.auth import require_bearer

    return require_bearer(
        app,
        token_verifier,
        resource_server_url=resource_server_url,
        resource_metadata_url=resource_metadata_url,
        public_paths={route.path for route in public_routes},
    )


SHUTDOWN_GRACE = 2
ACCEPT_BATCH = 128
"""The listen backlog, which is also how many connections asyncio accepts in one go (see serve_http)."""
"""Seconds SIGTERM/SIGINT leave in-flight requests to finish before the process exits regardless."""


@dataclass(frozen=True)
class HttpListen:
    """Where ``rootbound serve --http`` listens (``port`` 0: any free one) and the extra ``Host`` headers it
    accepts (``--allowed-host``)."""

    host: str
    port: int
    extra_hosts: Sequence[str] = ()


def serve_http(
    server: Any,
    listen: HttpListen,
    *,
    sandbox: Sandbox | None = None,
    token_verifier: TokenVerifier | None = None,
    policy: str = "",
    sessions: SessionLimits | None = None,
    connections: ConnectionLimits | None = None,
) -> int:
    """Serve until stopped; ``policy`` (what clients will be allowed) ends the one startup line."""
    host, port, extra_hosts = listen.host, listen.port, listen.extra_hosts
    import os
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
    hosts = [f"{shown}:{port}"]  # the port compared too (issue 48 #12): another local port is another server
    if bare in ("127.0.0.1", "localhost", "::1"):
        hosts += [f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"]
    hosts += list(extra_hosts)
    app = http_app(server, allowed_hosts=hosts, token_verifier=token_verifier, sessions=sessions)
    # log_config=None: uvicorn's records reach the root logger's rate-limited handler instead of its own.
    # The guarded h11 protocol: a connection cap and read deadlines a stalled client cannot outlast (issue 33 #3).
    config = uvicorn.Config(
        app,
        log_level="warning",
        log_config=None,
        lifespan="on",
        timeout_graceful_shutdown=SHUTDOWN_GRACE,
        http=guarded_protocol(connections or ConnectionLimits()),
        # asyncio accepts up to `backlog` connections per wake-up before any is refused or closed: a small batch
        # keeps a burst from taking thousands of fds at once (the rest wait in the kernel's queue, not our table).
        backlog=ACCEPT_BATCH,
    )
    web = uvicorn.Server(config)
    status = "off"
    if sandbox is not None:  # after bind (the port is known) and before any thread starts
        from rootbound.workspace.sandbox import SandboxError

        try:
            status = sandbox.apply(port)
        except SandboxError as error:
            sock.close()
            print(f"rootbound serve: cannot sandbox: {error} (--no-sandbox to serve without)", file=sys.stderr)
            return 2
    auth = "bearer token" if token_verifier is not None else "none"

    async def exit_when_stuck() -> None:
        # uvicorn's graceful shutdown is bounded, but the lifespan then waits for the session manager's task
        # group, which waits for tool work running in worker threads (not cancellable): a long scan would hold
        # SIGTERM off until it ends. Past the grace period the process exits without waiting for it.
        while not web.should_exit:  # noqa: ASYNC110 - uvicorn exposes no event
            await anyio.sleep(0.05)
        await anyio.sleep(SHUTDOWN_GRACE + 1.0)
        close_helpers()
        close_all()
        sys.stderr.flush()
        os._exit(0)

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(exit_when_stuck)

            async def serve_then_stop() -> None:
                await web.serve(sockets=[sock])
                tg.cancel_scope.cancel()

            tg.start_soon(serve_then_stop)
            while not web.started and not web.should_exit:  # noqa: ASYNC110 - uvicorn exposes no event
                await anyio.sleep(0.01)
            # Printed once listening, with the bound port: a supervisor (or a test) can wait for this line.
            print(
                f"rootbound serve: Streamable HTTP on http://{shown}:{port}/mcp (auth: {auth}; sandbox: {status})"
                + (f"; {policy}" if policy else ""),
                file=sys.stderr,
                flush=True,
            )

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run)
    # Worker threads still busy with abandoned tool work are not daemons: leave without joining them.
    close_helpers()
    close_all()
    sys.stderr.flush()
    os._exit(0)
