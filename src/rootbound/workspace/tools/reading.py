"""The reading tools of ``rootbound serve``: ``read_file`` (lines or bytes), ``read_multiple_files`` and
``read_media_file``, each on one file opened through the boundary's one way in (a named ``READ`` intent).

Why apart from the other tools: a read is about windows into one file (UTF-8-safe cuts, continuation hints, the
binary and media answers, see :mod:`read_windows` and :mod:`media_types`); the other tools are about walks.
"""

from __future__ import annotations

import base64
import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from rootbound.confine.regular_files import check_file
from rootbound.core.errors import RootsError, TooLarge
from rootbound.search.ignore_walk import READ_NAMED
from rootbound.search.rooted_fs import RootedFS
from rootbound.text.media_types import SNIFF_BYTES, sniff
from rootbound.text.read_windows import BINARY_SNIFF, TextSlice, looks_binary, read_byte_range, read_lines, read_tail
from rootbound.workspace.limits.answer_budget import Ledger, base64_size
from rootbound.workspace.tools.calls import (
    Budget,
    Cancelled,
    Limits,
    Media,
    ToolError,
    ToolOutput,
    budget_of,
    int_arg,
    path_arg,
)
from rootbound.workspace.tools.error_fixes import UNRESOLVED, explain
from rootbound.workspace.tools.render import escape

__all__ = ["opened", "read_file", "read_media_file", "read_multiple_files"]


@contextlib.contextmanager
def opened(fs: RootedFS, path: object) -> Iterator[tuple[int, os.stat_result, str]]:
    """A regular file opened for reading through the boundary's one way in: ``(fd, stat, canonical path)``."""
    with fs.boundary.open(path, READ_NAMED, resolver=fs.resolver) as handle:
        st = handle.fstat()
        check_file(st, fs.hardlinks, writing=False)
        yield handle.fd, st, str(handle.path)


HINT_ROOM: Final = 256
"""Characters kept in an answer for what follows a read's text: its continuation hint (under 200)."""
STUB_ROOM: Final = 100
"""Characters kept for each file ``read_multiple_files`` could not fit, to say so."""

PREAD_CHUNK: Final = 1024 * 1024
"""The most one ``pread`` asks for: a large window is read in pieces, not one allocation the size of the ask."""


def pread_all(fd: int) -> Callable[[int, int], bytes]:
    """``pread(offset, length)`` on ``fd``: up to ``length`` bytes, fewer only at the end of the file."""

    def pread(offset: int, length: int) -> bytes:
        chunks: list[bytes] = []
        got = 0
        while got < length:
            chunk = os.pread(fd, min(length - got, PREAD_CHUNK), offset + got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    return pread


def _binary_answer(head: bytes, size: int) -> str:
    kind = sniff(head[:SNIFF_BYTES] if len(head) > SNIFF_BYTES else head)
    label = kind.label if kind.kind != "text" else "binary data"
    mime = kind.mime if kind.kind != "text" else "application/octet-stream"
    hint = "; use read_media_file to see it" if kind.kind in ("image", "audio") else ""
    return f"[binary file: {size} bytes, {label} ({mime}){hint}]"


def _window_args(args: Mapping[str, Any]) -> dict[str, int | None]:
    window = {
        "start_line": int_arg(args, "start_line", minimum=1),
        "end_line": int_arg(args, "end_line", minimum=1),
        "head": int_arg(args, "head", minimum=1),
        "tail": int_arg(args, "tail", minimum=1),
        "offset": int_arg(args, "offset", minimum=0),
        "length": int_arg(args, "length", minimum=1),
    }
    ways = sum(
        (
            window["start_line"] is not None or window["end_line"] is not None,
            window["head"] is not None,
            window["tail"] is not None,
            window["offset"] is not None or window["length"] is not None,
        )
    )
    if ways > 1:
        raise ToolError("choose one of start_line/end_line, head, tail, or offset/length")
    start, end = window["start_line"], window["end_line"]
    if start is not None and end is not None and end < start:
        raise ToolError("end_line must be >= start_line")
    return window


def _read_window(
    fd: int, size: int, window: Mapping[str, int | None], budget_bytes: int, check: Callable[[int], None]
) -> TextSlice:
    pread = pread_all(fd)
    if window["offset"] is not None or window["length"] is not None:
        length = min(window["length"] or budget_bytes, budget_bytes)
        return read_byte_range(pread, size, window["offset"] or 0, length)
    if window["tail"] is not None:
        return read_tail(pread, size, window["tail"], budget_bytes)
    if window["head"] is not None:
        return read_lines(pread, size, 1, window["head"], budget_bytes, check=check)
    return read_lines(pread, size, window["start_line"] or 1, window["end_line"], budget_bytes, check=check)


def _render_slice(piece: TextSlice, window: Mapping[str, int | None]) -> str:
    text = piece.text
    hint = piece.hint()
    if window["tail"] is not None and piece.start > 0 and piece.first_line is not None:
        got = (piece.last_line or 0) - piece.first_line + 1
        if got < window["tail"]:
            hint = (
                f"[truncated: the last {got} lines that fit (lines {piece.first_line}-{piece.last_line}, bytes "
                f"{piece.start}-{piece.end} of {piece.size}); earlier lines: end_line={piece.first_line - 1}]"
            )
    elif window["tail"] is not None and piece.start > 0 and piece.first_line is None:
        hint = f"[bytes {piece.start}-{piece.end} of {piece.size}; earlier text: offset and length]"
    if (
        piece.first_line is not None
        and piece.text == ""
        and piece.size > 0
        and window["tail"] is None
        and window["start_line"] is not None
    ):
        return f"[the file has fewer than {piece.first_line} lines ({piece.size} bytes)]"
    if hint is None:
        return text
    return text + ("" if text.endswith("\n") or not text else "\n") + hint


def _read_text(
    fs: RootedFS, path: object, window: Mapping[str, int | None], room: int, budget: Budget
) -> tuple[str, str]:
    """``(canonical path, text to show)``: the window asked for, or the binary answer."""
    with opened(fs, path) as (fd, st, display):
        head = os.pread(fd, BINARY_SNIFF, 0)
        if looks_binary(head):
            return display, _binary_answer(head, st.st_size)
        return display, _render_slice(_read_window(fd, st.st_size, window, room, budget.check), window)


def read_file(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = path_arg(args)
    window = _window_args(args)
    explicit = window["length"] is not None
    room = min(limits.max_read, window["length"] or 0) if explicit else min(limits.default_read, limits.max_read)
    room = max(1, min(room, limits.max_output - HINT_ROOM))  # bytes >= characters: text and hint fit the answer
    answers = context.get("answers")
    if isinstance(answers, Ledger):
        answers.reserve(room)  # AnswersFull before anything is read (issue 24 #4)
    return ToolOutput(_read_text(fs, path, window, room, budget_of(context))[1])


def read_multiple_files(
    fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]
) -> ToolOutput:
    paths = args.get("paths")
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
        raise ToolError("argument 'paths' must be a non-empty list of non-empty strings")
    if len(paths) > limits.max_files:
        raise ToolError(f"at most {limits.max_files} paths per call: split them over several calls")
    budget = budget_of(context)
    room = limits.max_output  # characters: every part and the blank lines between them
    window = {key: None for key in ("start_line", "end_line", "head", "tail", "offset", "length")}
    parts: list[str] = []
    for index, path in enumerate(paths):
        stub = f"==> paths[{index}] <==\n[not read: the answer is full ({limits.max_output} characters); use read_file]"
        left = len(paths) - index  # this file and those after it share what room is left, evenly at most
        later = STUB_ROOM * (left - 1)  # kept to say "not read" for every file after this one
        per_file = min(limits.default_read, limits.max_read, (room - later) // left - HINT_ROOM)
        part = stub
        if per_file > 0:
            part = _read_part(fs, path, index, window, per_file, budget)
            if len(part) + 2 > room - later:  # its header (a long path) did not fit
                part = stub
        room -= len(part) + 2
        parts.append(part)
    return ToolOutput("\n\n".join(parts))


def _read_part(
    fs: RootedFS, path: str, index: int, window: Mapping[str, int | None], per_file: int, budget: Budget
) -> str:
    """One file of ``read_multiple_files``: its header and text, or its error inline."""
    try:
        display, body = _read_text(fs, path, window, per_file, budget)
    except ToolError as error:
        if isinstance(error, Cancelled) or "deadline" in str(error):
            raise
        return f"==> paths[{index}] <==\nerror: {error}"
    except RootsError as error:
        return f"==> paths[{index}] <==\nerror: {explain('read_file', error)}"
    except (OSError, ValueError, UnicodeError):
        return f"==> paths[{index}] <==\nerror: {UNRESOLVED}"
    return f"==> {escape(display)} <==\n{body}"


def read_media_file(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = path_arg(args)
    with opened(fs, path) as (fd, st, _display):
        head = os.pread(fd, max(SNIFF_BYTES, 4096), 0)
        kind = sniff(head)
        if kind.kind == "text":
            raise ToolError(f"not an image or audio file: text, {st.st_size} bytes; read it with read_file")
        if kind.kind not in ("image", "audio"):
            raise ToolError(
                f"not an image or audio file: {kind.label} ({kind.mime}), {st.st_size} bytes; read_media_file "
                "returns images and audio only, and no tool returns other binary content (stat describes the file)"
            )
        if st.st_size > limits.max_media:
            raise ToolError(
                f"{kind.label} of {st.st_size} bytes is over the {limits.max_media}-byte media limit; no tool "
                "returns it (stat describes the file)"
            )
        answers = context.get("answers")
        if isinstance(answers, Ledger):
            answers.reserve(base64_size(st.st_size))  # AnswersFull before anything is read (issue 24 #4)
        data = pread_all(fd)(0, limits.max_media + 1)
        if len(data) > limits.max_media:
            raise TooLarge()
    encoded = base64.b64encode(data).decode("ascii")
    return ToolOutput(f"{kind.label}, {len(data)} bytes, {kind.mime}", None, (Media(kind.kind, kind.mime, encoded),))
