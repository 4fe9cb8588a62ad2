"""A client on mcp 1.x: a ``ClientSession`` whose roots come from a ``RootsProvider`` (the handshake era).

``python examples/v1_client_session.py PROJECT_DIR DOCS_DIR`` starts ``examples/v1_fastmcp_server.py`` over stdio,
reads ``README.md`` from the project, then narrows the roots to the docs directory mid-session: the server hears
``notifications/roots/list_changed`` and the same read is refused. Needs ``mcp>=1.24,<2``; run by
``tests/mcp/v1/test_examples_v1.py``.
"""

import sys
from pathlib import Path

import anyio
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

from mcp import ClientSession, StdioServerParameters
from rootbound.mcp import RootsProvider

SERVER = Path(__file__).with_name("v1_fastmcp_server.py")


def text(result: CallToolResult) -> str:
    return " ".join(block.text for block in result.content if block.type == "text") + f" | error: {result.isError}"


async def main(project: str, docs: str) -> None:
    provider = RootsProvider([project])  # paths, file: URIs or rootbound.Root
    server = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with (
        stdio_client(server) as (read, write),
        ClientSession(read, write, **provider.session_kwargs()) as session,
    ):
        await session.initialize()  # declares roots: {"listChanged": true}
        readme = str(Path(project) / "README.md")
        first = await session.call_tool("read", {"path": readme})
        print("inside:", text(first))
        await provider.set_roots([docs])  # reaches every live session: list_changed goes out
        await provider.flush()
        again = await session.call_tool("read", {"path": readme})
        print("after narrowing:", text(again))


if __name__ == "__main__":  # python v1_client_session.py ~/projects/app ~/projects/app/docs
    anyio.run(main, sys.argv[1], sys.argv[2])
