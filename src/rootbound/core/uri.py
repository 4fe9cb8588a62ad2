"""Strict ``file:`` URI <-> path conversion (RFC 8089), identical on every host OS.

Why strict: a roots guard is only as good as its parser. Every form that two parsers could read differently
(a host, a single slash, an encoded separator, a dot segment, a query) is rejected instead of normalised, and
percent-decoding happens exactly once, here. After :func:`uri_to_path` the path is data and is never decoded
again.

Decisions where RFC 8089 and the MCP spec leave room (also in ``docs/security.md``):

* scheme ``file`` in any case (RFC 3986 3.1); authority empty or ``localhost`` (any case), nothing else
  (no user info, no port, no remote host, no UNC ``file:////host/share``);
* ``file://`` is required: ``file:/x`` and ``file:x`` are refused (the MCP spec says roots "MUST start with
  ``file://``");
* a trailing ``/`` is accepted and dropped (``file:///srv/work/`` is ``/srv/work``); empty segments
  elsewhere (``a//b``) are refused;
* a first segment ``X:`` (a drive letter) makes the path a :class:`~pathlib.PureWindowsPath` on every host;
  ``file:///C:`` (drive-relative) and the legacy ``file:///c|/x`` form are refused. :func:`path_to_uri`
  encodes a POSIX first component that looks like a drive (``/C:/x``) as ``C%3A`` so the round trip holds;
* Windows paths refuse alternate data streams (``:`` after the drive), trailing dots and spaces, and reserved
  device names (``CON``, ``NUL``, ``COM1`` ...), which Win32 would silently reinterpret;
* raw characters outside RFC 3986 (space, ``\\``, ``"``, ``<``, ...) are refused; raw non-ASCII is accepted as
  an IRI character (RFC 3987) since several hosts send it unencoded;
* decoded segments may not contain NUL, C0 controls or DEL; ``%2F``, ``%5C`` and ``%00`` are refused before
  decoding; invalid UTF-8 is refused;
* a decoded component is at most 255 bytes and the whole URI at most ``max_length`` characters (8 KiB).
"""

from __future__ import annotations

import re
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import Final

from rootbound.core.errors import InvalidPath, InvalidRootURI

__all__ = [
    "DEFAULT_MAX_URI_LENGTH",
    "MAX_COMPONENT_BYTES",
    "canonical_uri",
    "child_uri",
    "path_to_uri",
    "uri_to_path",
]

DEFAULT_MAX_URI_LENGTH: Final = 8 * 1024
MAX_COMPONENT_BYTES: Final = 255

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_DRIVE = re.compile(r"[A-Za-z]:\Z")
_HEX = frozenset("0123456789abcdefABCDEF")
# RFC 3986 pchar minus pct-encoded: unreserved / sub-delims / ":" / "@".
_PCHAR_SAFE: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@")
_FORBIDDEN_ENCODED = ("%2f", "%5c", "%00")
_WINDOWS_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"COM{i}" for i in "123456789¹²³"]
    + [f"LPT{i}" for i in "123456789¹²³"]
)
_WINDOWS_FORBIDDEN_CHARS = frozenset('<>:"|?*')


# C0, DEL and C1: never part of a name we accept (NUL truncation, log injection).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _check_component(name: str, *, windows: bool, error: type[InvalidRootURI] | type[InvalidPath]) -> None:
    """Shared rules for one decoded path component, used in both directions so they agree."""
    if name in ("", ".", ".."):
        raise error("dot or empty segment")
    if _CONTROL.search(name):
        raise error("control character")
    if "/" in name or "\\" in name:
        raise error("separator inside a segment")
    if name.isascii():
        size = len(name)
    else:
        try:
            size = len(name.encode("utf-8"))
        except UnicodeEncodeError:
            raise error("not valid UTF-8") from None
    if size > MAX_COMPONENT_BYTES:
        raise error("segment too long")
    if windows:
        if any(ch in _WINDOWS_FORBIDDEN_CHARS for ch in name):
            raise error("character not allowed on Windows")
        if name[-1] in ". ":
            raise error("trailing dot or space")
        stem = name.split(".", 1)[0].rstrip(" ").upper()
        if stem in _WINDOWS_RESERVED:
            raise error("reserved Windows device name")


_PLAIN_SEGMENT = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@]+\Z")


def _decode_segment(raw: str) -> str:
    """Percent-decode one segment exactly once, strictly."""
    if _PLAIN_SEGMENT.match(raw):
        return raw  # the common case: nothing encoded, nothing outside pchar
    lowered = raw.lower()
    if any(bad in lowered for bad in _FORBIDDEN_ENCODED):
        raise InvalidRootURI("encoded separator or NUL")
    out = bytearray()
    i = 0
    n = len(raw)
    while i < n:
        ch = raw[i]
        if ch == "%":
            if i + 2 >= n:
                raise InvalidRootURI("bad percent-encoding")
            hi, lo = raw[i + 1], raw[i + 2]
            if hi not in _HEX or lo not in _HEX:
                raise InvalidRootURI("bad percent-encoding")
            out.append(int(hi + lo, 16))
            i += 3
            continue
        if ch in _PCHAR_SAFE or ord(ch) > 0x7F:  # raw non-ASCII: an IRI character, checked after decoding
            try:
                out += ch.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidRootURI("not valid UTF-8") from None
            i += 1
            continue
        raise InvalidRootURI("character not allowed in a URI")
    try:
        return out.decode("utf-8", "strict")
    except UnicodeDecodeError:
        raise InvalidRootURI("not valid UTF-8") from None


def uri_to_path(uri: str, *, max_length: int = DEFAULT_MAX_URI_LENGTH) -> PurePath:
    """Parse a local ``file:`` URI into a pure absolute path, or raise :class:`InvalidRootURI`."""
    if not isinstance(uri, str):
        raise InvalidRootURI("not a string")
    if len(uri) > max_length:
        raise InvalidRootURI("URI too long")
    scheme = _SCHEME.match(uri)
    if scheme is None:
        raise InvalidRootURI("no scheme")
    if scheme.group(0).lower() != "file:":
        raise InvalidRootURI("scheme is not file")
    rest = uri[scheme.end() :]
    if "?" in rest:
        raise InvalidRootURI("query not allowed")
    if "#" in rest:
        raise InvalidRootURI("fragment not allowed")
    if not rest.startswith("//"):
        raise InvalidRootURI("file URI without authority")
    rest = rest[2:]
    slash = rest.find("/")
    authority, path = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
    if authority and authority.lower() != "localhost":
        raise InvalidRootURI("non-local authority")
    if not path:
        raise InvalidRootURI("empty path")
    if path == "/":
        return PurePosixPath("/")
    segments = path[1:].split("/")
    if "|" in segments[0]:
        raise InvalidRootURI("legacy drive form")
    windows = _DRIVE.match(segments[0]) is not None
    if windows and len(segments) == 1:
        raise InvalidRootURI("drive-relative path")
    if len(segments) > 1 and segments[-1] == "":
        segments.pop()  # one trailing slash names the same directory
    parts: list[str] = []
    for index, raw in enumerate(segments):
        if windows and index == 0:
            parts.append(raw[0].upper() + ":\\")
            continue
        name = _decode_segment(raw)
        _check_component(name, windows=windows, error=InvalidRootURI)
        parts.append(name)
    if windows:
        return PureWindowsPath(*parts)
    return PurePosixPath("/", *parts)


def _quote(name: str) -> str:
    if _PLAIN_SEGMENT.match(name):
        return name
    return "".join(ch if ch in _PCHAR_SAFE else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in name)


def path_to_uri(path: PurePath | str) -> str:
    """Encode an absolute path as a canonical ``file:///`` URI, or raise :class:`InvalidPath`.

    A ``str`` is read as a path of the host OS. Everything outside RFC 3986 ``pchar`` is percent-encoded
    (upper-case hex), so the result is ASCII and :func:`uri_to_path` gives the same path back.
    """
    if isinstance(path, str):
        if "\x00" in path:
            raise InvalidPath("control character")
        path = PurePath(path)
    if not isinstance(path, PurePath):
        raise InvalidPath("not a path")
    if isinstance(path, PureWindowsPath):
        drive = path.drive
        if not _DRIVE.match(drive) or path.root != "\\":
            raise InvalidPath("not an absolute drive path")
        names = path.parts[1:]
        for name in names:
            _check_component(name, windows=True, error=InvalidPath)
        if not names:
            return f"file:///{drive[0].upper()}:/"  # the drive root; 'file:///C:' would be drive-relative
        return "file:///" + "/".join([drive[0].upper() + ":", *(_quote(n) for n in names)])
    text = str(path)
    if not path.is_absolute() or text.startswith("//"):
        raise InvalidPath("not an absolute path")
    names = path.parts[1:]
    encoded: list[str] = []
    for index, name in enumerate(names):
        _check_component(name, windows=False, error=InvalidPath)
        quoted = _quote(name)
        if index == 0 and _DRIVE.match(name):
            quoted = quoted[0] + "%3A"  # keep a POSIX '/C:' from reading back as a Windows drive
        encoded.append(quoted)
    return "file:///" + "/".join(encoded)


def child_uri(parent_uri: str, name: str) -> str:
    """``path_to_uri`` of the entry ``name`` in the POSIX directory whose URI :func:`path_to_uri` gave as
    ``parent_uri``, without parsing the parent again (a directory listing makes one per entry)."""
    _check_component(name, windows=False, error=InvalidPath)
    quoted = _quote(name)
    if parent_uri == "file:///":
        if _DRIVE.match(name):
            quoted = quoted[0] + "%3A"  # as path_to_uri: a POSIX '/C:' never reads back as a Windows drive
        return parent_uri + quoted
    return parent_uri + "/" + quoted


def canonical_uri(uri: str, *, max_length: int = DEFAULT_MAX_URI_LENGTH) -> str:
    """The one spelling of a valid ``file:`` URI (lower-case scheme, no host, upper-case hex, no trailing /)."""
    return path_to_uri(uri_to_path(uri, max_length=max_length))
