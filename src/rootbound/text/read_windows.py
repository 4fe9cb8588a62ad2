"""Parts of a text file by bytes or by lines, cut only between UTF-8 characters, with where to read on.

Why: a model reads a large file in windows. A window that starts or ends inside a multi-byte character decodes to
``�`` and the next window starts with garbage, and a window with no "read on from here" invites the model to guess.
Everything here works on a ``pread``-like callable over an already opened file (the caller owns confinement), so
a window costs one or two reads whatever the file's size, except counting lines up to a far start line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = [
    "BINARY_SNIFF",
    "CHUNK",
    "Pread",
    "TextSlice",
    "looks_binary",
    "read_byte_range",
    "read_head",
    "read_lines",
    "read_tail",
    "utf8_end",
    "utf8_start",
]

Pread = Callable[[int, int], bytes]
"""``pread(offset, length)``: up to ``length`` bytes at ``offset`` (fewer only at end of file)."""

CHUNK: Final = 256 * 1024
BINARY_SNIFF: Final = 8192


@dataclass(frozen=True)
class TextSlice:
    """A decoded window of a file: bytes ``[start, end)`` of ``size``; lines ``first_line..last_line`` if known.

    ``next_line``/``next_offset`` say where the following window starts when the file goes on after this one
    (``None`` at the end of the file or of the range asked for).
    """

    text: str
    start: int
    end: int
    size: int
    first_line: int | None = None
    last_line: int | None = None
    next_line: int | None = None
    next_offset: int | None = None

    def hint(self) -> str | None:
        """The continuation marker a model sees after a cut window, or ``None`` when nothing was cut."""
        if self.next_offset is None:
            return None
        where = f"bytes {self.start}-{self.end} of {self.size}"
        if self.next_line is not None:  # cut between lines (a cut inside one line is told in bytes only)
            if self.first_line is not None and self.last_line is not None and self.last_line >= self.first_line:
                where = f"lines {self.first_line}-{self.last_line}, {where}"
            return f"[truncated: {where}; read on with start_line={self.next_line}]"
        return f"[truncated: {where}; read on with offset={self.next_offset}]"


def looks_binary(head: bytes) -> bool:
    """A NUL in the first 8 KiB: what git and grep call binary."""
    return b"\x00" in head[:BINARY_SNIFF]


def utf8_start(data: bytes | bytearray, at: int = 0) -> int:
    """``at`` moved back to the first byte of the character it is inside (at most 3 bytes back)."""
    pos = at
    while pos > 0 and at - pos < 3 and pos < len(data) and 0x80 <= data[pos] < 0xC0:
        pos -= 1
    return pos if pos < len(data) and not 0x80 <= data[pos] < 0xC0 else at


def utf8_end(data: bytes | bytearray, at: int | None = None) -> int:
    """The largest cut ``<= at`` that does not split a character (``at`` itself if it ends a complete one)."""
    end = len(data) if at is None else min(at, len(data))
    if end >= len(data):
        return end if not _incomplete_tail(data, end) else _tail_start(data, end)
    if not 0x80 <= data[end] < 0xC0:
        return end  # the next byte starts a character: the cut is between two
    return _tail_start(data, end)


def _tail_start(data: bytes | bytearray, end: int) -> int:
    pos = end - 1
    while pos > 0 and end - pos < 4 and 0x80 <= data[pos] < 0xC0:
        pos -= 1
    return pos if pos >= 0 and data[pos] >= 0xC0 else end


def _incomplete_tail(data: bytes | bytearray, end: int) -> bool:
    """Whether the bytes before ``end`` (the end of the data read) stop inside a multi-byte character."""
    pos = end - 1
    while pos >= 0 and end - pos <= 4 and 0x80 <= data[pos] < 0xC0:
        pos -= 1
    if pos < 0 or data[pos] < 0xC0:
        return False
    lead = data[pos]
    need = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return end - pos < need


def _decode(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", "replace")


def _next_boundary(data: bytes | bytearray, at: int) -> int:
    """The first character start after ``at`` (or the end of the data)."""
    pos = at + 1
    while pos < len(data) and 0x80 <= data[pos] < 0xC0:
        pos += 1
    return pos


def read_byte_range(pread: Pread, size: int, offset: int, length: int) -> TextSlice:
    """About ``length`` bytes from ``offset``, cut between characters.

    A start inside a character moves back to its first byte; an end inside one moves back before it (or, when
    the window would be empty, forward past it).
    """
    offset = min(offset, size)
    base = offset - min(offset, 3)
    data = pread(base, offset - base + length + 3)
    begin = utf8_start(data, offset - base)
    stop = offset - base + length
    stop = utf8_end(data, stop) if stop < len(data) else len(data)
    if stop <= begin < len(data):
        stop = _next_boundary(data, begin)
    taken = data[begin:stop]
    end = base + stop
    return TextSlice(_decode(taken), base + begin, end, size, next_offset=end if end < size else None)


def _count_to_line(pread: Pread, size: int, line: int, check: Callable[[int], None] | None) -> tuple[int, int]:
    """``(byte offset where 1-based ``line`` starts, lines seen)``; the offset is ``size`` if the file is shorter."""
    if line <= 1:
        return 0, 1
    pos, current = 0, 1
    while pos < size:
        if check is not None:
            check(1)
        chunk = pread(pos, CHUNK)
        if not chunk:
            break
        newlines = chunk.count(b"\n")
        if current + newlines >= line:
            index = -1
            for _ in range(line - current):
                index = chunk.index(b"\n", index + 1)
            return pos + index + 1, line
        current += newlines
        pos += len(chunk)
    return size, current


def read_lines(
    pread: Pread,
    size: int,
    first: int,
    last: int | None,
    max_bytes: int,
    *,
    check: Callable[[int], None] | None = None,
) -> TextSlice:
    """Lines ``first..last`` (1-based, inclusive; ``last=None``: to the end), at most ``max_bytes`` of them.

    A cut falls after the last whole line that fits; a single line longer than ``max_bytes`` is cut between
    characters and continues by byte offset.
    """
    start, reached = _count_to_line(pread, size, first, check)
    if reached < first or start >= size:
        return TextSlice("", size, size, size, first_line=first, last_line=first - 1)
    data = pread(start, max_bytes + 1)
    wanted = len(data)
    if last is not None:
        index = -1
        for _ in range(last - first + 1):
            index = data.find(b"\n", index + 1)
            if index < 0:
                break
        if index >= 0:
            wanted = index + 1
    if wanted <= max_bytes:
        taken = data[:wanted]
    else:
        # After the last whole line that fits; a line longer than the window is cut between characters.
        cut = data.rfind(b"\n", 0, max_bytes)
        taken = data[: cut + 1] if cut >= 0 else data[: utf8_end(data, max_bytes)]
    end = start + len(taken)
    lines = taken.count(b"\n") + (0 if taken.endswith(b"\n") or not taken else 1)
    last_line = first + lines - 1
    asked_done = last is not None and last_line >= last and taken.endswith(b"\n")
    more = end < size and not asked_done
    whole_lines = taken.endswith(b"\n") or end >= size
    return TextSlice(
        _decode(taken),
        start,
        end,
        size,
        first_line=first,
        last_line=last_line,
        next_line=(last_line + 1) if more and whole_lines else None,
        next_offset=end if more else None,
    )


def read_head(pread: Pread, size: int, count: int, max_bytes: int) -> TextSlice:
    """The first ``count`` lines (at most ``max_bytes``)."""
    return read_lines(pread, size, 1, count, max_bytes)


def read_tail(
    pread: Pread, size: int, count: int, max_bytes: int, *, count_lines_up_to: int = 64 * 1024 * 1024
) -> TextSlice:
    """The last ``count`` lines (at most ``max_bytes``: the last whole lines that fit).

    Line numbers are given when the file is at most ``count_lines_up_to`` bytes (counting the lines before costs
    a read of them); beyond that the window is described by bytes only.
    """
    end = size
    data = b""
    pos = size
    while pos > 0 and len(data) <= max_bytes:
        step = min(CHUNK, pos)
        pos -= step
        data = pread(pos, step) + data
        # A trailing newline ends the last line; it does not start another one.
        body = data[:-1] if data.endswith(b"\n") else data
        if body.count(b"\n") >= count:
            break
    body_end = len(data) - 1 if data.endswith(b"\n") else len(data)
    index = body_end
    for _ in range(count):
        index = data.rfind(b"\n", 0, index)
        if index < 0:
            break
    begin = index + 1 if index >= 0 else 0
    if len(data) - begin > max_bytes:
        # Keep the last whole lines that fit; a last line longer than the window is cut between characters.
        cut = data.find(b"\n", len(data) - max_bytes - 1)
        if 0 <= cut < len(data) - 1:
            begin = cut + 1
        else:
            begin = len(data) - max_bytes
            if 0x80 <= data[begin] < 0xC0:
                begin = _next_boundary(data, begin)
    taken = data[begin:]
    start = pos + begin
    first_line = last_line = None
    if size <= count_lines_up_to:
        before = 0
        offset = 0
        while offset < start:
            chunk = pread(offset, min(CHUNK, start - offset))
            if not chunk:
                break
            before += chunk.count(b"\n")
            offset += len(chunk)
        first_line = before + 1
        last_line = before + taken.count(b"\n") + (0 if taken.endswith(b"\n") or not taken else 1)
    return TextSlice(
        _decode(taken),
        start,
        end,
        size,
        first_line=first_line,
        last_line=last_line,
        next_offset=None,
    )
