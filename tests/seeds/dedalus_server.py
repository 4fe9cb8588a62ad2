"""Dedalus MCP's roots examples, written on rootbound (an ``MCPServer`` run as a stdio subprocess; on mcp 1.x the
same code on ``FastMCP``).

Dedalus: ``server.roots.refresh(session)``, ``server.roots.snapshot(session)``, ``server.roots.guard(session)
.within(path)``, and example tools ``list_roots``, ``safe_read``, ``find_projects`` and a scoped search that
reports progress with ``ctx.info`` / ``ctx.debug``. Here: ``service.roots(ctx)`` / ``refresh`` / ``snapshot``,
and a ``RootedFS`` over ``service.boundary(ctx)``, whose every file operation opens beneath a held root (no
lexical ``within`` check).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TypeAlias

if __name__ == "__main__":  # run as a script: this worktree's src first
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from rootbound import RootedFS
from rootbound.mcp import RootsService, tool_errors
from rootbound.mcp._sdk_major import MCP_V2

if MCP_V2:
    from mcp.server.mcpserver import Context, MCPServer

    Ctx: TypeAlias = Context
else:  # mcp 1.x: FastMCP is the same decorator framework (handshake era only)
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as MCPServer

    Ctx: TypeAlias = Context[Any, Any, Any]

service = RootsService(debounce=0.05, warn_deprecated=False)
app = service.install(MCPServer("dedalus-seed"))


@app.tool()
async def list_roots(ctx: Ctx) -> str:
    """Every root the client shared: URI and name, one JSON object per line."""
    roots = await service.roots(ctx)
    return "\n".join(json.dumps({"uri": root.uri, "name": root.name}) for root in roots)


@app.tool()
async def snapshot_roots(ctx: Ctx) -> str:
    """Dedalus's synchronous snapshot: what is cached, never a fetch (``null`` before the first one)."""
    snapshot = service.snapshot(ctx)
    return json.dumps(None if snapshot is None else list(snapshot.uris))


@app.tool()
async def refresh_roots(ctx: Ctx) -> str:
    """Dedalus's ``refresh``: fetch now even if cached."""
    return json.dumps(list((await service.refresh(ctx)).uris))


@app.tool()
async def safe_read(path: str, ctx: Ctx) -> str:
    """Read a text file, only if it is inside the client's roots (a denial says why, never echoing the path)."""
    with await service.boundary(ctx) as boundary, tool_errors():
        return RootedFS(boundary).read_text(path, max_size=1 << 20)


@app.tool()
async def find_projects(ctx: Ctx, marker: str = "pyproject.toml") -> str:
    """Directories under the roots that hold ``marker`` (a project marker file), sorted, one per line."""
    with await service.boundary(ctx) as boundary, tool_errors():
        fs = RootedFS(boundary)
        found = {str(path.parent) for root in boundary.roots for path in fs.search(marker, root.path).paths}
    return "\n".join(sorted(found))


@app.tool()
async def search(query: str, ctx: Ctx) -> str:
    """Names containing ``query`` in each root, reporting progress through MCP logging as it goes."""
    lines: list[str] = []
    with await service.boundary(ctx) as boundary, tool_errors():
        fs = RootedFS(boundary)
        await ctx.info(f"searching {len(boundary.roots)} roots")
        for index, root in enumerate(boundary.roots, 1):
            await ctx.debug(f"root {index}/{len(boundary.roots)}")
            hits = fs.search(f"*{query}*", root.path)
            lines.extend(hits.found)
            await ctx.info(f"root {index}/{len(boundary.roots)}: {len(hits.found)} matches")
    return "\n".join(sorted(lines))


if __name__ == "__main__":
    app.run("stdio")
