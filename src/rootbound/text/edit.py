"""Targeted text edits (old text -> new text) and their unified diff: the pure core of ``edit_file``.

Why: an agent quotes the text it wants changed, and it often gets the whitespace wrong (CRLF files edited with
LF text, trailing spaces it never saw, a block quoted at another indentation). Failing those edits sends agents
into retry loops; matching them loosely anywhere risks editing the wrong place. So each edit is matched in
tiers, the strictest first, and a tier that finds the text twice is an error, never a guess:

1. **exact**: the old text as a substring (overlapping occurrences count, so ``"aa"`` is ambiguous in ``"aaa"``);
2. **line endings**: in a file that uses one line ending throughout, the old text with its line endings
   converted to the file's;
3. **trailing whitespace**: whole lines equal once trailing whitespace (and ``\\r``) is ignored;
4. **indentation**: whole lines equal once every line is shifted by the same indentation (``X`` in the file,
   ``Y`` in the old text); the new text is shifted the same way.

Tiers 3 and 4 replace whole lines, and say which tolerances they used (:attr:`AppliedEdit.tolerances`). The new
text takes the file's line endings (a uniform file stays uniform; a mixed one gets the matched line's ending).
No I/O here: :meth:`rootbound.RootedFS.edit_file` reads, applies and writes atomically. Errors carry edit
indexes and line numbers, never file content.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from rootbound.core.call_budget import checkpoint
from rootbound.core.errors import INVALID_PARAMS, RootsError
from rootbound.text.line_match import (
    MATCH_WORK,
    MAX_LISTED_LINES,
    TOLERANCE_ORDER,
    Block,
    Lines,
    Tolerance,
    TooLargeToMatch,
    newline_style,
)
from rootbound.text.unified_diff import unified_diff

__all__ = [
    "AppliedEdit",
    "Edit",
    "EditAmbiguous",
    "EditCountMismatch",
    "EditError",
    "EditNotFound",
    "EditResult",
    "EditTooLarge",
    "FileChanged",
    "InvalidEdit",
    "Tolerance",
    "apply_edits",
    "content_hash",
    "unified_diff",
]

_MAX_COUNTED: Final = 1000  # occurrences counted before "more than"


# -- errors ------------------------------------------------------------------------------------------------------


class EditError(RootsError, ValueError):
    """An edit could not be applied; nothing was written. ``index`` is the failing edit's 0-based position."""

    code = INVALID_PARAMS
    default_message = "edit failed"

    def __init__(self, reason: str, message: str, *, index: int | None = None, lines: Sequence[int] = ()) -> None:
        super().__init__(reason, message=message)
        self.index = index
        self.lines = tuple(lines)

    @property
    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"reason": self.reason}
        if self.index is not None:
            data["edit"] = self.index
        if self.lines:
            data["lines"] = list(self.lines)
        return data


class InvalidEdit(EditError):
    """An edit is malformed (not a string, empty old text, no edits at all)."""

    def __init__(self, message: str, *, index: int | None = None) -> None:
        super().__init__("invalid edit", message, index=index)


class EditNotFound(EditError):
    """An old text matched nowhere, even tolerantly; ``lines`` are lines that look like its first line."""

    def __init__(self, index: int, lines: Sequence[int]) -> None:
        shown = _listed(lines)
        hint = ""
        if shown:
            hint = f"; line {shown} looks" if len(lines) == 1 else f"; lines {shown} look"
            hint += " like its first line"
        super().__init__(
            "no match", f"edits[{index}]: old text not found{hint}", index=index, lines=lines[:MAX_LISTED_LINES]
        )


class EditTooLarge(EditError):
    """Matching an old text against the file would cost too much (issue 48 #5): it should be narrowed."""

    def __init__(self, index: int) -> None:
        message = (
            f"edits[{index}]: old text too large to match against this file; narrow the old text (quote fewer "
            "lines, including one that occurs once)"
        )
        super().__init__("too large to match", message, index=index)


class EditAmbiguous(EditError):
    """An old text matched several times and the edit did not ask for ``replace_all``."""

    def __init__(self, index: int, count: int, lines: Sequence[int], *, tolerance: bool, more: bool = False) -> None:
        times = f"more than {min(count, _MAX_COUNTED)}" if more or count > _MAX_COUNTED else str(count)
        how = " (tolerantly)" if tolerance else ""
        message = (
            f"edits[{index}]: old text matched {times} times{how}, at lines {_listed(lines)}; "
            "include more surrounding lines to make it unique, or set replace_all"
        )
        super().__init__("ambiguous", message, index=index, lines=list(dict.fromkeys(lines))[:MAX_LISTED_LINES])
        self.count = count


class EditCountMismatch(EditError):
    """An edit with ``expected`` (``expected_replacements``) found the old text another number of times."""

    def __init__(self, index: int, expected: int, lines: Sequence[int]) -> None:
        found = len(lines)
        message = (
            f"edits[{index}]: old text found {found} times, at lines {_listed(lines)}, but expected_replacements "
            f"is {expected}; nothing was replaced: pass the count found, or quote more lines to pick fewer"
        )
        super().__init__("count mismatch", message, index=index, lines=list(dict.fromkeys(lines))[:MAX_LISTED_LINES])
        self.expected = expected
        self.found = found


class FileChanged(RootsError):
    """A precondition (``expected_hash``, ``expected_mtime``) failed: the file changed since the caller read it."""

    code = INVALID_PARAMS
    default_message = "the file changed since it was read; read it again before editing"

    def __init__(self) -> None:
        super().__init__("changed")


def _listed(lines: Sequence[int]) -> str:
    """Distinct line numbers, at most ``MAX_LISTED_LINES`` of them, ``...`` marking more."""
    distinct = list(dict.fromkeys(lines))
    shown = ", ".join(map(str, distinct[:MAX_LISTED_LINES]))
    return shown + (", ..." if len(distinct) > MAX_LISTED_LINES else "")


# -- data --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` by ``new``: ``old`` must match exactly once, or every match with ``replace_all``, or
    exactly ``expected`` times (every one replaced; another count is :class:`EditCountMismatch`)."""

    old: str
    new: str
    replace_all: bool = False
    expected: int | None = None


@dataclass(frozen=True)
class AppliedEdit:
    """How one edit matched: the 1-based first line of each replaced occurrence (in the text as it was when
    this edit applied, i.e. after the earlier edits) and the tolerances used (empty for an exact match)."""

    index: int
    lines: tuple[int, ...]
    tolerances: tuple[Tolerance, ...]

    @property
    def exact(self) -> bool:
        return not self.tolerances


@dataclass(frozen=True)
class EditResult:
    """The text before and after all edits, and how each edit matched."""

    before: str
    after: str
    applied: tuple[AppliedEdit, ...]

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def tolerances(self) -> tuple[Tolerance, ...]:
        """Every tolerance any edit used, in tier order."""
        used = {t for applied in self.applied for t in applied.tolerances}
        return tuple(t for t in TOLERANCE_ORDER if t in used)

    def diff(self, path: str = "file", *, context: int = 3) -> str:
        """The unified diff from ``before`` to ``after`` (empty when nothing changed)."""
        return unified_diff(self.before, self.after, path, context=context)


def content_hash(data: bytes) -> str:
    """The hash a caller passes back as ``expected_hash``: SHA-256 of the file's bytes, lowercase hex."""
    return hashlib.sha256(data).hexdigest()


# -- applying ----------------------------------------------------------------------------------------------------


def apply_edits(text: str, edits: Sequence[Edit]) -> EditResult:
    """Apply ``edits`` in order (each to the result of the previous ones); all or nothing.

    Raises :class:`InvalidEdit`, :class:`EditNotFound` or :class:`EditAmbiguous` for the first edit that fails.
    """
    if isinstance(edits, Edit) or not isinstance(edits, Sequence) or not edits:
        raise InvalidEdit("at least one edit is required")
    current = text
    applied: list[AppliedEdit] = []
    for index, edit in enumerate(edits):
        if not isinstance(edit, Edit) or not isinstance(edit.old, str) or not isinstance(edit.new, str):
            raise InvalidEdit(f"edits[{index}]: old and new must be strings", index=index)
        if not edit.old:
            raise InvalidEdit(f"edits[{index}]: old text is empty (use write_file to create a file)", index=index)
        current, lines, tolerances = _apply_one(current, index, edit)
        applied.append(AppliedEdit(index, lines, tolerances))
    return EditResult(text, current, tuple(applied))


def _to_style(text: str, style: str | None) -> str:
    if style is None or "\n" not in text:
        return text
    text = text.replace("\r\n", "\n")
    return text.replace("\n", "\r\n") if style == "\r\n" else text


def _apply_one(text: str, index: int, edit: Edit) -> tuple[str, tuple[int, ...], tuple[Tolerance, ...]]:
    if edit.expected is None:
        return _apply_matched(text, index, edit)
    if isinstance(edit.expected, bool) or not isinstance(edit.expected, int) or edit.expected < 1:
        raise InvalidEdit(f"edits[{index}]: expected_replacements must be a positive integer", index=index)
    after, lines, tolerances = _apply_matched(text, index, Edit(edit.old, edit.new, replace_all=True))
    if len(lines) != edit.expected:
        raise EditCountMismatch(index, edit.expected, lines)
    return after, lines, tolerances


def _apply_matched(text: str, index: int, edit: Edit) -> tuple[str, tuple[int, ...], tuple[Tolerance, ...]]:
    style = newline_style(text)
    new = _to_style(edit.new, style)
    done = _exact(text, index, edit.old, new, edit.replace_all)
    if done is not None:
        return done[0], done[1], ()
    if style is not None:
        old = _to_style(edit.old, style)
        if old != edit.old:
            done = _exact(text, index, old, new, edit.replace_all)
            if done is not None:
                return done[0], done[1], ("line-endings",)
    lines = Lines(text)
    block = Block(edit.old)
    if block.blank:
        raise EditNotFound(index, ())  # whitespace-only old text: only an exact match is meaningful
    try:
        return _apply_tolerant(lines, block, index, edit, style)
    except TooLargeToMatch:
        raise EditTooLarge(index) from None


def _apply_tolerant(
    lines: Lines, block: Block, index: int, edit: Edit, style: str | None
) -> tuple[str, tuple[int, ...], tuple[Tolerance, ...]]:
    for shifted in (False, True):
        windows = lines.find(block, shifted, len(lines.raw) if edit.replace_all else _MAX_COUNTED + 1)
        if not windows:
            continue
        if len(windows) > 1 and not edit.replace_all:
            raise EditAmbiguous(index, len(windows), [w.start + 1 for w in windows], tolerance=True)
        return lines.replace(windows, block, edit.new, style)
    raise EditNotFound(index, lines.lookalikes(block))


def _exact(text: str, index: int, old: str, new: str, replace_all: bool) -> tuple[str, tuple[int, ...]] | None:
    first = text.find(old)
    if first < 0:
        return None
    if replace_all:
        starts = [first]
        pos = text.find(old, first + len(old))
        while pos >= 0:  # non-overlapping: at most len(text) / len(old) finds
            checkpoint()
            starts.append(pos)
            pos = text.find(old, pos + len(old))
        return text.replace(old, new), _line_numbers(text, starts)
    second = text.find(old, first + 1)
    if second < 0:
        return text[:first] + new + text[first + len(old) :], _line_numbers(text, [first])
    # Overlapping occurrences are counted for the message, each find costing about len(old): bounded (#5).
    most = max(2, min(_MAX_COUNTED, MATCH_WORK // (2 * len(old))))
    starts = [first, second]
    pos = text.find(old, second + 1)
    while pos >= 0 and len(starts) <= most:
        checkpoint()
        starts.append(pos)
        pos = text.find(old, pos + 1)
    more = pos >= 0 and len(starts) > most
    lines = _line_numbers(text, starts[: MAX_LISTED_LINES + 1])
    raise EditAmbiguous(index, len(starts) - more, lines, tolerance=False, more=more)


def _line_numbers(text: str, starts: Sequence[int]) -> tuple[int, ...]:
    numbers: list[int] = []
    line, counted = 1, 0
    for start in starts:
        line += text.count("\n", counted, start)
        counted = start
        numbers.append(line)
    return tuple(numbers)
