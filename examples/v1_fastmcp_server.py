"""The README's server on mcp 1.x: FastMCP 1.x's ``FastMCP`` with ``RootsService`` (the handshake era).

A tool reads a file confined to the client's roots. Run over stdio: ``python examples/v1_fastmcp_server.py`` in an
environment with ``mcp>=1.24,<2`` (for instance beside langchain-mcp-adapters). ``tests/mcp/v1/test_examples_v1.py``
runs it with ``examples/v1_client_session.py`` in the mcp 1.x venv.
"""

from __future__ import annotations

from mcp.server.fastmcp import Context, FastMCP

from rootbound import RootedFS
from rootbound.mcp import RootsService, tool_errors

service = RootsService()
app = service.install(FastMCP("indexer"))


@app.tool()
async def read(ctx: Context, path: str) -> str:  # type: ignore[type-arg]
    """A file inside the client's roots."""
    with await service.boundary(ctx) as boundary, tool_errors():  # this request's roots, held open
        return RootedFS(boundary).read_text(path)  # opened beneath a root fd, or denied (and why)


@app.tool()
async def list_roots(ctx: Context) -> list[str]:  # type: ignore[type-arg]
    """The client's roots, as file: URIs."""
    return list((await service.roots(ctx)).uris)


if __name__ == "__main__":
    app.run("stdio")  # a host starts it: python v1_fastmcp_server.py
