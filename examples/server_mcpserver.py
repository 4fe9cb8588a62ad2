"""An ``MCPServer`` tool that sees the client's roots, in every protocol revision.

Run over stdio: ``python examples/server_mcpserver.py``.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

from rootbound.mcp import RootsService

service = RootsService()
app = service.install(MCPServer("roots-mcpserver"))


@app.tool()
async def workspace_roots(ctx: Context) -> str:
    """The client's roots."""
    roots = await service.roots(ctx)
    return "\n".join(roots.uris)


if __name__ == "__main__":
    app.run("stdio")
