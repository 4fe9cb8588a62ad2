# mypy: ignore-errors
# Runs in .deps/frameworks/fastmcp (tests/judges/frameworks/test_docs_snippets.py); docs/client.md shows it.
import sys

import anyio
from fastmcp import Client

from rootbound.mcp import RootsProvider


async def main(target: str, project: str, docs: str) -> None:
    provider = RootsProvider([project])
    async with Client(target, roots=provider.roots_handler()) as client:  # any transport, any mode=
        print((await client.call_tool("list_roots", {})).content[0].text)
        await provider.set_roots([docs])  # the next answer; handshake-era servers get list_changed
        print((await client.call_tool("list_roots", {})).content[0].text)


anyio.run(main, *sys.argv[1:])
