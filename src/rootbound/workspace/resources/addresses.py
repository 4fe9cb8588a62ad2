"""What a resource request names: its ``file:`` URI (and the read window in its query), its page cursor, and the
one error every unserved URI gets.

Why a module of its own: every resources method starts here, and the rule that an outside, missing or refused
URI answers the *same* error (SEP-2164's ``-32602`` "Resource not found") must be one function, so no method can
tell them apart by accident. The URI itself is never parsed here beyond splitting off the query: the part before
it goes to :meth:`Boundary.open`, the tools' one way in, which validates it exactly as it validates a tool's path.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Final, NoReturn

from mcp.shared.exceptions import MCPError

from rootbound.core.errors import INVALID_PARAMS

__all__ = [
    "EXTENSION",
    "MAX_URI",
    "TEMPLATE",
    "Window",
    "bad_request",
    "decode_cursor",
    "encode_cursor",
    "not_found",
    "split_uri",
]

EXTENSION: Final = "io.github.rootbound/resources"
"""Our extension id (SEP-2133 reverse-DNS), under which ``directoryRead`` and the content identity are declared."""
TEMPLATE: Final = "file:///{+path}"
MAX_URI: Final = 8192
"""Longest URI taken (the path validator has its own, smaller, per-path bound)."""
MAX_CURSOR: Final = 2048
NOT_FOUND: Final = "Resource not found"
_WINDOW_KEYS: Final = ("start_line", "end_line", "offset", "length")


def _plain(text: str) -> bool:
    return len(text) <= MAX_URI and text.isascii() and text.isprintable()


def not_found(uri: object) -> NoReturn:
    """SEP-2164's error for a URI this session is not served: outside the roots, missing, refused or unreadable
    all look the same. ``data.uri`` repeats the URI only when it is printable ASCII (what this server's own URIs
    are); anything else is left out rather than echoed."""
    data = {"uri": uri} if isinstance(uri, str) and _plain(uri) else None
    raise MCPError(INVALID_PARAMS, NOT_FOUND, data)


def bad_request(text: str) -> NoReturn:
    """A malformed request (a bad window or cursor): ``-32602`` with a fixed text saying how to fix the call."""
    raise MCPError(INVALID_PARAMS, text)


@dataclass(frozen=True)
class Window:
    """The part of a file a read asks for, from the URI's query: lines (1-based, inclusive) or bytes. The same
    names as ``read_file``'s arguments; nothing asked: the start of the file, up to the default read size."""

    start_line: int | None = None
    end_line: int | None = None
    offset: int | None = None
    length: int | None = None

    @property
    def bytes(self) -> bool:
        return self.offset is not None or self.length is not None

    @property
    def whole(self) -> bool:
        return self == Window()


_BAD_WINDOW: Final = (
    "bad read window in the resource URI's query: use ?start_line=N&end_line=M (lines, 1-based) or "
    "?offset=N&length=M (bytes), each a non-negative integer, one kind at a time"
)


def _window(query: str) -> Window:
    values: dict[str, int] = {}
    for part in query.split("&") if query else ():
        key, sep, value = part.partition("=")
        if not sep or key not in _WINDOW_KEYS or key in values or not value.isdigit() or len(value) > 18:
            bad_request(_BAD_WINDOW)
        values[key] = int(value)
    window = Window(**values)
    lines = window.start_line is not None or window.end_line is not None
    if (lines and window.bytes) or window.start_line == 0 or window.end_line == 0 or window.length == 0:
        bad_request(_BAD_WINDOW)
    if window.start_line is not None and window.end_line is not None and window.end_line < window.start_line:
        bad_request("bad read window: end_line must be >= start_line")
    return window


def split_uri(uri: object, *, windowed: bool = False) -> tuple[str, Window]:
    """``(the file: URI without its query, the read window)``. Anything but a ``file:`` URI is not found (this
    server serves no other scheme); a query is a read window only where ``windowed`` (``resources/read``)."""
    if not isinstance(uri, str) or len(uri) > MAX_URI or uri[:5].lower() != "file:":
        not_found(uri)
    base, sep, query = uri.partition("?")
    if not sep:
        return uri, Window()
    if not windowed:
        not_found(uri)
    return base, _window(query)


def encode_cursor(*parts: str) -> str:
    """An opaque cursor: the parts (a root index, the last name shown) joined and base64url-encoded."""
    raw = "\x00".join(parts).encode("utf-8", "surrogateescape")
    return base64.urlsafe_b64encode(raw).decode("ascii")


_BAD_CURSOR: Final = "bad cursor: pass back the nextCursor of the previous page unchanged, or no cursor to start"


def decode_cursor(cursor: object, parts: int) -> tuple[str, ...]:
    if not isinstance(cursor, str) or not cursor or len(cursor) > MAX_CURSOR:
        bad_request(_BAD_CURSOR)
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii"))
        found = tuple(raw.decode("utf-8", "surrogateescape").split("\x00"))
    except (ValueError, UnicodeError, binascii.Error):
        bad_request(_BAD_CURSOR)
    if len(found) != parts:
        bad_request(_BAD_CURSOR)
    return found
