"""Adapters to the official ``mcp`` SDK: they drive the SDK-free protocol core (``rootbound.core.mrtr`` and the
cache and ``requestState`` state in ``roots_cache`` / ``request_state``) and only move bytes.

The core never imports the SDK; these adapters do, and so do the applications built on them (``rootbound serve``
in ``rootbound.workspace``, ``rootbound.cli`` and ``rootbound.demo``). Private SDK access is in one module per
side, ``_sdk_server`` and ``_sdk_client``.

* :class:`RootsService` (server): ``roots = await service.roots(ctx)`` in every protocol revision.
* :class:`RootsProvider` (client): era-correct roots for ``mcp.Client`` and ``ClientSession``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rootbound.core.lazy_exports import lazy_names
from rootbound.mcp.server import ChangeCallback, InputRequired, RootsService, mcp_error, tool_errors

if TYPE_CHECKING:
    from rootbound.mcp.client import ClientKwargs, RootsProvider

__all__ = [
    "ChangeCallback",
    "ClientKwargs",
    "InputRequired",
    "RootsProvider",
    "RootsService",
    "mcp_error",
    "tool_errors",
]

# The client side loads on first use: a server (``rootbound serve`` answering initialize) never needs it.
__getattr__, __dir__ = lazy_names(__name__, {"ClientKwargs": "client", "RootsProvider": "client"})
