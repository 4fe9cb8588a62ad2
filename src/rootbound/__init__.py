"""rootbound: MCP Roots done right, on both sides, in every protocol revision.

The core (this package minus ``rootbound.mcp``) is sans-I/O with respect to MCP: it never imports the SDK.
"""

from __future__ import annotations

from .errors import (
    InvalidPath,
    InvalidRootsAnswer,
    InvalidRootsRequest,
    InvalidRootURI,
    MissingCapability,
    OutsideRoots,
    RootsError,
    RootsUnavailable,
)
from .mrtr import MISSING, ROOTS_KEY
from .roots import Root, RootLimits, RootSet
from .uri import canonical_uri, path_to_uri, uri_to_path

__version__ = "0.1.0"

__all__ = [
    "MISSING",
    "ROOTS_KEY",
    "InvalidPath",
    "InvalidRootURI",
    "InvalidRootsAnswer",
    "InvalidRootsRequest",
    "MissingCapability",
    "OutsideRoots",
    "Root",
    "RootLimits",
    "RootSet",
    "RootsError",
    "RootsUnavailable",
    "__version__",
    "canonical_uri",
    "path_to_uri",
    "uri_to_path",
]
