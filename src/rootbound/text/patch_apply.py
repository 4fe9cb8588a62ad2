"""Applying one Update File of an ``apply_patch`` patch to a text: where each hunk goes, and the new text.

Why its own module: locating hunks is the part of a patch that can go wrong quietly (the wrong ``return None``
of three), so it is pure code with its own tests, matched in the same tiers as ``edit_file``
(:mod:`rootbound.text.line_match`) and reported in the same words. The rules:

* Hunks apply in order, each searched from where the previous one ended; a hunk's ``@@ text`` lines are found
  first (each the first line at or after the search position equal to it once surrounding whitespace is
  ignored), and its lines are then searched below the last one. The format places a hunk by that order and
  those anchors, so the first match at or after the position is the one meant (as Codex applies it).
* A hunk's context and removed lines must be whole lines of the file, exact first, else tolerantly (trailing
  whitespace, one consistent indentation shift); the first exact match wins over an earlier tolerant one.
* Context lines stay exactly as they are in the file; added lines take the file's line ending and, after an
  indentation shift, the same shift.
* A hunk with no context or removed lines inserts below its last ``@@`` line, or at the end of the file.
* ``*** End of File``: the hunk's lines must be the file's last lines.
* As in Codex, an updated file ends with a line ending.

Errors name the hunk and the patch line expected, and the nearest near-miss in the file by line
number; never the text of either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rootbound.core.call_budget import checkpoint
from rootbound.text.line_match import TOLERANCE_ORDER, Block, Lines, Tolerance, Window, newline_style, reindent
from rootbound.text.patch_grammar import FileOp, Hunk, HunkLine, PatchError

__all__ = ["AnchorNotFound", "HunkMatch", "HunkNotFound", "PatchedText", "patch_text"]

_MAX_CANDIDATES: Final = 1000  # near-miss starts examined


class HunkNotFound(PatchError):
    """A hunk's lines (or its ``@@`` line) are not in the file where the patch places them."""

    def __init__(self, message: str, *, hunk: int, line: int) -> None:
        super().__init__("no match", message=message)
        self.hunk = hunk
        self.line = line


class AnchorNotFound(HunkNotFound):
    """A hunk's ``@@ text`` line names no line of the file below the previous hunk."""


@dataclass(frozen=True)
class HunkMatch:
    """Where one hunk applied: the 1-based first file line it matched (or inserted at), and what it tolerated."""

    index: int
    line: int
    tolerances: tuple[Tolerance, ...]


@dataclass(frozen=True)
class PatchedText:
    """One file's text before and after its hunks, with how each matched and the lines added and removed."""

    before: str
    after: str
    hunks: tuple[HunkMatch, ...]
    added: int
    removed: int

    @property
    def tolerances(self) -> tuple[Tolerance, ...]:
        used = {t for hunk in self.hunks for t in hunk.tolerances}
        return tuple(t for t in TOLERANCE_ORDER if t in used)


def patch_text(text: str, op: FileOp) -> PatchedText:
    """Apply ``op``'s hunks to ``text`` (the file's content); :class:`HunkNotFound` for the first that fails."""
    lines = Lines(text)
    style = newline_style(text)
    cursor = 0
    plan: list[tuple[int, int, list[str]]] = []  # (first line, line after the last replaced, new lines)
    matches: list[HunkMatch] = []
    added = removed = 0
    for index, hunk in enumerate(op.hunks, 1):
        checkpoint()
        where = f"hunk {index}"
        for anchor, number in hunk.anchors:
            found = _anchor(lines, anchor, cursor)
            if found is None:
                raise AnchorNotFound(
                    f"{where}: its '@@' line (patch line {number}) matches no line of the file"
                    + (f" below line {cursor}" if cursor else "")
                    + "; an '@@' line repeats a line of the file exactly, such as a class or function header",
                    hunk=index,
                    line=number,
                )
            cursor = found + 1
        old, new = hunk.old, hunk.new
        added += len(hunk.lines) - len(old)
        removed += len(hunk.lines) - len(new)
        if not old:
            at = cursor if hunk.anchors and not hunk.end_of_file else len(lines.raw)
            ending = style or (lines.ends[at - 1] if at and lines.ends[at - 1] else "\n")
            plan.append((at, at, [hl.text + ending for hl in new]))
            matches.append(HunkMatch(index, at + 1, ()))
            continue
        window, old = _locate(lines, hunk, old, cursor)
        if window is None:
            raise HunkNotFound(_not_found(where, lines, hunk, cursor), hunk=index, line=hunk.lines[0].line)
        stop = window.start + len(old)
        plan.append((window.start, stop, _render(lines, window, hunk, len(old), style)))
        tolerated = tuple(t for t in TOLERANCE_ORDER if t in window.tolerances and t != "line-endings")
        matches.append(HunkMatch(index, window.start + 1, tolerated))
        cursor = stop
    after = _assemble(lines, plan, style)
    return PatchedText(text, after, tuple(matches), added, removed)


def _anchor(lines: Lines, anchor: str, start: int) -> int | None:
    """The first line at or after ``start`` equal to ``anchor`` exactly, else once both are stripped."""
    wanted = anchor.strip()
    exact = None
    for number in range(start, len(lines.raw)):
        if not number % 16384:
            checkpoint(16384)
        raw = lines.raw[number]
        body = raw[:-1] if raw.endswith("\r") else raw
        if body == anchor:
            return number
        if exact is None and body.strip() == wanted:
            exact = number
    return exact


def _locate(lines: Lines, hunk: Hunk, old: list[HunkLine], cursor: int) -> tuple[Window | None, list[HunkLine]]:
    """The window the hunk's old lines occupy (exact first, then the tolerant tiers), and the old lines used:
    without a trailing empty line when only that kept them from matching (the patch's last blank context line
    standing for the file's end)."""
    window = _search(lines, old, cursor, hunk.end_of_file)
    if window is None and len(old) > 1 and not old[-1].text and old[-1].kind == " ":
        shorter = old[:-1]
        window = _search(lines, shorter, cursor, hunk.end_of_file)
        if window is not None:
            return window, shorter
    return window, old


def _search(lines: Lines, old: list[HunkLine], cursor: int, end_of_file: bool) -> Window | None:
    count = len(old)
    if count > len(lines.raw) - cursor:
        return None
    block = Block("".join(hl.text + "\n" for hl in old))
    start = len(lines.raw) - count if end_of_file else cursor
    for shifted in (False, True):
        if shifted and block.blank:
            break
        windows = lines.find(block, shifted, len(lines.raw) + 1, start=start)
        if end_of_file:
            windows = [w for w in windows if w.start == start]
        if windows:
            exact = next((w for w in windows if not (w.tolerances - {"line-endings"})), None)
            return exact or windows[0]
    return None


def _render(lines: Lines, window: Window, hunk: Hunk, span: int, style: str | None) -> list[str]:
    """The hunk's new lines in place of the window: context lines as the file has them, added lines with the
    file's line ending and the window's indentation shift."""
    out: list[str] = []
    at = window.start
    ending = style or lines.ends[at] or "\n"
    shifted = window.file_indent != window.old_indent
    taken = 0
    for hl in hunk.lines:
        if hl.kind == "+":
            body = reindent(hl.text, window.file_indent, window.old_indent) if shifted else hl.text
            out.append(body + ending)
            continue
        if taken == span:
            continue  # the trailing blank context line left out of the match (see _locate)
        if hl.kind == " ":
            out.append(_line(lines, at, ending))
        at += 1
        taken += 1
    return out


def _assemble(lines: Lines, plan: list[tuple[int, int, list[str]]], style: str | None) -> str:
    out: list[str] = []
    done = 0
    ending = style or "\n"
    for start, stop, new in sorted(plan, key=lambda item: item[0]):
        out.extend(_line(lines, n, ending) for n in range(done, start))
        out.extend(new)
        done = max(done, stop)
    out.extend(_line(lines, n, ending) for n in range(done, len(lines.raw)))
    return "".join(out)


def _line(lines: Lines, number: int, ending: str) -> str:
    """File line ``number`` with its own ending (``raw`` keeps a CRLF line's ``\r``), or ``ending`` for a last
    line that had none."""
    return lines.raw[number] + ("\n" if lines.ends[number] else ending)


def _not_found(where: str, lines: Lines, hunk: Hunk, cursor: int) -> str:
    """Why a hunk matched nowhere: the nearest near-miss (the run of file lines agreeing with most of the hunk's
    old lines, whitespace ignored) and the first patch line it disagrees with; else that no line looks like any."""
    old = hunk.old
    keys = [hl.text.strip() for hl in old]
    stripped = [raw.strip() for raw in lines.raw]
    anchor = next((k for k, key in enumerate(keys) if key), 0)
    found: list[tuple[int, int]] = []  # (agreeing lines, first file line)
    for number in range(anchor, len(stripped)):
        if stripped[number] != keys[anchor]:
            continue
        first = number - anchor
        agree = 0
        while agree < len(keys) and first + agree < len(stripped) and stripped[first + agree] == keys[agree]:
            agree += 1
        found.append((agree, first))
        if len(found) == _MAX_CANDIDATES:
            break
    best = max(found, key=lambda item: (item[1] >= cursor, item[0], -item[1]), default=None)
    head = f"{where} (patch line {hunk.line}): its lines were not found"
    head += f" below line {cursor} of the file" if cursor else " in the file"
    if hunk.end_of_file:
        head += " at its end (*** End of File)"
    if best is None:
        return f"{head}; no line of the file looks like its line at patch line {old[anchor].line}"
    agree, first = best
    if agree == len(keys):
        near = f"file lines {first + 1}-{first + agree} hold them"
        if first < cursor:
            near += ", above where the previous hunk or '@@' line left off (hunks go in file order)"
        elif hunk.end_of_file:
            near += ", but not as the file's last lines"
        else:
            near += " with other whitespace than the file's indentation shift allows"
        return f"{head}; {near}: copy the lines exactly, each after its one-character prefix"
    missing = old[agree]
    at = first + agree + 1
    differs = f"file line {at} differs" if at <= len(stripped) else "the file ends there"
    return (
        f"{head}; the nearest is at file line {first + 1}, which agrees up to patch line {missing.line - 1} "
        f"and then expects patch line {missing.line} ({differs}): read_file shows the current text"
    )
