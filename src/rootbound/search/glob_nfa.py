"""A glob matcher in linear time: the pattern simulated as an NFA (a set of states per character, no backtracking).

Why: Python's ``re`` backtracks, and holds the GIL for a whole match. A glob with several ``*`` in one component
(``*?*?*?*?*?*?*?*?*?Z`` on a 42-character name: seconds; ``*?`` x12: minutes) or many ``**`` in a row
(``**/`` x17 on a deep path) stalls every thread of the server. :mod:`._glob` keeps ``re`` for the patterns it
handles in linear time (at most one ``*`` per component and two ``**``) and uses this matcher for the others:
``O(len(text) x len(pattern))`` steps, in bytecode the interpreter can switch away from.

Same language as :func:`._glob._translate_component` and the ``**`` pieces of :func:`._glob.compile_glob`:
``*`` and ``?`` and ``[...]``/``[!...]`` never match ``/``; a ``**`` component in the middle matches zero or more
whole segments (``(?:[^/]+/)*``), at the end anything (``.*``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["LinearGlob", "Token", "component_tokens"]

Kind = Literal["lit", "one", "cls", "star", "segs", "all"]


@dataclass(frozen=True)
class Token:
    kind: Kind
    char: str = ""
    chars: frozenset[str] = frozenset()
    ranges: tuple[tuple[str, str], ...] = ()
    negate: bool = False

    def accepts(self, c: str) -> bool:
        """For the one-character kinds (``lit``, ``one``, ``cls``)."""
        if self.kind == "lit":
            return c == self.char
        if c == "/":
            return False
        if self.kind == "one":
            return True
        inside = c in self.chars or any(lo <= c <= hi for lo, hi in self.ranges)
        return inside != self.negate


def component_tokens(component: str) -> list[Token]:
    """One glob component as tokens (the bracket parsing of :func:`._glob._translate_component`)."""
    out: list[Token] = []
    i, n = 0, len(component)
    while i < n:
        ch = component[i]
        i += 1
        if ch == "*":
            if not out or out[-1].kind != "star":
                out.append(Token("star"))
        elif ch == "?":
            out.append(Token("one"))
        elif ch == "[":
            j = i
            if j < n and component[j] in "!^":
                j += 1
            if j < n and component[j] == "]":
                j += 1
            while j < n and component[j] != "]":
                j += 1
            if j >= n:
                out.append(Token("lit", "["))
                continue
            body = component[i:j]
            i = j + 1
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("/", "")
            chars: set[str] = set()
            ranges: list[tuple[str, str]] = []
            k = 0
            while k < len(body):
                if k + 2 < len(body) and body[k + 1] == "-":
                    ranges.append((body[k], body[k + 2]))
                    k += 3
                else:
                    chars.add(body[k])
                    k += 1
            out.append(Token("cls", chars=frozenset(chars), ranges=tuple(ranges), negate=negate))
        else:
            out.append(Token("lit", ch))
    return out


class LinearGlob:
    """``fullmatch(text)``: ``True`` or ``None``, like a compiled pattern's match object's truthiness."""

    def __init__(self, tokens: list[Token]) -> None:
        self._tokens = tuple(tokens)

    def _close(self, states: set[tuple[int, bool]]) -> set[tuple[int, bool]]:
        tokens = self._tokens
        stack = list(states)
        while stack:
            index, inside = stack.pop()
            if index < len(tokens) and not inside and tokens[index].kind in ("star", "segs", "all"):
                nxt = (index + 1, False)
                if nxt not in states:
                    states.add(nxt)
                    stack.append(nxt)
        return states

    def fullmatch(self, text: str) -> bool | None:
        tokens = self._tokens
        end = len(tokens)
        states = self._close({(0, False)})
        for c in text:
            step: set[tuple[int, bool]] = set()
            for index, inside in states:
                if index == end:
                    continue
                token = tokens[index]
                kind = token.kind
                if kind == "star":
                    if c != "/":
                        step.add((index, False))
                elif kind == "all":
                    step.add((index, False))
                elif kind == "segs":
                    if c != "/":
                        step.add((index, True))
                    elif inside:
                        step.add((index, False))
                elif token.accepts(c):
                    step.add((index + 1, False))
            if not step:
                return None
            states = self._close(step)
        return True if (end, False) in states else None
