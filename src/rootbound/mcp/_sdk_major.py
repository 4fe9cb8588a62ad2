"""Which major of the ``mcp`` SDK is installed, read from its distribution metadata (no SDK import).

The adapters support both majors: the library (``RootsService``, ``RootsProvider``, ``tool_errors``) on ``mcp``
1.x in the handshake era (2024-11-05 … 2025-11-25) and on 2.x in every era; ``rootbound serve``, ``rootbound
audit`` and the demo need 2.x. Modules that differ by major branch on :data:`MCP_V2` (``if MCP_V2: ... else:``),
which mypy treats as always true in the main run and always false in the 1.x run (``make typecheck``).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Final

__all__ = ["MCP_MAJOR", "MCP_V2", "MCP_VERSION", "NEEDS_MCP_2", "needs_mcp_2"]

NEEDS_MCP_2: Final = "mcp>=2.3,<3"
"""The requirement of the parts built on the 2.x SDK only (serve, audit, the demo, the 2026-07-28 era)."""


def _installed() -> str:
    try:
        return version("mcp")
    except PackageNotFoundError:  # pragma: no cover - mcp is a dependency; a broken environment
        return "0"


def _major(text: str) -> int:
    head = text.split(".", 1)[0]
    return int(head) if head.isdigit() else 0


MCP_VERSION: Final[str] = _installed()
MCP_MAJOR: Final[int] = _major(MCP_VERSION)
MCP_V2: Final[bool] = MCP_MAJOR >= 2


def needs_mcp_2(what: str) -> str | None:
    """``None`` on mcp 2.x; else the one line to print before exiting 64 (``what``: e.g. ``"rootbound serve"``)."""
    if MCP_V2:
        return None
    return (
        f"{what} needs the mcp SDK 2.3 or later; this environment has mcp {MCP_VERSION}. "
        f"Install it in its own environment: pipx install rootbound (or pip install '{NEEDS_MCP_2}'). "
        "The library (RootsService, RootsProvider, Boundary, RootedFS) works on mcp 1.x as it is."
    )
