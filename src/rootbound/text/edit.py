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
import itertools
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from rootbound.core.errors import INVALID_PARAMS, RootsError
from rootbound.text.unified_diff import unified_diff

__all__ = [
    "AppliedEdit",
    "Edit",
    "EditAmbiguous",
    "EditError",
    "EditNotFound",
    "EditResult",
    "FileChanged",
    "InvalidEdit",
    "Tolerance",
    "apply_edits",
    "content_hash",
    "unified_diff",
]

Tolerance: TypeAlias = Literal["line-endings", "trailing-whitespace", "indentation"]

MAX_LISTED_LINES: Final = 10  # line numbers shown in an error or a result
_MAX_COUNTED: Final = 1000  # occurrences counted before "more than"
_INDENT: Final = " \t"


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


class EditAmbiguous(EditError):
    """An old text matched several times and the edit did not ask for ``replace_all``."""

    def __init__(self, index: int, count: int, lines: Sequence[int], *, tolerance: bool) -> None:
        times = f"more than {_MAX_COUNTED}" if count > _MAX_COUNTED else str(count)
        how = " (tolerantly)" if tolerance else ""
        message = (
            f"edits[{index}]: old text matched {times} times{how}, at lines {_listed(lines)}; "
            "include more surrounding lines to make it unique, or set replace_all"
        )
        super().__init__("ambiguous", message, index=index, lines=list(dict.fromkeys(lines))[:MAX_LISTED_LINES])
        self.count = count


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
    """Replace ``old`` by ``new``: ``old`` must match exactly once, or every match with ``replace_all``."""

    old: str
    new: str
    replace_all: bool = False


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
        return tuple(t for t in _ORDER if t in used)

    def diff(self, path: str = "file", *, context: int = 3) -> str:
        """The unified diff from ``before`` to ``after`` (empty when nothing changed)."""
        return unified_diff(self.before, self.after, path, context=context)


_ORDER: Final[tuple[Tolerance, ...]] = ("line-endings", "trailing-whitespace", "indentation")


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


def _newline_style(text: str) -> str | None:
    """``"\\r\\n"`` or ``"\\n"`` if every line ending in ``text`` is that one; ``None`` if mixed or none."""
    lf = text.count("\n")
    if not lf:
        return None
    crlf = text.count("\r\n")
    if crlf == lf:
        return "\r\n"
    return "\n" if crlf == 0 else None


def _to_style(text: str, style: str | None) -> str:
    if style is None or "\n" not in text:
        return text
    text = text.replace("\r\n", "\n")
    return text.replace("\n", "\r\n") if style == "\r\n" else text


def _apply_one(text: str, index: int, edit: Edit) -> tuple[str, tuple[int, ...], tuple[Tolerance, ...]]:
    style = _newline_style(text)
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
    lines = _Lines(text)
    block = _Block(edit.old)
    if block.blank:
        raise EditNotFound(index, ())  # whitespace-only old text: only an exact match is meaningful
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
        while pos >= 0:
            starts.append(pos)
            pos = text.find(old, pos + len(old))
        return text.replace(old, new), _line_numbers(text, starts)
    second = text.find(old, first + 1)
    if second < 0:
        return text[:first] + new + text[first + len(old) :], _line_numbers(text, [first])
    starts = [first, second]
    pos = text.find(old, second + 1)
    while pos >= 0 and len(starts) <= _MAX_COUNTED:
        starts.append(pos)
        pos = text.find(old, pos + 1)
    raise EditAmbiguous(index, len(starts), _line_numbers(text, starts[: MAX_LISTED_LINES + 1]), tolerance=False)


def _line_numbers(text: str, starts: Sequence[int]) -> tuple[int, ...]:
    numbers: list[int] = []
    line, counted = 1, 0
    for start in starts:
        line += text.count("\n", counted, start)
        counted = start
        numbers.append(line)
    return tuple(numbers)


class _Block:
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
        self.indents = [_indent(b) for b in self.bodies]
        self.blank = not any(b.strip() for b in self.bodies)


def _common_prefix(texts: list[str]) -> str:
    """The longest common leading substring (character-wise: indentation, not path components)."""
    if not texts:
        return ""
    low, high = min(texts), max(texts)
    size = 0
    while size < len(low) and low[size] == high[size]:
        size += 1
    return low[:size]


def _indent(body: str) -> str:
    return body[: len(body) - len(body.lstrip(_INDENT))]


@dataclass(frozen=True)
class _Window:
    start: int  # 0-based first line
    file_indent: str  # X: the common indentation of the window's non-blank lines
    old_indent: str  # Y: the same for the old text
    tolerances: frozenset[Tolerance]


class _Lines:
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
        self._keys: dict[bool, tuple[str, list[int]]] = {}

    def _joined(self, shifted: bool) -> tuple[str, list[int]]:
        """All line keys joined by ``\\n`` and each key's offset in that string (built once per tier)."""
        cached = self._keys.get(shifted)
        if cached is None:
            keys = [p.rstrip().lstrip(_INDENT) if shifted else p.rstrip() for p in self.raw]
            offsets = [0, *itertools.accumulate(len(k) + 1 for k in keys)]
            cached = self._keys[shifted] = ("\n".join(keys), offsets)
        return cached

    def find(self, block: _Block, shifted: bool, limit: int) -> list[_Window]:
        """Windows of whole lines equal to ``block`` in this tier (overlapping ones included), up to ``limit``."""
        haystack, offsets = self._joined(shifted)
        keys = [b.rstrip().lstrip(_INDENT) if shifted else b.rstrip() for b in block.bodies]
        needle = "\n".join(keys)
        count = len(keys)
        windows: list[_Window] = []
        pos = haystack.find(needle)
        while pos >= 0 and len(windows) < limit:
            line = bisect_right(offsets, pos) - 1
            end = pos + len(needle)
            if (
                offsets[line] == pos
                and (end == len(haystack) or haystack[end] == "\n")
                and line + count <= len(self.raw)
            ):
                window = self._window(line, block, shifted)
                if window is not None:
                    windows.append(window)
            pos = haystack.find(needle, pos + 1)
        return windows

    def _window(self, start: int, block: _Block, shifted: bool) -> _Window | None:
        stop = start + len(block.bodies)
        ends = self.ends[start:stop]
        bodies = [p[:-1] if e == "\r\n" else p for p, e in zip(self.raw[start:stop], ends, strict=True)]
        used: set[Tolerance] = set()
        x = y = ""
        strip_x = strip_y = 0
        if shifted:
            pairs = [(_indent(f), o) for f, o, b in zip(bodies, block.indents, block.bodies, strict=True) if b.strip()]
            x = _common_prefix([f for f, _ in pairs])
            y = _common_prefix([o for _, o in pairs])
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
        return _Window(start, x, y, frozenset(used))

    def replace(
        self, windows: list[_Window], block: _Block, new: str, style: str | None
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
        return "".join(out), tuple(lines), tuple(t for t in _ORDER if t in used)

    def _block(self, window: _Window, block: _Block, new: str, style: str | None, last_end: str) -> str:
        ending = self.ends[window.start] or style or "\n"
        replacement = _Block(new) if new else None
        if replacement is None:
            bodies: list[str] = []
            final_newline = False
        else:
            bodies = replacement.bodies
            final_newline = replacement.final_newline
            if window.file_indent != window.old_indent:
                bodies = [_reindent(b, window.file_indent, window.old_indent) for b in bodies]
        result = ending.join(bodies)
        if final_newline and (last_end or not block.final_newline):
            result += ending  # but keep "no newline at end of file" when the old text claimed a newline there
        if not block.final_newline:
            result += last_end  # the old text stopped before its last line's ending, as an exact match would
        return result

    def lookalikes(self, block: _Block) -> list[int]:
        """Lines (1-based) equal to the old text's first non-blank line once stripped, else containing it."""
        first = next(b.strip() for b in block.bodies if b.strip())
        stripped = [p.strip() for p in self.raw]
        found = [n + 1 for n, s in enumerate(stripped) if s == first]
        if not found:
            found = [n + 1 for n, s in enumerate(stripped) if first in s]
        return found[: MAX_LISTED_LINES + 1]


def _reindent(body: str, file_indent: str, old_indent: str) -> str:
    """Shift one new line as the old text was shifted: ``old_indent`` becomes ``file_indent``."""
    if not body.strip():
        return ""
    if body.startswith(old_indent):
        return file_indent + body[len(old_indent) :]
    if old_indent.startswith(file_indent):  # less indented than the block, and the file is shifted left
        cut = min(len(_indent(body)), len(old_indent) - len(file_indent))
        return body[cut:]
    if file_indent.startswith(old_indent):
        return file_indent[len(old_indent) :] + body
    return file_indent + body.lstrip(_INDENT)
