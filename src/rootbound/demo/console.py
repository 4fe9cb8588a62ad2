"""What ``make demo`` prints: headings, each tool call and its answer, coloured when the terminal is a TTY."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp import Client, MCPError

__all__ = ["BOLD", "DIM", "GREEN", "RED", "RESET", "call", "heading", "served"]

BOLD, DIM, GREEN, RED, RESET = ("\033[1m", "\033[2m", "\033[32m", "\033[31m", "\033[0m")
if not sys.stdout.isatty() or os.environ.get("NO_COLOR"):
    BOLD = DIM = GREEN = RED = RESET = ""


def heading(text: str) -> None:
    print(f"\n{BOLD}== {text}{RESET}")


async def call(client: Client, tool: str, **arguments: Any) -> None:
    shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    print(f"{DIM}> {tool}({shown}){RESET}")
    try:
        result = await client.call_tool(tool, arguments)
    except MCPError as error:
        print(f"  {RED}JSON-RPC error {error.code}: {error.message}{RESET}")
        return
    colour = RED if result.is_error else ""
    for content in result.content:
        if isinstance(content, types.TextContent):
            for line in content.text.splitlines() or [""]:
                print(f"  {colour}{line}{RESET if colour else ''}")
        elif isinstance(content, (types.ImageContent, types.AudioContent)):
            kind = "image" if isinstance(content, types.ImageContent) else "audio"
            print(f"  {GREEN}[{kind} content: {content.mime_type}, {len(content.data)} base64 characters]{RESET}")


_SHOWN: list[str] = []


@contextlib.asynccontextmanager
async def served(params: StdioServerParameters, **client: Any) -> AsyncIterator[Client]:
    """A client on the server ``params`` starts, whose stderr (what a host keeps as the server's log) is held back
    rather than written into the middle of a section (issue 50 item 8): after the session, its start-up line is
    shown once for the whole demo, and anything else it said every time."""
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
        try:
            async with Client(stdio_client(params, errlog=log), **client) as session:
                yield session
        finally:
            log.seek(0)
            said = log.read().splitlines()
            start, rest = said[:1], said[1:]
            if start and not _SHOWN:
                _SHOWN.append(start[0])
                print(f"  {DIM}(the server's log, stderr, once: {start[0]}){RESET}")
            for line in rest:
                print(f"  {RED}server log: {line}{RESET}")
