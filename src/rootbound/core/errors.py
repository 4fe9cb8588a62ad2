"""One error hierarchy for rootbound; every error knows its JSON-RPC code.

Messages are fixed strings chosen by rootbound. Submitted data (URIs, paths, roots answers) never appears in
``str(error)`` or in :meth:`RootsError.to_error`, so an error can be sent to a peer or logged without echoing
attacker-controlled text. The ``reason`` attribute is a short machine-readable class name, also fixed.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from typing import Any, ClassVar, Final

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
    "AccessDenied",
    "CrossesMount",
    "DanglingSymlink",
    "FileOperationFailed",
    "HardLinked",
    "InvalidPath",
    "InvalidPattern",
    "InvalidRootURI",
    "InvalidRootsAnswer",
    "InvalidRootsRequest",
    "IsADirectory",
    "LimitExceeded",
    "MissingCapability",
    "MovedOutOfRoots",
    "NotADirectory",
    "NotAFile",
    "NotText",
    "OutsideRoots",
    "PathExists",
    "PathNotFound",
    "PatternTooSlow",
    "ReadOnly",
    "RootChanged",
    "RootsError",
    "RootsUnavailable",
    "ServerBusy",
    "SymlinkEscape",
    "SymlinkLoop",
    "TooLarge",
    "translate_error",
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
    """A string is not an acceptable local ``file:`` URI (see ``rootbound.core.uri``)."""

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


# --- Confinement and file-operation errors (boundary, rooted_fs) --------------------------------
#
# Each class has one fixed ``reason`` (its machine-readable name) and one fixed message. Escapes and anything
# that could not be proven inside a root are ``OutsideRoots`` subclasses, so ``except OutsideRoots`` catches every
# containment denial; ordinary outcomes inside a root (not found, not a directory, too large) are siblings that
# also subclass the matching builtin (``FileNotFoundError``...) for callers that already handle those.


class _FixedReason(RootsError):
    """An error whose ``reason`` defaults to the class's fixed ``default_reason``."""

    code = INVALID_PARAMS
    default_reason: ClassVar[str] = ""

    def __init__(self, reason: str = "", *, message: str | None = None) -> None:
        super().__init__(reason or self.default_reason, message=message)


class SymlinkEscape(_FixedReason, OutsideRoots):
    """A symlink on the path leads outside its root (or to a target that cannot be proven inside)."""

    default_message = "a symlink leads outside the allowed roots"
    default_reason = "symlink escapes root"


class SymlinkLoop(_FixedReason, OutsideRoots):
    """Symlink resolution looped or exceeded 40 hops (ELOOP): a denial, never a lexical fallback."""

    default_message = "too many levels of symbolic links"
    default_reason = "loop"


class DanglingSymlink(_FixedReason, OutsideRoots):
    """A write or create named a symlink whose target does not exist: where it would land is not provable."""

    default_message = "refusing to write through a dangling symlink"
    default_reason = "dangling symlink"


class CrossesMount(_FixedReason, OutsideRoots):
    """The path crosses into another mount (a bind mount inside a root can show anything)."""

    default_message = "path crosses a mount point"
    default_reason = "crosses a mount"


class HardLinked(_FixedReason, OutsideRoots):
    """A regular file with more than one hard link, refused by the hard-link policy (its other names are unknown)."""

    default_message = "refusing a file with several hard links"
    default_reason = "hard-linked file"


class RootChanged(_FixedReason, OutsideRoots):
    """The held root no longer matches its canonical path (deleted, replaced or moved since intake)."""

    default_message = "a root changed since it was opened"
    default_reason = "root changed"


class MovedOutOfRoots(_FixedReason, OutsideRoots):
    """The kernel refused a write because its directory was moved out of the roots while the write ran."""

    default_message = "the directory was moved out of the roots during the write"
    default_reason = "moved out of the roots"


class PathNotFound(_FixedReason, FileNotFoundError):
    """The path does not exist inside its root."""

    default_message = "no such file or directory"
    default_reason = "not found"


class NotADirectory(_FixedReason, NotADirectoryError):
    """A directory was required (listing, a path component) and something else was found."""

    default_message = "not a directory"
    default_reason = "not a directory"


class IsADirectory(_FixedReason, IsADirectoryError):
    """A file was required (read, write) and a directory was found."""

    default_message = "is a directory"
    default_reason = "is a directory"


class NotAFile(_FixedReason, OSError):
    """A regular file was required and a FIFO, socket or device was found (reading one could block or have effects)."""

    default_message = "not a regular file"
    default_reason = "not a regular file"


class PathExists(_FixedReason, FileExistsError):
    """An exclusive create or a mkdir found the name already taken."""

    default_message = "file exists"
    default_reason = "exists"


class AccessDenied(_FixedReason, PermissionError):
    """The operating system refused the operation (EACCES, EPERM, EROFS)."""

    default_message = "permission denied"
    default_reason = "access denied"


class ReadOnly(_FixedReason, PermissionError):
    """A write through a read-only ``RootedFS``, or to a root that is a single file."""

    default_message = "read-only"
    default_reason = "read-only"


class TooLarge(_FixedReason):
    """A file is larger than the operation's size limit."""

    default_message = "file too large"
    default_reason = "too large"


class LimitExceeded(_FixedReason):
    """A walk, glob or grep would exceed its entry or result limit."""

    default_message = "too many entries"
    default_reason = "too many"


class NotText(_FixedReason, ValueError):
    """A file's bytes are not valid text in the requested encoding (the content is never echoed)."""

    default_message = "file is not valid text"
    default_reason = "not text"


class InvalidPattern(_FixedReason, ValueError):
    """A glob or grep pattern is malformed or over its length limit."""

    default_message = "invalid pattern"
    default_reason = "invalid pattern"


class PatternTooSlow(InvalidPattern):
    """A line too long for the pattern's pace: searching it would take past the deadline, or longer than one
    search may run without a check (a second)."""

    default_message = "the pattern is too slow on this input (a line would take over a second): simplify it"
    default_reason = "too slow"


class FileOperationFailed(_FixedReason):
    """Any other operating-system failure (EIO, ENOSPC...): reported without the OS message or the path."""

    code = INTERNAL_ERROR
    default_message = "file operation failed"
    default_reason = "i/o error"


class ServerBusy(_FixedReason):
    """The server was short of a resource for a moment (threads, file descriptors, memory): nothing was done,
    and the same call may succeed when retried. Never a weaker way of doing it."""

    code = INTERNAL_ERROR
    default_message = "the server is short of resources for this call right now"
    default_reason = "busy"


# --- errno mapping: the one place an OS error becomes a denial -----------------------------------------------

_ERRNO_ERRORS: dict[int, type[RootsError]] = {
    errno.ENOENT: PathNotFound,
    errno.ENOTDIR: NotADirectory,
    errno.EISDIR: IsADirectory,
    errno.EEXIST: PathExists,
    errno.ENOTEMPTY: PathExists,
    errno.ELOOP: SymlinkLoop,
    errno.EMLINK: SymlinkLoop,
    errno.EACCES: AccessDenied,
    errno.EPERM: AccessDenied,
    errno.EROFS: AccessDenied,
    errno.EFBIG: TooLarge,
}
_ERRNO_BUSY: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM})  # the process, not the file: retry


def translate_error(exc: BaseException) -> RootsError:
    """The denial for an exception raised while resolving or operating: fixed reason, never the OS message."""
    if isinstance(exc, RootsError):
        return exc
    if isinstance(exc, OSError):
        if exc.errno == errno.EXDEV:
            return OutsideRoots("outside roots")
        if exc.errno == errno.ENAMETOOLONG:
            return InvalidPath("path too long")
        if exc.errno in _ERRNO_BUSY:
            return ServerBusy()
        kind = _ERRNO_ERRORS.get(exc.errno or 0, FileOperationFailed)
        return kind()
    if isinstance(exc, UnicodeError):
        return InvalidPath("not valid UTF-8")
    if isinstance(exc, ValueError):
        return InvalidPath("control character")
    return FileOperationFailed()
