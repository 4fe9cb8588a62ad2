"""The README's ten-line client: roots from a RootsProvider, changed mid-session.

``python examples/readme_client.py URL_OR_NOTHING``: without an argument it starts ``rootbound serve`` over stdio.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from rootbound.mcp import RootsProvider


async def main(target: Any, project: Path, docs: Path) -> list[str]:
    provider = RootsProvider([project])  # paths, file: URIs or rootbound.Root
    seen = []
    async with Client(target, **provider.client_kwargs()) as client:
        seen.append(str((await client.call_tool("list_roots", {})).content[0]))
        await provider.add(docs)  # the next answer, on every live session
        await provider.remove(project)  # handshake-era servers get list_changed
        seen.append(str((await client.call_tool("list_roots", {})).content[0]))
    return seen


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        project, docs = Path(tmp, "project"), Path(tmp, "docs")
        project.mkdir()
        docs.mkdir()
        target: Any = (
            sys.argv[1]
            if len(sys.argv) > 1
            else StdioServerParameters(command=sys.executable, args=["-m", "rootbound", "serve", tmp])
        )
        for line in anyio.run(main, target, project, docs):
            print(line)
