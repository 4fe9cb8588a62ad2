"""The FastMCP 1.x server example for README / docs/server.md (mcp 1.x, handshake era), run as a stdio subprocess
by ``test_server_docs_example.py``. Everything below the marker is the docs example, verbatim."""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: this worktree's src first
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "src"))

# --- the docs example, verbatim from here ---
from mcp.server.fastmcp import FastMCP

from rootbound import RootedFS
from rootbound.mcp import RootsService, tool_errors

service = RootsService()  # roots/list on the tool call's own stream, cached per connection
app = service.install(FastMCP("files"))


@app.tool()
async def read_file(path: str) -> str:
    """Read a text file inside the client's roots."""
    with tool_errors(), await service.boundary() as boundary:  # the roots of the request being handled
        return RootedFS(boundary).read_text(path, max_size=1 << 20)


if __name__ == "__main__":
    app.run("stdio")
