"""One check for every way a user installs ``rootbound serve``: start the command a host would start, over stdio,
with a real SDK client, and see it list its tools and read a file inside the DIR it was given (and refuse one
outside it)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import mcp_types as types
from mcp.client.stdio import StdioServerParameters

from mcp import Client

INSIDE = "inside.txt"
INSIDE_TEXT = "a line inside the DIR\n"


def make_workspace(base: Path) -> Path:
    """``base/ws`` with one file in it and a secret beside it (outside the DIR)."""
    workspace = base.resolve() / "ws"
    workspace.mkdir()
    (workspace / INSIDE).write_text(INSIDE_TEXT)
    (base / "secret.txt").write_text("outside the DIR\n")
    return workspace


@dataclass(frozen=True)
class Served:
    tools: frozenset[str]
    inside: str
    outside_refused: bool
    server_version: str | None


def _text(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def serve_and_read(
    command: str,
    args: Sequence[str],
    workspace: Path,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    deadline: float = 120,
) -> Served:
    """Start ``command args`` (which must serve ``workspace``) and drive it: ``tools/list``, a read inside, a read
    of the file beside the workspace. ``env`` replaces the environment (default: this one, warnings off)."""
    environment = dict(env) if env is not None else {**os.environ, "PYTHONWARNINGS": "ignore"}
    params = StdioServerParameters(command=command, args=list(args), env=environment, cwd=cwd)
    with anyio.fail_after(deadline):
        async with Client(params, mode="legacy") as client:
            tools = frozenset(tool.name for tool in (await client.list_tools()).tools)
            inside = await client.call_tool("read_file", {"path": str(workspace / INSIDE)})
            outside = await client.call_tool("read_file", {"path": str(workspace.parent / "secret.txt")})
            info = client.server_info
    assert not inside.is_error, _text(inside)
    return Served(
        tools=tools,
        inside=_text(inside),
        outside_refused=bool(outside.is_error) and "outside the DIR" not in _text(outside),
        server_version=info.version if info is not None else None,
    )
