"""The ``rootbound`` command line: ``rootbound serve``, a roots-confined workspace MCP server."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from . import __version__

SERVE_HELP = """\
Serve the files under the client's roots as MCP tools, confined at open time.

Root policy (DIRs are the operator's allowlist; a client root is a claim, not a grant):
  DIRs given, client declares roots   effective roots = client roots ∩ DIRs (narrowed, never widened)
  DIRs given, client declares none    effective roots = DIRs
  no DIRs,    client declares roots   effective roots = client roots; a root of / is refused
  no DIRs,    client declares none    every tool answers -32021 (missing roots capability)

Tools: list_roots, list_directory, read_file, stat, search_files, grep, find_projects, and write_file
(only with --writable). Paths are absolute, file:// URIs, or relative to the first root. A denied path is a
tool error naming the reason class, never echoing the input.

Transports: stdio (default), or Streamable HTTP with --http HOST:PORT at /mcp, serving both eras on one
endpoint: stateless 2026-07-28 requests and stateful handshake-era sessions (sticky routing needed behind a
load balancer; see docs/deploy.md).
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rootbound", description="MCP Roots done right.")
    parser.add_argument("--version", action="version", version=f"rootbound {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="serve a roots-confined workspace over MCP",
        description=SERVE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("dirs", nargs="*", metavar="DIR", type=Path, help="operator allowlist directories")
    serve.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP at http://HOST:PORT/mcp")
    serve.add_argument("--writable", action="store_true", help="offer write_file (atomic, never follows links)")
    serve.add_argument(
        "--state-key-env",
        metavar="NAME",
        help="environment variable holding the requestState key(s): comma-separated, newest first, each at "
        "least 32 bytes (default: a per-process key). Instances behind one load balancer share them so any of "
        "them can verify state another sealed; today's tools finish in two rounds and carry no state between "
        "instances, so this matters for state-carrying rounds and key rotation",
    )
    serve.add_argument(
        "--max-read", metavar="BYTES", type=int, default=1024 * 1024, help="largest read per call (default 1 MiB)"
    )
    serve.add_argument(
        "--roots-timeout", metavar="SECONDS", type=float, default=10.0, help="wait for roots/list (default 10)"
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="extra Host header value to accept over HTTP (behind a proxy); the bind address is always accepted",
    )
    serve.add_argument("--log-level", default="WARNING", help="stderr log level (default WARNING)")
    return parser


def _fail(message: str) -> int:
    print(f"rootbound serve: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "serve":
        return serve(args)
    return _fail("unknown command")  # pragma: no cover - argparse rejects it first


def serve(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    dirs: list[Path] = []
    for raw in args.dirs:
        path = Path(os.path.expanduser(str(raw))).resolve()  # operator input: ~ is expanded here, and only here
        if not path.exists():
            return _fail(f"DIR does not exist: {raw}")
        dirs.append(path)
    keys: tuple[bytes, ...] = ()
    if args.state_key_env:
        value = os.environ.get(args.state_key_env)
        if not value:
            return _fail(f"environment variable {args.state_key_env} is not set")
        keys = tuple(part.strip().encode() for part in value.split(",") if part.strip())
        if any(len(key) < 32 for key in keys):
            return _fail("each requestState key must be at least 32 bytes")
    if args.max_read <= 0:
        return _fail("--max-read must be positive")

    from .mcp.server import SILENCE_ENV
    from .workspace.server import WorkspaceConfig, build_workspace_server
    from .workspace.tools import Limits

    os.environ.setdefault(SILENCE_ENV, "1")  # the server's stderr is a host's log: say it once in --help instead
    config = WorkspaceConfig(
        dirs=tuple(dirs),
        writable=args.writable,
        limits=Limits(max_read=args.max_read),
        state_keys=keys,
        roots_timeout=args.roots_timeout,
    )
    server, _service = build_workspace_server(config)
    if args.http:
        host, _, port = args.http.rpartition(":")
        if not host or not port.isdigit():
            return _fail("--http takes HOST:PORT")
        return _serve_http(server, host, int(port), args.allowed_host)
    return _serve_stdio(server)


def _serve_stdio(server: Any) -> int:
    import anyio
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run)
    return 0


def http_app(server: Any, *, allowed_hosts: Sequence[str]) -> Any:
    """One Streamable HTTP endpoint at ``/mcp`` for both eras (modern requests are always stateless)."""
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


def _serve_http(server: Any, host: str, port: int, extra_hosts: Sequence[str]) -> int:
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
        return _fail(f"cannot listen on {host}:{port} ({error.strerror})")
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


if __name__ == "__main__":
    sys.exit(main())
