"""Whole-line matching in tiers: a block of lines found in a text once trailing whitespace, line endings or a
consistent indentation shift are set aside, with the tolerances each match used.

Why its own module: ``edit_file`` (:mod:`rootbound.text.edit`) and ``apply_patch``
(:mod:`rootbound.text.patch_apply`) locate quoted lines the same way and report what they tolerated in the same
words, so the tiers live once, here. Pure: no I/O.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from rootbound.core.call_budget import checkpoint
from rootbound.core.errors import INVALID_PARAMS, RootsError

__all__ = [
    "MAX_LISTED_LINES",
    "TOLERANCE_ORDER",
    "Block",
    "Lines",
    "Tolerance",
    "TooLargeToMatch",
    "Window",
    "common_prefix",
    "indent_of",
    "newline_style",
    "reindent",
]

Tolerance: TypeAlias = Literal["line-endings", "trailing-whitespace", "indentation"]
TOLERANCE_ORDER: Final[tuple[Tolerance, ...]] = ("line-endings", "trailing-whitespace", "indentation")
MAX_LISTED_LINES: Final = 10  # line numbers shown in an error or a result
_INDENT: Final = " \t"
MATCH_WORK: Final = 8_000_000
"""Characters a tier may compare across its candidate windows (each costs the old text's length) before the
match is refused as too large: overlapping occurrences of a long, repetitive old text would otherwise cost the
file's lines times the old text's length (issue 48 #5)."""
_CHECK_EVERY: Final = 1 << 14  # lines between two budget checks


class TooLargeToMatch(RootsError, ValueError):
    """Matching the old text (or a hunk) against this file would cost more than :data:`MATCH_WORK`."""

    code = INVALID_PARAMS
    default_message = (
        "the old text is too large to match against this file: narrow the old text (quote fewer lines, "
        "including one that occurs once)"
    )

    def __init__(self) -> None:
        super().__init__("too large to match")


def newline_style(text: str) -> str | None:
    """``"\\r\\n"`` or ``"\\n"`` if every line ending in ``text`` is that one; ``None`` if mixed or none."""
    lf = text.count("\n")
    if not lf:
        return None
    crlf = text.count("\r\n")
    if crlf == lf:
        return "\r\n"
    return "\n" if crlf == 0 else None


class Block:
    """The old (or new) text as lines: bodies without ``\\r``, each line's ending, and whether it ends in one."""

    __slots__ = ("blank", "bodies", "ends", "final_newline", "indents")

    def __init__(self, text: str) -> None:
        pieces = text.split("\n")
        self.final_newline = len(pieces) > 1 and pieces[-1] == ""
        if self.final_newline:
            pieces.pop()
        self.ends = ["\r\n" if p.endswith("\r") else "\n" for p in pieces]
        if not self.final_newline:
            self.ends[-1] = ""
        self.bodies = [p[:-1] if p.endswith("\r") else p for p in pieces]
        self.indents = [indent_of(b) for b in self.bodies]
        self.blank = not any(b.strip() for b in self.bodies)


def common_prefix(texts: list[str]) -> str:
    """The longest common leading substring (character-wise: indentation, not path components)."""
    if not texts:
        return ""
    low, high = min(texts), max(texts)
    size = 0
    while size < len(low) and low[size] == high[size]:
        size += 1
    return low[:size]


def indent_of(body: str) -> str:
    return body[: len(body) - len(body.lstrip(_INDENT))]


@dataclass(frozen=True)
class Window:
    start: int  # 0-based first line
    file_indent: str  # X: the common indentation of the window's non-blank lines
    old_indent: str  # Y: the same for the old text
    tolerances: frozenset[Tolerance]


class Lines:
    """A text split into lines (``\\n`` only: no other character ends a line here), for whole-line matching."""

    def __init__(self, text: str) -> None:
        self.text = text
        pieces = text.split("\n")
        tail = pieces.pop()  # after the last "\n": a last line without an ending, or ""
        self.ends = ["\r\n" if p.endswith("\r") else "\n" for p in pieces]
        if tail:
            pieces.append(tail)
            self.ends.append("")
        self.raw = pieces
        self.starts = [0, *itertools.accumulate(len(p) + 1 for p in pieces)]  # offsets in text
        self._keys: dict[bool, tuple[list[int], dict[str, int]]] = {}

    def _ids(self, shifted: bool) -> tuple[list[int], dict[str, int]]:
        """Each line's key in this tier as a small integer, and the table from key to integer (built once per
        tier): equal keys, equal integers, so whole-line matching compares integers."""
        cached = self._keys.get(shifted)
        if cached is None:
            table: dict[str, int] = {}
            ids: list[int] = []
            raw = self.raw
            for first in range(0, len(raw), _CHECK_EVERY):
                checkpoint(_CHECK_EVERY)
                part = raw[first : first + _CHECK_EVERY]
                keys = [p.rstrip().lstrip(_INDENT) for p in part] if shifted else [p.rstrip() for p in part]
                ids.extend([table.setdefault(key, len(table)) for key in keys])
            cached = self._keys[shifted] = (ids, table)
        return cached

    def find(self, block: Block, shifted: bool, limit: int, start: int = 0) -> list[Window]:
        """Windows of whole lines equal to ``block`` in this tier (overlapping ones included), up to ``limit``,
        beginning at line ``start`` (0-based) or later.

        Linear in the file: only line starts are candidates (the lines as integers, searched with Knuth-Morris-
        Pratt), and the candidates' own checks are bounded by :data:`MATCH_WORK` (:class:`TooLargeToMatch`)."""
        windows: list[Window] = []
        if start > len(self.raw):
            return windows
        ids, table = self._ids(shifted)
        keys = [b.rstrip().lstrip(_INDENT) if shifted else b.rstrip() for b in block.bodies]
        needle = [table.get(key, -1) for key in keys]
        if -1 in needle:
            return windows  # a line the file does not have in this tier: no window anywhere
        cost = sum(map(len, block.bodies)) + 16 * len(block.bodies)
        spent = 0
        for line in _occurrences(ids, needle, start):
            if len(windows) >= limit:
                break
            spent += cost
            if spent > MATCH_WORK:
                raise TooLargeToMatch()
            checkpoint(len(block.bodies))
            window = self._window(line, block, shifted)
            if window is not None:
                windows.append(window)
        return windows

    def _window(self, start: int, block: Block, shifted: bool) -> Window | None:
        stop = start + len(block.bodies)
        ends = self.ends[start:stop]
        bodies = [p[:-1] if e == "\r\n" else p for p, e in zip(self.raw[start:stop], ends, strict=True)]
        used: set[Tolerance] = set()
        x = y = ""
        strip_x = strip_y = 0
        if shifted:
            pairs = [
                (indent_of(f), o) for f, o, b in zip(bodies, block.indents, block.bodies, strict=True) if b.strip()
            ]
            x = common_prefix([f for f, _ in pairs])
            y = common_prefix([o for _, o in pairs])
            if x == y or any(f[len(x) :] != o[len(y) :] for f, o in pairs):
                return None  # not one consistent shift (x == y was tier 3's to find)
            used.add("indentation")
            strip_x, strip_y = len(x), len(y)
        for body, old, old_end, end in zip(bodies, block.bodies, block.ends, ends, strict=True):
            if shifted and old.strip():
                body, old = body[strip_x:], old[strip_y:]
            if body != old:
                used.add("trailing-whitespace")
            if old_end and end and old_end != end:
                used.add("line-endings")
        if block.final_newline and not ends[-1]:
            used.add("line-endings")  # the old text ends a line where the file ends without one
        return Window(start, x, y, frozenset(used))

    def replace(
        self, windows: list[Window], block: Block, new: str, style: str | None
    ) -> tuple[str, tuple[int, ...], tuple[Tolerance, ...]]:
        """Replace non-overlapping windows (left to right) by ``new``, re-indented and with the file's endings."""
        out: list[str] = []
        done = 0
        lines: list[int] = []
        used: set[Tolerance] = set()
        span = len(block.bodies)
        text = self.text
        for window in windows:
            if window.start < done:
                continue  # overlaps the previous replacement
            last = window.start + span - 1
            out.append(text[self.starts[done] : self.starts[window.start]])
            out.append(self._block(window, block, new, style, self.ends[last]))
            done = last + 1
            lines.append(window.start + 1)
            used |= window.tolerances
        out.append(text[self.starts[done] :])
        return "".join(out), tuple(lines), tuple(t for t in TOLERANCE_ORDER if t in used)

    def _block(self, window: Window, block: Block, new: str, style: str | None, last_end: str) -> str:
        ending = self.ends[window.start] or style or "\n"
        replacement = Block(new) if new else None
        if replacement is None:
            bodies: list[str] = []
            final_newline = False
        else:
            bodies = replacement.bodies
            final_newline = replacement.final_newline
            if window.file_indent != window.old_indent:
                bodies = [reindent(b, window.file_indent, window.old_indent) for b in bodies]
        result = ending.join(bodies)
        if final_newline and (last_end or not block.final_newline):
            result += ending  # but keep "no newline at end of file" when the old text claimed a newline there
        if not block.final_newline:
            result += last_end  # the old text stopped before its last line's ending, as an exact match would
        return result

    def lookalikes(self, block: Block) -> list[int]:
        """Lines (1-based) equal to the old text's first non-blank line once stripped, else containing it."""
        first = next(b.strip() for b in block.bodies if b.strip())
        stripped = [p.strip() for p in self.raw]
        found = [n + 1 for n, s in enumerate(stripped) if s == first]
        if not found:
            found = [n + 1 for n, s in enumerate(stripped) if first in s]
        return found[: MAX_LISTED_LINES + 1]


def _occurrences(haystack: list[int], needle: list[int], start: int) -> Iterator[int]:
    """Every index at or after ``start`` where ``needle`` occurs in ``haystack`` (overlapping ones included):
    Knuth-Morris-Pratt, O(len(haystack) + len(needle)), checking the call's budget as it goes."""
    size = len(needle)
    fail = [0] * size
    k = 0
    for i in range(1, size):
        while k and needle[i] != needle[k]:
            k = fail[k - 1]
        if needle[i] == needle[k]:
            k += 1
        fail[i] = k
    k = 0
    for i in range(start, len(haystack)):
        if not i % _CHECK_EVERY:
            checkpoint(_CHECK_EVERY)
        item = haystack[i]
        while k and item != needle[k]:
            k = fail[k - 1]
        if item == needle[k]:
            k += 1
        if k == size:
            yield i - size + 1
            k = fail[k - 1]


def reindent(body: str, file_indent: str, old_indent: str) -> str:
    """Shift one new line as the old text was shifted: ``old_indent`` becomes ``file_indent``."""
    if not body.strip():
        return ""
    if body.startswith(old_indent):
        return file_indent + body[len(old_indent) :]
    if old_indent.startswith(file_indent):  # less indented than the block, and the file is shifted left
        cut = min(len(indent_of(body)), len(old_indent) - len(file_indent))
        return body[cut:]
    if file_indent.startswith(old_indent):
        return file_indent[len(old_indent) :] + body
    return file_indent + body.lstrip(_INDENT)
