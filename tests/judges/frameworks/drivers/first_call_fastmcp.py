# mypy: ignore-errors
# Runs in .deps/frameworks/fastmcp, against fastmcp's own SDK: not type-checked here.
"""fastmcp 4 ``Client`` with no roots (its default) on ``rootbound serve`` started without DIRs (issue 35 #2): what
the first ``read_file`` raises or answers, and what ``list_roots`` answers. ``python first_call_fastmcp.py MODE
COMMAND...``; prints one JSON line."""

from __future__ import annotations

import asyncio
import json
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport


async def main(mode: str, command: list[str]) -> None:
    out: dict[str, object] = {}
    async with Client(StdioTransport(command[0], command[1:]), mode=mode) as client:
        try:
            result = await client.call_tool("read_file", {"path": "notes.md"}, raise_on_error=False)
            out["read_file"] = {"is_error": result.is_error, "text": result.content[0].text}
        except Exception as error:  # what a user of fastmcp sees
            out["read_file"] = {"raised": type(error).__name__, "text": str(error)}
        listed = await client.call_tool("list_roots", {}, raise_on_error=False)
        out["list_roots"] = {"is_error": listed.is_error, "text": listed.content[0].text}
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
