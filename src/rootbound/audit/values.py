"""Values a tool accepts for its non-path parameters, learnt from the tool itself rather than guessed: the example a
parameter's description gives ("Range of cells (e.g., \\"A1:C10\\")"), and the allowed values a refusal lists
("Must be one of: code, markdown, raw", "Supported: ['python', 'html']", "expected one of", "valid values are",
"choose from"), or the example a refusal quotes. A filler the server refuses blocks the call before the path is
ever used; with the value it asks for, the typed call is actually attempted.

Only short, plain tokens are taken from the server's words (letters, digits and ``_ . : + -``, at most 40
characters, at most 20 of them): they are sent back to the same server, and said in the log only through
:func:`rootbound.audit.shown.shown`.
"""

from __future__ import annotations

import re
from typing import Any

import re2

__all__ = ["allowed_values", "example_value", "learn_value", "name_words", "pattern_value", "required_keys"]

_WORD = r"[A-Za-z0-9_][A-Za-z0-9_.:+-]{0,39}"
_INTRO = re.compile(
    r"\b(?:must be one of|should be one of|expected one of|one of the following|is not one of|valid (?:values|options|"
    r"choices|types|formats)(?: are| is)?|allowed (?:values|options|types|formats)(?: are| is)?|"
    r"supported(?: values| options| types| formats)?(?: are| is)?|choose from|possible values(?: are)?|"
    r"available (?:values|options|formats)(?: are| is)?|must be(?=\s*[\"'`]))\s*[:=]?\s*",
    re.IGNORECASE,
)
_QUOTED_WORD = re.compile(r"""["'`](""" + _WORD + r""")["'`]""")
_SEP = r"\s*(?:,|\||\bor\b|\band\b)\s*"
_BARE_LIST = re.compile(r"(" + _WORD + r")(" + _SEP + r"(" + _WORD + r"))+")
_EXAMPLE = re.compile(
    r"(?:\be\.\s?g\.?|\bfor example\b|\bsuch as\b|\bexample\s*:)\s*,?\s*:?\s*(?:[\"'`](" + _WORD + r")[\"'`]|"
    r"(" + _WORD + r"))",
    re.IGNORECASE,
)
_CELL_RANGE = re.compile(r"([A-Z]{1,3})([1-9][0-9]{0,6}):[A-Z]{1,3}[1-9][0-9]{0,6}")
MAX_VALUES = 20


def allowed_values(text: str) -> list[str]:
    """The values a refusal lists after "must be one of", "supported", "valid values are" and the like: a quoted
    list (``['python', 'html']``) or a bare one (``code, markdown, raw``, ``a | b``, ``x or y``). [] if none."""
    text = text[:4000]
    for intro in _INTRO.finditer(text):
        rest = text[intro.end() : intro.end() + 400]
        head = re.split(r"(?<=[\]\)\}])|[.;](?:\s|$)|\n", rest, maxsplit=1)[0]
        quoted = _QUOTED_WORD.findall(head)
        if quoted:
            return list(dict.fromkeys(quoted))[:MAX_VALUES]
        bare = _BARE_LIST.match(head.strip(" [({"))
        if bare:
            items = re.split(_SEP, bare.group(0))
            return [v for v in dict.fromkeys(items) if re.fullmatch(_WORD, v)][:MAX_VALUES]
    return []


_KEY = r"[A-Za-z_][A-Za-z0-9_]{0,39}"
_QUOTED_KEY = re.compile(r"""["'`](""" + _KEY + r""")["'`]""")
_KEY_WORDS = r"(?:required )?(?:keys?|fields?|properties|property)"
_KEY_LIST = r"""((?:["'`]?""" + _KEY + r"""["'`]?)(?:""" + _SEP + r"""["'`]?""" + _KEY + r"""["'`]?){0,7})"""
_KEYS = (
    # "missing key 'cell_type'", "missing required fields: a, b", "requires the keys a and b"
    re.compile(
        r"\b(?:missing|(?:with|needs?|requires?|must (?:have|contain|include))(?: the)?) "
        + _KEY_WORDS
        + r"\s*[:=]?\s*"
        + _KEY_LIST,
        re.IGNORECASE,
    ),
    # "a dictionary with 'cell_type' and 'source' keys", "each cell needs cell_type and source"
    re.compile(
        r"\b(?:with|needs?|requires?|must (?:have|contain|include))(?: the)? "
        + _KEY_LIST
        + r"(?: "
        + _KEY_WORDS
        + r")?",
        re.IGNORECASE,
    ),
    # "'source' is a required property" (JSON Schema validators)
    re.compile(r"""["'`](""" + _KEY + r""")["'`] is a required (?:property|field|key)""", re.IGNORECASE),
    # pydantic: "cells_to_add.0.cell_type\n  Field required"
    re.compile(r"(?m)^\s*" + _KEY + r"(?:\.\d+)?\.(" + _KEY + r")\s*\n\s*Field required"),
)
_NOT_KEYS = {"a", "an", "the", "to", "be", "and", "or", "keys", "key", "fields", "field", "it", "at", "least", "one"}


def required_keys(text: str) -> list[str]:
    """The keys a refusal names as missing or required for an object ("missing key 'cell_type'", "'source' is a
    required property", "a dictionary with 'cell_type' and 'source' keys", "each cell needs cell_type and source"):
    a quoted list, or a bare one of two or more names joined by commas, "and" or "or". [] if none. Only plain
    names (letters, digits, ``_``; at most 40 characters, 8 of them)."""
    text = text[:4000]
    keys: list[str] = []
    for pattern in _KEYS:
        for match in pattern.finditer(text):
            found = match.group(1)
            quoted = _QUOTED_KEY.findall(found)
            names = quoted or [k for k in re.split(_SEP, found) if re.fullmatch(_KEY, k)]
            explicit = pattern is not _KEYS[1] or match.group(0).lower().endswith(
                ("key", "keys", "field", "fields", "properties", "property")
            )
            if not explicit and (len(names) < 2 or match.group(0).lower().startswith("with")):
                continue  # "failed with 'rbt'", "needs a file": one word after "with" or "needs" is not a key
            keys += [k for k in names if k.lower() not in _NOT_KEYS]
    return list(dict.fromkeys(keys))[:8]


def example_value(text: str) -> str | None:
    """The example a description or a refusal gives ("e.g. A1:C10", "for example 'python'"); a spreadsheet range
    is narrowed to its first cell (``A1:A1``), so that a one-cell table of values fits it."""
    match = _EXAMPLE.search(text[:2000])
    if match is None:
        return None
    value = match.group(1) or match.group(2)
    cells = _CELL_RANGE.fullmatch(value)
    return f"{cells.group(1)}{cells.group(2)}:{cells.group(1)}{cells.group(2)}" if cells else value


def name_words(name: str) -> list[str]:
    """A parameter name's words, lower case (``new_type`` -> new, type; ``sheetName`` -> sheet, name)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


_WEAK = {"new", "name", "value", "the", "of", "to", "id", "a"}


def _score(name: str, current: Any, text: str) -> int:
    """How plainly a refusal speaks of the parameter: its name, its name's words ("export format" for
    ``export_format``), the value the audit sent, quoted or after a colon."""
    low = text.lower()
    score = 3 if re.search(r"(?<![A-Za-z0-9_])" + re.escape(name.lower()) + r"(?![A-Za-z0-9_])", low) else 0
    score += sum(1 for w in name_words(name) if w not in _WEAK and re.search(r"\b" + re.escape(w) + r"\b", low))
    if isinstance(current, str) and re.search(r"""(?:["'`]|:\s)""" + re.escape(current) + r"""(?:["'`.,]|$)""", text):
        score += 1
    return score


def learn_value(
    roles: dict[tuple[str, ...], tuple[Any, tuple[bool, ...], Any]], text: str, tried: set[tuple[str, ...]]
) -> tuple[tuple[str, ...], str] | None:
    """The string filler a refusal speaks of and the value it asks for (the first listed value other than the one
    sent, else the example it quotes): (pointer, value), or None. A parameter already learnt (``tried``) is not
    learnt again; the refusal must name it (or it is the only string filler)."""
    values = allowed_values(text)
    if not values:
        example = example_value(text)
        values = [example] if example else []
    if not values:
        return None
    candidates = [
        (pointer, current)
        for pointer, (role, _, current) in roles.items()
        if role in ("filler", "new") and isinstance(current, str)
    ]
    scored = sorted(((_score(p[-1], cur, text), i, p, cur) for i, (p, cur) in enumerate(candidates)), reverse=True)
    if not scored:
        return None
    best, _, pointer, current = scored[0]
    if best < (1 if len(scored) == 1 else 2) or (len(scored) > 1 and scored[1][0] == best) or pointer in tried:
        return None  # not plainly about one filler, or about one already set from what the server listed
    value = next((v for v in values if v != current), None)
    return (pointer, value) if value is not None else None


_SHAPES = (
    "rbt",
    "0" * 64,
    "sha256:" + "0" * 64,
    "0" * 40,
    "0" * 32,
    "1",
    "A1",
    "A1:A1",
    "2024-01-01",
    "00000000-0000-0000-0000-000000000000",
    "rbt-1",
    "rbt_1",
    "RBT",
)
"""Harmless strings of the shapes schemas most often ask for (a digest, a number, a cell, a date, a uuid)."""


def pattern_value(pattern: object, preferred: str) -> str | None:
    """``preferred`` if it fits a schema's ``pattern`` (JSON Schema: a search, not a full match), else the first
    shape of :data:`_SHAPES` that does, else ``None``. The pattern is the server's: it is run by RE2 (linear time,
    so a hostile one cannot stall the audit), and one RE2 cannot compile (lookarounds, backreferences) is ignored."""
    if not isinstance(pattern, str) or len(pattern) > 1000:
        return None
    try:
        compiled = re2.compile(pattern)
    except Exception:  # re2.error, or a pattern it cannot hold
        return None
    for text in (preferred, *_SHAPES):
        if compiled.search(text) is not None:
            return text
    return None
