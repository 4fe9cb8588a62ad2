"""Adapters to the official ``mcp`` SDK: they drive the SDK-free protocol core (``rootbound.core.mrtr`` and the
cache and ``requestState`` state in ``roots_cache`` / ``request_state``) and only move bytes.

The core never imports the SDK; these adapters do, and so do the applications built on them (``rootbound serve``
in ``rootbound.workspace``, ``rootbound.cli`` and ``rootbound.demo``). Private SDK access is in one module per
side per SDK major: ``_sdk_server`` and ``_sdk_client`` (mcp 2.x), ``_sdk1_server`` and ``_sdk1_client`` (mcp 1.x,
the handshake era only); ``_sdk_major`` says which is installed.

* :class:`RootsService` (server): ``roots = await service.roots(ctx)`` in every protocol revision.
* :class:`RootsProvider` (client): era-correct roots for ``mcp.Client`` and ``ClientSession``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rootbound.core.lazy_exports import lazy_names

if TYPE_CHECKING:
    from rootbound.mcp._bridges import RequiresMcp2
    from rootbound.mcp.client import ClientKwargs, RootsProvider
    from rootbound.mcp.server import ChangeCallback, InputRequired, RootsService, mcp_error, tool_errors

__all__ = [
    "ChangeCallback",
    "ClientKwargs",
    "InputRequired",
    "RequiresMcp2",
    "RootsProvider",
    "RootsService",
    "mcp_error",
    "tool_errors",
]

# Each side loads on first use: a server (``rootbound serve`` answering initialize) never needs the client, and
# ``rootbound.mcp._sdk_major`` (which SDK major is installed) is readable before any SDK import.
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "ClientKwargs": "client",
        "RootsProvider": "client",
        "RequiresMcp2": "_bridges",  # what the 2026-07-28-only API raises on mcp 1.x
        **dict.fromkeys(("ChangeCallback", "InputRequired", "RootsService", "mcp_error", "tool_errors"), "server"),
    },
)
