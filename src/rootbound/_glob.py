"""Glob compilation for :meth:`RootedFS.glob` / :meth:`RootedFS.search` / grep's ``include``: patterns to matchers.

Why its own module: a glob is pure string work with its own edge cases (``[!...]``, ``**``, escaping), and the
tree operations only need "does this name (or relative path) match" and "can anything below this level match".
Patterns are relative and never contain ``..``: a pattern names things below a directory, it does not navigate.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from .errors import InvalidPattern

__all__ = ["MAX_PATTERN_LENGTH", "Glob", "compile_glob", "name_matcher"]

MAX_PATTERN_LENGTH: Final = 1_024
_GLOB_MAGIC: Final = re.compile(r"[*?\[]")
_ANY: Final = re.compile(".*", re.DOTALL)


def _check_pattern(pattern: object, *, component: bool) -> str:
    if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidPattern()
    if (component and "/" in pattern) or any(ch < " " or ch == "\x7f" for ch in pattern):
        raise InvalidPattern()
    return pattern


def _translate_component(component: str) -> str:
    """One glob component to a regex that never matches ``/``: ``*``, ``?``, ``[...]`` / ``[!...]``."""
    out: list[str] = []
    i, n = 0, len(component)
    while i < n:
        ch = component[i]
        i += 1
        if ch == "*":
            if not out or out[-1] != "[^/]*":
                out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            j = i
            if j < n and component[j] in "!^":
                j += 1
            if j < n and component[j] == "]":
                j += 1
            while j < n and component[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(ch))
                continue
            body = component[i:j]
            i = j + 1
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            escaped = "".join(c if c == "-" else re.escape(c) for c in body if c != "/")
            out.append(f"[^/{escaped}]" if negate else f"[{escaped}]")
        else:
            out.append(re.escape(ch))
    return "".join(out)


def name_matcher(pattern: object) -> Callable[[str], object]:
    """A predicate for a one-component glob; ``*.ext``, ``prefix*`` and literals skip the regex engine."""
    pattern = _check_pattern(pattern, component=True)
    body = pattern[1:] if pattern.startswith("*") else pattern[:-1] if pattern.endswith("*") else pattern
    if not _GLOB_MAGIC.search(body):
        if pattern == "*":
            return lambda name: True
        if pattern.startswith("*"):
            return lambda name: name.endswith(body)
        if pattern.endswith("*"):
            return lambda name: name.startswith(body)
        return lambda name: name == body
    try:
        return re.compile(_translate_component(pattern), re.DOTALL).fullmatch
    except re.error:
        raise InvalidPattern() from None


@dataclass(frozen=True)
class Glob:
    """A compiled relative glob: a literal ``prefix`` to open directly, then a regex over the rest."""

    prefix: tuple[str, ...]
    regex: re.Pattern[str]
    levels: tuple[re.Pattern[str] | None, ...]  # per-level name patterns before the first "**" (for pruning)
    depth: int | None  # deepest level that can match, None with "**"

    def descend(self, level: int, name: str) -> bool:
        """Whether anything below directory ``name`` at ``level`` (1-based) can still match."""
        levels = self.levels
        return level > len(levels) or (levels[level - 1] or _ANY).fullmatch(name) is not None


def compile_glob(pattern: object) -> Glob:
    pattern = _check_pattern(pattern, component=False)
    if pattern[0] == "/":
        raise InvalidPattern()
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise InvalidPattern()
    literal = 0
    while literal < len(parts) - 1 and parts[literal] != "**" and not _GLOB_MAGIC.search(parts[literal]):
        literal += 1
    prefix, rest = tuple(parts[:literal]), parts[literal:]
    pieces: list[str] = []
    levels: list[re.Pattern[str] | None] = []
    recursive = False
    for index, part in enumerate(rest):
        last = index == len(rest) - 1
        if part == "**":
            recursive = True
            pieces.append(".*" if last else "(?:[^/]+/)*")
            continue
        regex = _translate_component(part)
        if not recursive:
            levels.append(re.compile(regex))
        pieces.append(regex if last else regex + "/")
    try:
        compiled = re.compile("".join(pieces), re.DOTALL)
    except re.error:
        raise InvalidPattern() from None
    return Glob(prefix, compiled, tuple(levels), None if recursive else len(rest))
