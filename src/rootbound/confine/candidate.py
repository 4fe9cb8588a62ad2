"""Candidate-path rules: what a caller may name, parsed into components without touching the filesystem.

Why: every lexical shortcut (normpath, ``~`` expansion, percent-decoding a plain path, resolving against the CWD)
has been an escape somewhere. A candidate is a ``str`` path, a ``PurePosixPath`` or a ``file:`` URI (decoded
exactly once by :func:`~rootbound.uri_to_path`); it is split into components and nothing else. ``..`` stays a
component: only a resolver beneath a held root fd may give it meaning.
"""

from __future__ import annotations

import re
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import Final

from rootbound.core.errors import InvalidPath
from rootbound.core.uri import MAX_COMPONENT_BYTES, uri_to_path

__all__ = ["MAX_PATH_BYTES", "NOOP", "parse_candidate", "split_path"]

MAX_PATH_BYTES: Final = 4096
NOOP: Final = frozenset(("", "."))
_BAD_CHARS: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\\]")
_URI_LIKE: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")


def split_path(text: str) -> list[str]:
    """The components of a POSIX path, without empty and ``.`` components (``..`` is kept)."""
    parts = text.split("/")
    if parts[0] == "":
        del parts[0]
    if "" in parts or "." in parts:
        return [part for part in parts if part not in NOOP]
    return parts


def parse_candidate(candidate: object) -> tuple[bool, list[str]]:
    """``(absolute, components)`` of a candidate, or a denial. No decoding of plain paths, no ``~``, no normpath."""
    if isinstance(candidate, str):
        text = candidate
        first = text[:1]
        if (first == "f" or first == "F") and text[:5].lower() == "file:":
            path = uri_to_path(text)
            if not isinstance(path, PurePosixPath):
                raise InvalidPath("not a local path")
            return True, list(path.parts[1:])
    elif isinstance(candidate, PurePath):
        if isinstance(candidate, PureWindowsPath):
            raise InvalidPath("not a local path")
        text = str(candidate)
    else:
        raise InvalidPath("not a path")
    if not text:
        raise InvalidPath("empty path")
    size = len(text)
    if size > MAX_PATH_BYTES:
        raise InvalidPath("path too long")
    if text.isascii() and text.isprintable() and "\\" not in text:
        pass  # the common case: printable ASCII has no control characters and one byte per character
    elif _BAD_CHARS.search(text) is not None:
        raise InvalidPath("backslash" if "\\" in text else "control character")
    else:
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidPath("not valid UTF-8") from None
        if size > MAX_PATH_BYTES:
            raise InvalidPath("path too long")
    if "://" in text and _URI_LIKE.match(text) is not None:
        raise InvalidPath("not a file URI")
    parts = split_path(text)
    if size > MAX_COMPONENT_BYTES:
        for part in parts:
            if len(part) > MAX_COMPONENT_BYTES // 4 and len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
                raise InvalidPath("segment too long")
    return text[0] == "/", parts
