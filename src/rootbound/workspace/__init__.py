"""The workspace tools behind ``rootbound serve``, built only on rootbound's public API.

The names below load on first use (PEP 562), so ``rootbound --version``, ``--help`` and a usage error, which
import this package for ``serve``'s flags, do not pay for the SDK (~0.9 s of imports).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import WorkspaceConfig, build_workspace_server
    from .tools import PROJECT_MARKERS, TOOLS, Limits, ToolError, run_tool

__all__ = ["PROJECT_MARKERS", "TOOLS", "Limits", "ToolError", "WorkspaceConfig", "build_workspace_server", "run_tool"]

_HOME = {
    "WorkspaceConfig": "server",
    "build_workspace_server": "server",
    "PROJECT_MARKERS": "tools",
    "TOOLS": "tools",
    "Limits": "tools",
    "ToolError": "tools",
    "run_tool": "tools",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
