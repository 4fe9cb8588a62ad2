"""The README's ten-line server: an MCPServer tool that reads a file confined to the client's roots.

``tests/docs/test_readme_runs.py`` checks that this file holds the README's block and runs the block as written.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

from rootbound import RootedFS
from rootbound.mcp import RootsService, tool_errors

service = RootsService()
app = service.install(MCPServer("indexer"))


@app.tool()
async def read(ctx: Context, path: str) -> str:
    with await service.boundary(ctx) as boundary, tool_errors():  # this request's roots, held open
        return RootedFS(boundary).read_text(path)  # opened beneath a root fd, or denied (and why)


if __name__ == "__main__":
    app.run("stdio")  # a host starts it: python server.py
