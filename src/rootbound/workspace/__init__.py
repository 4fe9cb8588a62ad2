"""The workspace tools behind ``rootbound serve``, built only on rootbound's public API."""

from __future__ import annotations

from .server import WorkspaceConfig, build_workspace_server
from .tools import PROJECT_MARKERS, TOOLS, Limits, ToolError, run_tool

__all__ = ["PROJECT_MARKERS", "TOOLS", "Limits", "ToolError", "WorkspaceConfig", "build_workspace_server", "run_tool"]
