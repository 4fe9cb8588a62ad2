"""The byte strings every match of a grep pattern contains: what the index narrows by (it never decides).

Why a reader of our own: RE2's parse tree is not exposed to Python, and Python's ``re`` parser reads some RE2
syntax differently (``[[:alpha:]]`` is a POSIX class to RE2, a set followed by a literal ``]`` to ``re``), which
would name a literal RE2 does not require and lose real matches. This reader takes only what it is sure of -- plain
characters and escaped punctuation in a sequence that must match -- and reads anything else as "any text here", so
it may miss a literal (the index then narrows less), never invent one. ``tests/search/test_index_literals.py``
checks that claim against RE2 itself.

Case: the index folds ASCII letters, so every literal is folded too. Under case-insensitive matching RE2 folds
Unicode, where ``k`` also matches the Kelvin sign and ``s`` the long s (multi-byte in UTF-8), so those letters and
every non-ASCII character end a literal there.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["GRAM", "fold", "required_literals"]

GRAM: Final = 3
"""Literals shorter than this narrow nothing (the index is of trigrams)."""

_FOLD: Final = bytes.maketrans(bytes(range(65, 91)), bytes(range(97, 123)))
_REPEAT: Final = re.compile(r"\{(\d+)(,(\d*))?\}")
_CLASS_ESCAPE_LETTERS: Final = frozenset("dDwWsSbBAzaftnrvC")


def fold(data: bytes) -> bytes:
    """ASCII letters to lower case, every other byte as it is: the index's view of text."""
    return data.translate(_FOLD)


class _Unsure(Exception):
    """The pattern uses something this reader does not model: no literal is claimed."""


class _Reader:
    """A recursive-descent reader of RE2 syntax that keeps only the literal runs every match must contain."""

    def __init__(self, pattern: str, ignore_case: bool) -> None:
        self.p = pattern
        self.i = 0
        self.ignore_case = ignore_case

    def literal_char(self, ch: str) -> bytes | None:
        """The folded bytes of one literal character, or ``None`` if it ends a literal (see the module)."""
        if ch == "\n":
            return None
        if self.ignore_case and (ord(ch) > 0x7F or ch in "kKsS"):
            return None
        try:
            return fold(ch.encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate
            return None

    def alternation(self) -> tuple[list[bytes], bool]:
        """``seq ('|' seq)*`` up to a ``)`` or the end: the runs every match has, and whether a branch was seen."""
        runs = self.sequence()
        branched = False
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            self.sequence()
            branched = True
        return ([] if branched else runs), branched

    def sequence(self) -> list[bytes]:
        runs: list[bytes] = []
        run = bytearray()
        p = self.p
        while self.i < len(p) and p[self.i] not in "|)":
            atom, inner = self.atom()
            low, high = self.quantifier()
            if atom is not None and low == 1 and high == 1:
                run += atom
                continue
            if atom is not None and low >= 1:  # c+ or c{2,}: c is there at least once, what follows may not be next
                run += atom
            runs.append(bytes(run))
            run = bytearray()
            if low >= 1:
                runs.extend(inner)
        runs.append(bytes(run))
        return [r for r in runs if len(r) >= GRAM]

    def quantifier(self) -> tuple[int, int]:
        """``(least, most)`` repetitions of the atom just read (most -1: unbounded); ``(1, 1)`` when none."""
        p = self.p
        if self.i >= len(p):
            return 1, 1
        ch = p[self.i]
        bounds: tuple[int, int]
        if ch == "*":
            bounds = (0, -1)
            self.i += 1
        elif ch == "+":
            bounds = (1, -1)
            self.i += 1
        elif ch == "?":
            bounds = (0, 1)
            self.i += 1
        elif ch == "{":
            found = _REPEAT.match(p, self.i)
            if found is None:
                return 1, 1  # a literal {, read as the next atom
            least = int(found.group(1))
            most = least if found.group(2) is None else (int(found.group(3)) if found.group(3) else -1)
            bounds = (least, most)
            self.i = found.end()
        else:
            return 1, 1
        if self.i < len(p) and p[self.i] == "?":  # non-greedy: the same set of matches
            self.i += 1
        if self.i < len(p) and p[self.i] in "*+?":
            raise _Unsure  # a repeated repetition: RE2 refuses most; claim nothing
        return bounds

    def atom(self) -> tuple[bytes | None, list[bytes]]:
        """One atom: its literal bytes (``None``: not a literal character), and the runs inside a group."""
        p = self.p
        ch = p[self.i]
        if ch == "(":
            return None, self.group()
        if ch == "[":
            self.char_class()
            return None, []
        if ch == "\\":
            return self.escape(), []
        self.i += 1
        if ch in ".^$":
            return None, []
        return self.literal_char(ch), []

    def group(self) -> list[bytes]:
        p = self.p
        self.i += 1
        if p.startswith("?", self.i):
            close = p.find(")", self.i)
            colon = p.find(":", self.i)
            if p.startswith(("?P<", "?<"), self.i):
                end = p.find(">", self.i)
                if end < 0:
                    raise _Unsure
                self.i = end + 1
            elif 0 <= colon < close or close < 0:  # (?flags:...)
                if colon < 0:
                    raise _Unsure
                self.i = colon + 1
            else:  # (?flags): applies to the rest; ignore_case was decided from the whole pattern
                self.i = close + 1
                return []
        runs, _ = self.alternation()
        if self.i >= len(p) or p[self.i] != ")":
            raise _Unsure
        self.i += 1
        return runs

    def char_class(self) -> None:
        """Skip ``[...]`` (a POSIX ``[:name:]`` inside, ``]`` first, escapes)."""
        p = self.p
        i = self.i + 1
        if i < len(p) and p[i] == "^":
            i += 1
        if i < len(p) and p[i] == "]":
            i += 1
        while i < len(p):
            if p[i] == "\\":
                i += 2
                continue
            if p.startswith("[:", i):
                end = p.find(":]", i + 2)
                if end < 0:
                    raise _Unsure
                i = end + 2
                continue
            if p[i] == "]":
                self.i = i + 1
                return
            i += 1
        raise _Unsure

    def escape(self) -> bytes | None:
        p = self.p
        if self.i + 1 >= len(p):
            raise _Unsure
        ch = p[self.i + 1]
        self.i += 2
        if ch.isdigit():  # an octal code (up to three digits): which character is not modelled
            raise _Unsure
        if ch in "xpP":
            if self.i < len(p) and p[self.i] == "{":
                end = p.find("}", self.i)
                if end < 0:
                    raise _Unsure
                self.i = end + 1
            elif ch == "x":
                self.i += 2
            else:
                self.i += 1
            return None
        if ch == "Q":
            raise _Unsure  # \Q...\E: literal text, but rarely used; not modelled
        if ch in _CLASS_ESCAPE_LETTERS or ch.isalnum():
            return None
        return self.literal_char(ch)


def required_literals(pattern: str, *, regex: bool, ignore_case: bool) -> list[bytes]:
    """Byte strings, folded (:func:`fold`) and each at least :data:`GRAM` long, that every line matching
    ``pattern`` contains once folded; ``[]`` when none is known (search every file)."""
    if not regex:
        reader = _Reader("", ignore_case)
        runs: list[bytes] = []
        run = bytearray()
        for ch in pattern:
            piece = reader.literal_char(ch)
            if piece is None:
                runs.append(bytes(run))
                run = bytearray()
            else:
                run += piece
        runs.append(bytes(run))
        return [r for r in runs if len(r) >= GRAM]
    # An inline flag group may turn on case folding anywhere (or in a part): fold as if everywhere.
    reader = _Reader(pattern, ignore_case or "(?" in pattern)
    try:
        found, _ = reader.alternation()
        if reader.i != len(pattern):  # an unbalanced ) : RE2 refuses it; claim nothing
            return []
    except (_Unsure, IndexError):
        return []
    return found
