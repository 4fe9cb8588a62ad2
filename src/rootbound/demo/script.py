"""``make demo``: a scripted, readable session against ``rootbound serve`` running as a real stdio subprocess.

It generates a small workspace, connects an ``mcp.Client`` whose roots come from a ``RootsProvider``, calls the
tools, tries to escape (and shows why that is denied), narrows the roots mid-session, then repeats the flow in
the 2026-07-28 era, where roots travel in an input-required round instead of a ``roots/list`` request.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import anyio
import mcp_types as types
from mcp.client.stdio import StdioServerParameters

from rootbound import Root
from rootbound.demo.console import BOLD, DIM, GREEN, RESET, call, heading, served
from rootbound.demo.writing import writable_session
from rootbound.mcp import RootsProvider


def _tiny_png() -> bytes:
    """A 2x1 PNG (one red, one green pixel), built here so the demo ships no binary files."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 2, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00\x00\xff\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def make_workspace(base: Path) -> tuple[Path, Path]:
    """A workspace with three projects and an outside secret reachable only through a planted symlink."""
    workspace = base / "workspace"
    app, lib, site = workspace / "app", workspace / "lib", workspace / "site"
    for directory in (app / "src", lib / "src", site, app / ".git", app / "node_modules" / "left-pad", app / "docs"):
        directory.mkdir(parents=True)
    (app / "pyproject.toml").write_text('[project]\nname = "app"\nversion = "0.1.0"\n')
    (app / "src" / "main.py").write_text(
        "".join(f"# line {n}\n" for n in range(1, 41))
        + 'def main() -> None:\n    # TODO: read the config\n    print("hello")\n'
    )
    (app / ".gitignore").write_text("node_modules/\n*.log\n")
    (app / "node_modules" / "left-pad" / "index.js").write_text("// TODO: vendored, and ignored by .gitignore\n")
    (app / "debug.log").write_text("TODO: a log line nobody wants in a search\n")
    (app / "docs" / "logo.png").write_bytes(_tiny_png())
    (lib / "Cargo.toml").write_text('[package]\nname = "lib"\nversion = "0.1.0"\n')
    (lib / "src" / "lib.rs").write_text(
        "// TODO: document the public API\npub fn add(a: i32, b: i32) -> i32 { a + b }\n"
    )
    (site / "package.json").write_text('{"name": "site", "version": "1.0.0"}\n')
    secret = base / "secret.txt"
    secret.write_text("the server's private key\n")
    (app / "notes.txt").symlink_to(secret)  # looks like a workspace file, leads outside
    return workspace, secret


def server_params(*dirs: Path) -> StdioServerParameters:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return StdioServerParameters(command=sys.executable, args=["-m", "rootbound", "serve", *map(str, dirs)], env=env)


async def handshake_session(workspace: Path, secret: Path, base: Path) -> None:
    app, lib = workspace / "app", workspace / "lib"
    provider = RootsProvider([Root.from_path(app, "App"), Root.from_path(lib, "Lib")])
    heading("Handshake era (2025-11-25): the client declares roots; the server asks with roots/list")
    print(f"operator allowlist: {base}   client roots: app/, lib/")
    async with served(server_params(base), mode="legacy", **provider.client_kwargs()) as client:
        await call(client, "list_roots")
        await call(client, "find_projects")
        heading("Reading for agents: a line range, an ignore-aware grep, an image")
        await call(client, "read_file", path="src/main.py", start_line=41, end_line=43)
        await call(client, "grep", pattern="todo", ignore_case=True, path=str(app), context=1)
        print(
            f"  {DIM}(node_modules/ and *.log are in app/.gitignore: not searched; include_ignored=true would){RESET}"
        )
        await call(client, "read_media_file", path="docs/logo.png")
        await call(client, "directory_tree", path=".", max_depth=2)
        heading("Escape attempts: each is denied before anything outside is opened")
        await call(client, "read_file", path="notes.txt")
        await call(client, "read_file", path=str(secret))
        await call(client, "read_file", path="../../secret.txt")
        heading("The client narrows its roots to app/ (list_changed), then asks again under lib/")
        await provider.set_roots([Root.from_path(app, "App")])
        await provider.flush()
        await call(client, "list_roots")
        await call(client, "read_file", path=str(lib / "src" / "lib.rs"))


async def session_2026(workspace: Path) -> None:
    app = workspace / "app"
    provider = RootsProvider([Root.from_path(app, "App")])
    heading("2026-07-28 era: no session, no roots/list; roots arrive in an input-required round")
    async with served(server_params(workspace), mode="2026-07-28", **provider.client_kwargs()) as client:
        first = await client.session.call_tool("list_roots", {}, allow_input_required=True)
        if isinstance(first, types.InputRequiredResult) and first.input_requests:
            asked = {key: request.method for key, request in first.input_requests.items()}
            print(f"{DIM}> list_roots() round 1{RESET}")
            print(f"  server answered input_required, inputRequests = {asked}")
            print("  the client retries with inputResponses = {'roots': {'roots': [...]}}; mcp.Client does it:")
        await call(client, "list_roots")
        await call(client, "grep", pattern="TODO", path=str(app))
        await call(client, "read_file", path=str(workspace / "lib" / "Cargo.toml"))


async def run(base: Path) -> None:
    started = time.monotonic()
    workspace, secret = make_workspace(base)
    print(f"{BOLD}rootbound demo{RESET}: `rootbound serve` as a stdio subprocess, an mcp.Client with a RootsProvider")
    print(f"workspace: {workspace}")
    await handshake_session(workspace, secret, base)
    await session_2026(workspace)
    await writable_session(workspace, secret)
    print(f"\n{GREEN}done in {time.monotonic() - started:.1f} s{RESET}")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="rootbound-demo-") as tmp:
        try:
            anyio.run(run, Path(tmp).resolve())
        except KeyboardInterrupt:
            return 130
    return 0
