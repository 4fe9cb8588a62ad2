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

import contextlib
import threading
import weakref
from collections.abc import Iterator, Sequence
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
from ..mrtr import era_of
from ..roots import RootSet
from .tools import TOOLS, Limits, ToolError, run_tool
from .write_tools import WRITE_TOOLS, call_write_tool

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
    name: str = "rootbound-workspace"


class HeldBoundaries:
    """Roots are taken in once per snapshot and held open, so re-pointing a root's path cannot move it.

    The operator's DIRs are taken in at start and held for the life of the process (:attr:`allowlist`); they are
    never resolved by name again: a client's roots are opened *beneath* their held fds, so the kernel keeps them
    inside the DIRs the operator gave even while a DIR's path is swapped for a symlink. A client's roots snapshot
    (the ``RootSet`` the service cached for a connection, or a modern request's own) gets one :class:`Boundary`,
    held as long as the snapshot lives. A root whose path stops naming the held directory (deleted, moved,
    replaced by a symlink) is dropped from then on: denied, never followed to its new target.
    """

    def __init__(self, dirs: Sequence[Path]) -> None:
        self.allowlist = Boundary(dirs) if dirs else None
        self._held: weakref.WeakKeyDictionary[RootSet, Boundary] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def for_roots(self, roots: RootSet) -> Iterator[Boundary]:
        """The boundary of a snapshot, kept open for the ``with`` block (a replacement elsewhere cannot close it
        under the caller). One ``lstat`` per effective root notices a root whose path moved; the DIRs are not
        looked at by name at all."""
        with self._lock:
            boundary = self._held.get(roots)
            if boundary is None or boundary.closed:
                boundary = Boundary(roots, allow=self.allowlist)
                self._held[roots] = boundary
            stale = boundary.verify()
            if stale:
                # Keep only what still names the object taken in (fds shared, nothing resolved again by name).
                replaced, boundary = boundary, boundary.without(stale)
                self._held[roots] = boundary
                replaced.close()  # deferred until operations still running on it finish
            use = boundary.use()
            use.__enter__()  # under the lock: no replacement can close it before it is in use
        try:
            yield boundary
        finally:
            use.__exit__(None, None, None)


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
    writing = {spec.name for spec in WRITE_TOOLS} if config.writable else set()
    tools += [spec.tool() for spec in WRITE_TOOLS if spec.name in writing]
    names = {tool.name for tool in tools}

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> dict[str, Any]:
        # The result goes out as its wire dict: the SDK validates and shapes it for the wire either way, so building
        # a CallToolResult first only to dump it again is a redundant round trip on every call.
        modern = era_of(ctx.protocol_version) == "2026-07-28"
        if params.name not in names:
            return _text("unknown tool", is_error=True, modern=modern)
        roots = await service.roots(ctx)
        source = "operator directories" if service.fallback is not None and roots is service.fallback else "client"
        arguments = dict(params.arguments or {})

        def work() -> tuple[str, dict[str, Any] | None]:
            with held.for_roots(roots) as boundary:
                fs = RootedFS(boundary, read_only=not config.writable, max_read=config.limits.max_read)
                if params.name in writing:
                    output = call_write_tool(params.name, fs, arguments, config.limits)
                    return output.text, output.structured
                return run_tool(params.name, fs, arguments, config.limits, {"source": source}), None

        try:
            text, structured = await anyio.to_thread.run_sync(work)
        except ToolError as error:
            return _text(str(error), is_error=True, modern=modern)
        result = _text(text, is_error=False, modern=modern)
        if structured is not None:
            result["structuredContent"] = structured
        return result

    server: Server[Any] = Server(
        config.name,
        version=__version__,
        instructions=INSTRUCTIONS,
        get_tool_input_schema=lambda name: next((t.input_schema for t in tools if t.name == name), None),
    )
    server.add_request_handler("tools/list", types.PaginatedRequestParams, list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)  # typed to take wire dicts
    service.install(server)
    return server, service


def _text(text: str, *, is_error: bool, modern: bool) -> dict[str, Any]:
    """A ``CallToolResult`` with one text block, in its wire form (2026-07-28 results carry a ``resultType``)."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if modern:
        result["resultType"] = "complete"
    return result
