"""The workspace tools behind ``rootbound serve``, built only on rootbound's public API.

The names below load on first use (:mod:`lazy_exports`): ``rootbound --version``, ``--help`` and a usage error
import this package for ``serve``'s flags, and need not pay for the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rootbound.core.lazy_exports import lazy_names

if TYPE_CHECKING:
    from rootbound.workspace.server import WorkspaceConfig, build_workspace_server
    from rootbound.workspace.tools import PROJECT_MARKERS, TOOLS, Limits, ToolError, run_tool

__all__ = ["PROJECT_MARKERS", "TOOLS", "Limits", "ToolError", "WorkspaceConfig", "build_workspace_server", "run_tool"]

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "WorkspaceConfig": "server",
        "build_workspace_server": "server",
        "PROJECT_MARKERS": "tools",
        "TOOLS": "tools",
        "Limits": "tools",
        "ToolError": "tools",
        "run_tool": "tools",
    },
)
