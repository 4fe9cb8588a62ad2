"""``rootbound serve``: its flags, the checks on operator input, and the choice of transport."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["SERVE_HELP", "add_parser", "run"]

SERVE_HELP = """\
Serve the files under the client's roots as MCP tools, confined at open time.

Root policy (DIRs are the operator's allowlist; a client root is a claim, not a grant):
  DIRs given, client declares roots   effective roots = client roots ∩ DIRs (narrowed, never widened)
  DIRs given, client declares none    effective roots = DIRs
  no DIRs,    client declares roots   effective roots = client roots; a root of / is refused
  no DIRs,    client declares none    every tool answers -32021 (missing roots capability)

Tools: list_roots, list_directory, read_file, stat, search_files, grep, find_projects; with --writable also
edit_file (with a diff), write_file, create_directory, move_file and delete_file. Paths are absolute, file://
URIs, or relative to the first root. A denied path is a tool error naming the reason class, never echoing the
input.

Transports: stdio (default), or Streamable HTTP with --http HOST:PORT at /mcp, serving both eras on one
endpoint: stateless 2026-07-28 requests and stateful handshake-era sessions (sticky routing needed behind a
load balancer; see docs/deploy.md).
"""


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``serve`` to the top-level subcommands (``commands`` is argparse's subparsers action)."""
    serve: argparse.ArgumentParser = commands.add_parser(
        "serve",
        help="serve a roots-confined workspace over MCP",
        description=SERVE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("dirs", nargs="*", metavar="DIR", type=Path, help="operator allowlist directories")
    serve.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP at http://HOST:PORT/mcp")
    serve.add_argument(
        "--writable",
        action="store_true",
        help="offer the writing tools (edit_file, write_file, create_directory, move_file, delete_file)",
    )
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
    return serve


def _fail(message: str) -> int:
    print(f"rootbound serve: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
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

    from ..mcp.server import SILENCE_ENV
    from .server import WorkspaceConfig, build_workspace_server
    from .tools import Limits

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
        from .http import serve_http

        return serve_http(server, host, int(port), args.allowed_host)
    from .stdio import serve_stdio

    return serve_stdio(server, exit_process=True)
