"""A FastMCP 4 tool that sees the client's roots (``pip install 'rootbound[fastmcp]'``).

FastMCP 4 has no roots API of its own; ``RootsService.install`` wires rootbound into its lowlevel server.
Run over stdio: ``python examples/server_fastmcp.py``.
"""

from __future__ import annotations

from fastmcp import Context, FastMCP

from rootbound.mcp import RootsService

service = RootsService()
app = service.install(FastMCP("roots-fastmcp"))


@app.tool
async def workspace_roots(ctx: Context) -> str:
    """The client's roots."""
    roots = await service.roots(ctx)
    return "\n".join(roots.uris)


if __name__ == "__main__":
    app.run()
