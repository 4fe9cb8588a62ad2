"""What ``make demo`` prints: headings, each tool call and its answer, coloured when the terminal is a TTY."""

from __future__ import annotations

import os
import sys
from typing import Any

import mcp_types as types

from mcp import Client, MCPError

__all__ = ["BOLD", "DIM", "GREEN", "RED", "RESET", "call", "heading"]

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
