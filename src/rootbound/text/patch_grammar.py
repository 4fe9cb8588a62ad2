"""The ``apply_patch`` patch format (Codex's "V4A"): text in, file operations out, with the format's leniencies.

Why its own module: models trained on OpenAI's Codex write their edits in this envelope, and a parser that is
pure code, with its own tests, can be strict where a mistake would edit the wrong thing and lenient where the
models are known to slip (``docs/writing.md`` lists both). The grammar::

    *** Begin Patch
    *** Add File: PATH          then the new file's lines, each prefixed "+"
    *** Delete File: PATH
    *** Update File: PATH
    *** Move to: NEW_PATH       (optional, right after Update File)
    @@ [a line of the file]     a hunk; its optional text names a line above the change (a class, a function)
     context line               prefixed " "   (several "@@ text" lines narrow step by step)
    -removed line               prefixed "-"
    +added line                 prefixed "+"
    *** End of File             (optional: the hunk ends at the end of the file)
    *** End Patch

Leniencies: whitespace around the whole patch and around every marker line; a heredoc wrapper (``<<EOF`` /
``<<'EOF'`` / ``<<"EOF"`` ... ``EOF``) left by a shell-style call; CRLF line endings in the patch; blank lines
between operations and between hunks; a first hunk without its ``@@``; an empty line inside a hunk read as an
empty context line; a unified-diff range header (``@@ -12,5 +12,6 @@``) read as a bare ``@@``.

Errors name the patch line (1-based) and what was expected there, never the patch's own text. Bounds
(:data:`MAX_PATCH_CHARS`, :data:`MAX_FILES`, :data:`MAX_HUNKS`) are checked before anything else is done.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

from rootbound.core.errors import INVALID_PARAMS, RootsError

__all__ = [
    "MAX_FILES",
    "MAX_HUNKS",
    "MAX_PATCH_CHARS",
    "FileOp",
    "Hunk",
    "HunkLine",
    "Patch",
    "PatchError",
    "PatchSyntaxError",
    "parse_patch",
]

MAX_PATCH_CHARS: Final = 4 * 1024 * 1024
"""The longest patch accepted (characters)."""
MAX_FILES: Final = 100
"""File operations in one patch."""
MAX_HUNKS: Final = 500
"""Hunks in one Update File."""
MAX_PATH: Final = 4096

BEGIN: Final = "*** Begin Patch"
END: Final = "*** End Patch"
ADD: Final = "*** Add File:"
DELETE: Final = "*** Delete File:"
UPDATE: Final = "*** Update File:"
MOVE: Final = "*** Move to:"
END_OF_FILE: Final = "*** End of File"
_HEREDOC_OPENERS: Final = ("<<EOF", "<<'EOF'", '<<"EOF"')
_RANGE: Final = re.compile(r"-\d+(?:,\d+)? \+\d+(?:,\d+)? @@.*")  # what follows "@@ " in a unified diff header
_EXPECTED_OP: Final = (
    "expected '*** Add File: PATH', '*** Update File: PATH', '*** Delete File: PATH' or '*** End Patch'"
)


class PatchError(RootsError, ValueError):
    """A patch could not be applied; nothing was changed. The message names patch lines, never patch text."""

    code = INVALID_PARAMS
    default_message = "invalid patch"


class PatchSyntaxError(PatchError):
    """The patch does not follow the grammar (or is over a bound)."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid patch", message=message)


class HunkLine(NamedTuple):
    """One line of a hunk: ``kind`` is ``" "`` (context), ``"-"`` (removed) or ``"+"`` (added); ``line`` is its
    1-based line number in the patch."""

    kind: Literal[" ", "-", "+"]
    text: str
    line: int


@dataclass(frozen=True)
class Hunk:
    """One ``@@`` section of an Update File: ``anchors`` are its ``@@ text`` lines (each a line of the file,
    found in turn), ``lines`` its body; ``end_of_file`` when it must end at the end of the file."""

    line: int
    anchors: tuple[tuple[str, int], ...]
    lines: tuple[HunkLine, ...]
    end_of_file: bool = False

    @property
    def old(self) -> list[HunkLine]:
        """The lines the file must have here (context and removed)."""
        return [hl for hl in self.lines if hl.kind != "+"]

    @property
    def new(self) -> list[HunkLine]:
        """The lines it will have (context and added)."""
        return [hl for hl in self.lines if hl.kind != "-"]


@dataclass(frozen=True)
class FileOp:
    """One file operation: ``kind`` add, delete or update; ``line`` the patch line of its header."""

    kind: Literal["add", "delete", "update"]
    path: str
    line: int
    content: str = ""
    move_to: str | None = None
    hunks: tuple[Hunk, ...] = ()

    @property
    def label(self) -> str:
        """How an error names this operation: its header's kind and patch line (never its path)."""
        word = {"add": "Add File", "delete": "Delete File", "update": "Update File"}[self.kind]
        return f"{word} at patch line {self.line}"


@dataclass(frozen=True)
class Patch:
    ops: tuple[FileOp, ...]


def parse_patch(text: str) -> Patch:
    """Parse a whole patch; :class:`PatchSyntaxError` for the first thing wrong with it."""
    if not isinstance(text, str):
        raise PatchSyntaxError("the patch must be a string")
    if len(text) > MAX_PATCH_CHARS:
        raise PatchSyntaxError(f"the patch is longer than {MAX_PATCH_CHARS} characters: split it into several")
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    first, last = _envelope(lines)
    return Patch(tuple(_Parser(lines, first + 1, last).ops()))


def _envelope(lines: list[str]) -> tuple[int, int]:
    """The 0-based indexes of the ``*** Begin Patch`` and ``*** End Patch`` lines (a heredoc wrapper skipped)."""
    filled = [n for n, line in enumerate(lines) if line.strip()]
    if not filled:
        raise PatchSyntaxError("the patch is empty: send '*** Begin Patch', the file operations, '*** End Patch'")
    first, last = filled[0], filled[-1]
    if lines[first].strip() in _HEREDOC_OPENERS and lines[last].strip().endswith("EOF") and len(filled) >= 4:
        first, last = filled[1], filled[-2]
    if lines[first].strip() != BEGIN:
        raise PatchSyntaxError(f"patch line {first + 1}: the patch must start with '{BEGIN}'")
    if lines[last].strip() != END or last == first:
        raise PatchSyntaxError(f"patch line {last + 1}: the patch must end with '{END}'")
    return first, last


class _Parser:
    """A cursor over the lines between the envelope markers."""

    def __init__(self, lines: list[str], start: int, stop: int) -> None:
        self.lines = lines
        self.at = start
        self.stop = stop

    def ops(self) -> list[FileOp]:
        ops: list[FileOp] = []
        while True:
            self._skip_blank()
            if self.at >= self.stop:
                break
            if len(ops) == MAX_FILES:
                raise PatchSyntaxError(f"the patch changes more than {MAX_FILES} files: split it into several")
            ops.append(self._op())
        if not ops:
            raise PatchSyntaxError("the patch has no file operations: nothing to apply")
        return ops

    def _skip_blank(self) -> None:
        while self.at < self.stop and not self.lines[self.at].strip():
            self.at += 1

    def _path(self, marker: str) -> str:
        path = self.lines[self.at].strip()[len(marker) :].strip()
        if not path:
            raise PatchSyntaxError(f"patch line {self.at + 1}: a path must follow '{marker}'")
        if len(path) > MAX_PATH or "\x00" in path:
            raise PatchSyntaxError(f"patch line {self.at + 1}: the path is not a valid path")
        return path

    def _op(self) -> FileOp:
        header = self.lines[self.at].strip()
        number = self.at + 1
        if header.startswith(ADD):
            path = self._path(ADD)
            self.at += 1
            content: list[str] = []
            while self.at < self.stop and self.lines[self.at].startswith("+"):
                content.append(self.lines[self.at][1:] + "\n")
                self.at += 1
            self._expect_op_after("in an Add File every line of the new file starts with '+'")
            return FileOp("add", path, number, content="".join(content))
        if header.startswith(DELETE):
            path = self._path(DELETE)
            self.at += 1
            self._expect_op_after("a Delete File has no lines after it")
            return FileOp("delete", path, number)
        if header.startswith(UPDATE):
            path = self._path(UPDATE)
            self.at += 1
            move_to = None
            if self.at < self.stop and self.lines[self.at].strip().startswith(MOVE):
                move_to = self._path(MOVE)
                self.at += 1
            hunks = self._hunks(number)
            return FileOp("update", path, number, move_to=move_to, hunks=tuple(hunks))
        raise PatchSyntaxError(f"patch line {number}: {_EXPECTED_OP}")

    def _expect_op_after(self, hint: str) -> None:
        """After an Add or Delete: the next non-blank line must start another operation (or end the patch)."""
        self._skip_blank()  # blank lines between operations are fine
        if self.at < self.stop and not self.lines[self.at].strip().startswith("***"):
            raise PatchSyntaxError(f"patch line {self.at + 1}: {hint}; {_EXPECTED_OP}")

    def _hunks(self, header: int) -> list[Hunk]:
        hunks: list[Hunk] = []
        while True:
            self._skip_blank()
            if self.at >= self.stop or self.lines[self.at].lstrip().startswith("***"):
                break
            if len(hunks) == MAX_HUNKS:
                raise PatchSyntaxError(f"patch line {self.at + 1}: more than {MAX_HUNKS} hunks in one file: split it")
            hunks.append(self._hunk(first=not hunks))
        if not hunks:
            raise PatchSyntaxError(
                f"patch line {header}: the Update File has no hunks: add '@@' and its ' ', '-' and '+' lines"
            )
        return hunks

    def _hunk(self, *, first: bool) -> Hunk:
        start = self.at
        anchors: list[tuple[str, int]] = []
        seen_marker = False
        while self.at < self.stop and self.lines[self.at].lstrip().startswith("@@"):
            rest = self.lines[self.at].lstrip()[2:].strip()
            if rest and not _RANGE.fullmatch(rest):
                anchors.append((rest, self.at + 1))
            seen_marker = True
            self.at += 1
        if not seen_marker and not first:
            raise PatchSyntaxError(
                f"patch line {self.at + 1}: a hunk line starts with ' ' (context), '-' (removed) or '+' (added); "
                "a new hunk starts with '@@'"
            )
        body: list[HunkLine] = []
        end_of_file = False
        while self.at < self.stop:
            line = self.lines[self.at]
            if line.strip() == END_OF_FILE:
                end_of_file = True
                self.at += 1
                break
            if (body and line.startswith("@@")) or line.startswith("***"):
                break  # the next hunk, or the next operation (a line starting " " is context, whatever follows)
            if not line:
                body.append(HunkLine(" ", "", self.at + 1))
            elif line[0] in " -+":
                body.append(HunkLine(line[0], line[1:], self.at + 1))  # type: ignore[arg-type]
            else:
                raise PatchSyntaxError(
                    f"patch line {self.at + 1}: a hunk line starts with ' ' (context), '-' (removed) or '+' "
                    "(added); a context line keeps its leading space"
                )
            self.at += 1
        while body and body[-1].kind == " " and not body[-1].text and self._blank_before_next(body[-1].line):
            body.pop()  # blank lines between hunks or before the next operation are separators, not context
        if not body:
            raise PatchSyntaxError(f"patch line {start + 1}: the hunk has no lines: add its ' ', '-' and '+' lines")
        return Hunk(start + 1, tuple(anchors), tuple(body), end_of_file)

    def _blank_before_next(self, line: int) -> bool:
        """Whether the empty patch line ``line`` (1-based) is followed only by empty lines up to a marker."""
        return not self.lines[line - 1] and all(not self.lines[n] for n in range(line, self.at))
