"""Glob compilation for :meth:`RootedFS.glob` / :meth:`RootedFS.search` / grep's ``include``: patterns to matchers.

Why its own module: a glob is pure string work with its own edge cases (``[!...]``, ``**``, escaping), and the
tree operations only need "does this name (or relative path) match" and "can anything below this level match".
Patterns are relative and never contain ``..``: a pattern names things below a directory, it does not navigate.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

from rootbound.core.errors import InvalidPattern
from rootbound.search.glob_nfa import LinearGlob, Token, component_tokens

__all__ = [
    "BACKWARDS_RANGE",
    "MAX_PATTERN_LENGTH",
    "UNCLOSED_SET",
    "Glob",
    "bracket_error",
    "compile_glob",
    "name_matcher",
]

MAX_PATTERN_LENGTH: Final = 1_024
_GLOB_MAGIC: Final = re.compile(r"[*?\[]")
_ANY: Final = re.compile(".*", re.DOTALL)


UNCLOSED_SET: Final = "a '[' in the glob has no closing ']': close the set, as in [abc], or match a '[' with [[]"
BACKWARDS_RANGE: Final = "a range in a glob's [...] set runs high to low: write it low to high, as in [a-z]"


def bracket_error(pattern: str, *, escapes: bool, unclosed: bool = True) -> str | None:
    """What is wrong with the ``[...]`` sets of a glob, in words that say how to fix it (never the glob itself):
    :data:`UNCLOSED_SET` (only if ``unclosed``: a ``[`` that no ``]`` closes), :data:`BACKWARDS_RANGE` (``[z-a]``,
    which the regex engines behind both glob dialects refuse); ``None`` if nothing. ``escapes``: a backslash takes
    the next character literally (gitignore syntax). Sets are read as both dialects read them: an optional ``!`` or
    ``^``, then a ``]`` right after the opening is a member."""
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        i += 1
        if escapes and ch == "\\":
            i += 1
            continue
        if ch != "[":
            continue
        j = i + 1 if i < n and pattern[i] in "!^" else i
        members: list[str] = []
        while j < n and (not members or pattern[j] != "]"):
            if escapes and pattern[j] == "\\" and j + 1 < n:
                j += 1
            members.append(pattern[j])
            j += 1
        if j >= n:
            if unclosed:
                return UNCLOSED_SET
            continue  # read as a literal '[' (this module's dialect): the rest is searched for sets
        k = 0
        while k + 2 < len(members):
            if members[k + 1] == "-":
                if members[k] > members[k + 2]:
                    return BACKWARDS_RANGE
                k += 3
            else:
                k += 1
        i = j + 1
    return None


def _check_pattern(pattern: object, *, component: bool) -> str:
    if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidPattern()
    if (component and "/" in pattern) or any(ch < " " or ch == "\x7f" for ch in pattern):
        raise InvalidPattern()
    problem = bracket_error(pattern, escapes=False, unclosed=False)
    if problem is not None:
        raise InvalidPattern(message=problem)
    return pattern


def _translate_component(component: str) -> str:
    """One glob component to a regex that never matches ``/``: ``*``, ``?``, ``[...]`` / ``[!...]``.

    Built from the linear matcher's own tokens, so both engines read a pattern the same way."""
    return "".join(_token_regex(token) for token in component_tokens(component))


def _token_regex(token: Token) -> str:
    if token.kind == "star":
        return "[^/]*"
    if token.kind == "one":
        return "[^/]"
    if token.kind == "lit":
        return re.escape(token.char)
    members = "".join(map(re.escape, sorted(token.chars)))
    members += "".join(f"{re.escape(low)}-{re.escape(high)}" for low, high in token.ranges)
    return f"[^/{members}]" if token.negate else f"[{members}]"


class Matcher(Protocol):
    def fullmatch(self, string: str, /) -> object: ...


def _stars(component: str) -> int:
    return sum(1 for token in component_tokens(component) if token.kind == "star")


def _component_matcher(component: str) -> Matcher:
    """``re`` while it runs in linear time (at most one ``*``), else the NFA (issue 16 #1: ``*?*?*?…Z``)."""
    compiled = re.compile(_translate_component(component), re.DOTALL)  # also validates: a bad range raises
    return LinearGlob(component_tokens(component)) if _stars(component) > 1 else compiled


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
        return _component_matcher(pattern).fullmatch
    except re.error:
        raise InvalidPattern() from None


@dataclass(frozen=True)
class Glob:
    """A compiled relative glob: a literal ``prefix`` to open directly, then a regex over the rest."""

    prefix: tuple[str, ...]
    regex: Matcher
    levels: tuple[Matcher | None, ...]  # per-level name patterns before the first "**" (for pruning)
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
    # "**/**" matches what "**" does; collapsed, "**/" x17 is one piece, not 17 ambiguous ones (issue 16 #1).
    rest = [part for i, part in enumerate(rest) if not (part == "**" and i and rest[i - 1] == "**")]
    linear = sum(1 for part in rest if part == "**") > 2 or any(_stars(p) > 1 for p in rest if p != "**")
    pieces: list[str] = []
    tokens: list[Token] = []
    levels: list[Matcher | None] = []
    recursive = False
    for index, part in enumerate(rest):
        last = index == len(rest) - 1
        if part == "**":
            recursive = True
            pieces.append(".*" if last else "(?:[^/]+/)*")
            tokens.append(Token("all" if last else "segs"))
            continue
        regex = _translate_component(part)
        if not recursive:
            try:
                levels.append(_component_matcher(part))
            except re.error:
                raise InvalidPattern() from None
        pieces.append(regex if last else regex + "/")
        tokens.extend(component_tokens(part) + ([] if last else [Token("lit", "/")]))
    try:
        compiled: Matcher = re.compile("".join(pieces), re.DOTALL)  # compiling never backtracks; validates
        if linear:
            compiled = LinearGlob(tokens)
    except re.error:
        raise InvalidPattern() from None
    return Glob(prefix, compiled, tuple(levels), None if recursive else len(rest))
