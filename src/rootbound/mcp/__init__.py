"""Adapters to the official ``mcp`` SDK: the only part of rootbound that imports it.

* :class:`RootsService` (server): ``roots = await service.roots(ctx)`` in every protocol revision.
* :class:`RootsProvider` (client): era-correct roots for ``mcp.Client`` and ``ClientSession``.
"""

from __future__ import annotations

from .client import ClientKwargs, RootsProvider
from .server import InputRequired, RootsService, mcp_error, tool_errors

__all__ = ["ClientKwargs", "InputRequired", "RootsProvider", "RootsService", "mcp_error", "tool_errors"]
