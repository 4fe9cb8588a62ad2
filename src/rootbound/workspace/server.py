"""The ``rootbound serve`` MCP server: workspace tools confined to the client's roots ∩ the operator's DIRs.

Root policy (``docs/server.md``):

===========================  ===========================  ==========================================
operator DIRs                client declares roots        effective roots
===========================  ===========================  ==========================================
given                        yes                          client roots ∩ DIRs (narrow, never widen)
given                        no                           DIRs
none                         yes                          client roots, but ``/`` is refused
none                         no                           none: tools answer ``-32021``
===========================  ===========================  ==========================================
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateSecurity

from .. import __version__
from ..boundary import Boundary
from ..fs import RootedFS
from ..mcp import RootsService
from ..roots import RootSet
from .tools import TOOLS, Limits, ToolError, run_tool

__all__ = ["WorkspaceConfig", "build_workspace_server"]

INSTRUCTIONS = (
    "File tools confined to your roots (intersected with the operator's directories). Paths may be absolute, "
    "file:// URIs, or relative to the first root. Start with list_roots or find_projects."
)


@dataclass(frozen=True)
class WorkspaceConfig:
    """What ``rootbound serve`` was started with."""

    dirs: tuple[Path, ...] = ()
    writable: bool = False
    limits: Limits = field(default_factory=Limits)
    state_keys: tuple[bytes, ...] = ()
    roots_timeout: float = 10.0
    sandbox: str = ""  # what the kernel sandbox enforces, for list_roots (workspace/sandbox.py)
    name: str = "rootbound-workspace"


class HeldBoundaries:
    """Roots are taken in once per snapshot and held open, so re-pointing a root's path cannot move it.

    The operator's DIRs are taken in at start and held for the life of the process. A client's roots snapshot (the
    ``RootSet`` the service cached for a connection, or a modern request's own) gets one :class:`Boundary`, held
    as long as the snapshot lives. A root whose path stops naming the held directory (deleted, moved, replaced by
    a symlink) is dropped from then on: denied, never followed to its new target.
    """

    def __init__(self, dirs: Sequence[Path]) -> None:
        self.allowlist = Boundary(dirs) if dirs else None
        self._held: weakref.WeakKeyDictionary[RootSet, Boundary] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def allow(self) -> list[Path] | None:
        if self.allowlist is None:
            return None
        stale = self.allowlist.verify()
        return [root.path for root in self.allowlist if root not in stale]

    def for_roots(self, roots: RootSet) -> Boundary:
        with self._lock:
            boundary = self._held.get(roots)
            if boundary is None or boundary.closed:
                boundary = Boundary(roots, allow=self.allow())
                self._held[roots] = boundary
        stale = boundary.verify() + (self.allowlist.verify() if self.allowlist is not None else ())
        if stale:
            # Keep only what still names the object taken in; the rest is denied, not re-resolved.
            gone = {root.path for root in stale}
            keep = [root.path for root in boundary if not any(p == root.path or p in root.path.parents for p in gone)]
            return Boundary(keep, allow=self.allow())
        return boundary


def build_workspace_server(config: WorkspaceConfig) -> tuple[Server[Any], RootsService]:
    """The lowlevel server with the workspace tools and a :class:`RootsService` installed."""
    allow = list(config.dirs) or None
    held = HeldBoundaries(config.dirs)
    service = RootsService(
        fallback=allow,
        timeout=config.roots_timeout,
        state_security=RequestStateSecurity(keys=list(config.state_keys)) if config.state_keys else None,
    )
    tools = [
        types.Tool(name=spec.name, description=spec.description, input_schema=spec.input_schema)
        for spec in TOOLS
        if config.writable or not spec.writes
    ]
    names = {tool.name for tool in tools}

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in names:
            return _error("unknown tool")
        roots = await service.roots(ctx)
        source = "operator directories" if service.fallback is not None and roots is service.fallback else "client"
        arguments = dict(params.arguments or {})

        def work() -> str:
            boundary = held.for_roots(roots)
            fs = RootedFS(boundary, read_only=not config.writable, max_read=config.limits.max_read)
            return run_tool(params.name, fs, arguments, config.limits, {"source": source, "sandbox": config.sandbox})

        try:
            text = await anyio.to_thread.run_sync(work)
        except ToolError as error:
            return _error(str(error))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    server: Server[Any] = Server(
        config.name,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=lambda name: next((t.input_schema for t in tools if t.name == name), None),
    )
    service.install(server)
    return server, service


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
