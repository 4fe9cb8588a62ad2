"""rootbound: MCP Roots done right, on both sides, in every protocol revision.

The core (this package minus ``rootbound.mcp``, ``rootbound.workspace``, ``cli`` and ``demo``) never imports the
SDK: the protocol rules and state (``mrtr``, ``roots``, ``uri``) are pure code that the ``rootbound.mcp``
adapters drive, and the confinement layer (``Boundary``, ``RootedFS``) does only file-system I/O.
"""

from __future__ import annotations

from rootbound.confine.boundary import Boundary, Dropped, EffectiveRoot
from rootbound.confine.write_ops import EditOutcome
from rootbound.core.errors import (
    AccessDenied,
    CrossesMount,
    DanglingSymlink,
    FileOperationFailed,
    HardLinked,
    InvalidPath,
    InvalidPattern,
    InvalidRootsAnswer,
    InvalidRootsRequest,
    InvalidRootURI,
    IsADirectory,
    LimitExceeded,
    MissingCapability,
    NotADirectory,
    NotAFile,
    NotText,
    OutsideRoots,
    PathExists,
    PathNotFound,
    PatternTooSlow,
    ReadOnly,
    RootChanged,
    RootsError,
    RootsUnavailable,
    SymlinkEscape,
    SymlinkLoop,
    TooLarge,
)
from rootbound.core.mrtr import MISSING, ROOTS_KEY
from rootbound.core.roots import Era, Root, RootLike, RootLimits, RootsChange, RootSet
from rootbound.core.uri import canonical_uri, path_to_uri, uri_to_path
from rootbound.search.rooted_fs import Entry, GrepMatch, GrepResult, RootedFS, SearchResult
from rootbound.text.edit import Edit, EditAmbiguous, EditError, EditNotFound, FileChanged, InvalidEdit

# The one place the version is written: pyproject.toml reads it (dynamic), `rootbound --version`, serverInfo and the
# audit report show it; CHANGELOG.md says what each version added and the versioning policy.
__version__ = "0.1.0"

__all__ = [
    "MISSING",
    "ROOTS_KEY",
    "AccessDenied",
    "Boundary",
    "CrossesMount",
    "DanglingSymlink",
    "Dropped",
    "Edit",
    "EditAmbiguous",
    "EditError",
    "EditNotFound",
    "EditOutcome",
    "EffectiveRoot",
    "Entry",
    "Era",
    "FileChanged",
    "FileOperationFailed",
    "GrepMatch",
    "GrepResult",
    "HardLinked",
    "InvalidEdit",
    "InvalidPath",
    "InvalidPattern",
    "InvalidRootURI",
    "InvalidRootsAnswer",
    "InvalidRootsRequest",
    "IsADirectory",
    "LimitExceeded",
    "MissingCapability",
    "NotADirectory",
    "NotAFile",
    "NotText",
    "OutsideRoots",
    "PathExists",
    "PathNotFound",
    "PatternTooSlow",
    "ReadOnly",
    "Root",
    "RootChanged",
    "RootLike",
    "RootLimits",
    "RootSet",
    "RootedFS",
    "RootsChange",
    "RootsError",
    "RootsUnavailable",
    "SearchResult",
    "SymlinkEscape",
    "SymlinkLoop",
    "TooLarge",
    "__version__",
    "canonical_uri",
    "path_to_uri",
    "uri_to_path",
]
