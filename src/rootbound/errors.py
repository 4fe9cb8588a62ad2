"""One error hierarchy for rootbound; every error knows its JSON-RPC code.

Messages are fixed strings chosen by rootbound. Submitted data (URIs, paths, roots answers) never appears in
``str(error)`` or in :meth:`RootsError.to_error`, so an error can be sent to a peer or logged without echoing
attacker-controlled text. The ``reason`` attribute is a short machine-readable class name, also fixed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
METHOD_NOT_FOUND = -32601
INVALID_REQUEST = -32600
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "InvalidPath",
    "InvalidRootURI",
    "InvalidRootsAnswer",
    "InvalidRootsRequest",
    "MissingCapability",
    "OutsideRoots",
    "RootsError",
    "RootsUnavailable",
]


class RootsError(Exception):
    """Base of every rootbound error. ``code`` is the JSON-RPC error code to answer with."""

    code: ClassVar[int] = INTERNAL_ERROR
    default_message: ClassVar[str] = "roots error"

    def __init__(self, reason: str = "", *, message: str | None = None) -> None:
        self.reason = reason
        self.message = message or self.default_message
        super().__init__(f"{self.message} ({reason})" if reason else self.message)

    @property
    def data(self) -> dict[str, Any] | None:
        """The JSON-RPC ``error.data`` object, if this error carries one."""
        return {"reason": self.reason} if self.reason else None

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object (``code``, ``message``, optional ``data``)."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        data = self.data
        if data is not None:
            error["data"] = data
        return error


class InvalidRootURI(RootsError, ValueError):
    """A string is not an acceptable local ``file:`` URI (see ``rootbound.uri``)."""

    code = INVALID_PARAMS
    default_message = "invalid root URI"


class InvalidPath(RootsError, ValueError):
    """A path cannot be expressed as a ``file:`` URI (relative, NUL, dot segment, ...)."""

    code = INVALID_PARAMS
    default_message = "invalid path"


class InvalidRootsAnswer(RootsError, ValueError):
    """A roots answer (``ListRootsResult`` or an MRTR input response) is malformed or over a limit."""

    code = INVALID_PARAMS
    default_message = "invalid roots answer"


class InvalidRootsRequest(RootsError, ValueError):
    """A ``roots/list`` request (or MRTR input request) from a server is malformed."""

    code = INVALID_PARAMS
    default_message = "invalid roots/list request"


class RootsUnavailable(RootsError):
    """The client did not provide roots: error answer, timeout, no back-channel, closed connection."""

    code = INTERNAL_ERROR
    default_message = "roots are unavailable"


class OutsideRoots(RootsError, PermissionError):
    """A path is outside the effective roots, or could not be proven inside them (fail closed)."""

    code = INVALID_PARAMS
    default_message = "path is outside the allowed roots"


class MissingCapability(RootsError):
    """The request did not declare a client capability that processing needs (``-32021``)."""

    code = MISSING_REQUIRED_CLIENT_CAPABILITY
    default_message = "client did not declare a required capability"

    def __init__(self, required: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.required: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (required or {"roots": {}}).items()}
        names = ", ".join(sorted(self.required))
        super().__init__(message=f"Client did not declare the required capability: {names}")

    @property
    def data(self) -> dict[str, Any]:
        return {"requiredCapabilities": {k: dict(v) for k, v in self.required.items()}}
