"""Adapters to the official ``mcp`` SDK: the only part of rootbound that imports it."""

from __future__ import annotations

from .server import InputRequired, RootsService, mcp_error

__all__ = ["InputRequired", "RootsService", "mcp_error"]
