"""Newline-delimited JSON-RPC over the process's stdin/stdout pipes, on the event loop itself.

The SDK's ``stdio_server`` reads each line and writes each answer through a worker thread (``anyio.wrap_file``):
two thread hops per request. This transport waits for the pipes with the event loop's own poller and reads and
writes them non-blocking, behind the same stream protocols ``Server.run`` takes (``ReadStream`` /
``WriteStream`` of ``SessionMessage``), so the SDK's dispatcher, runner and handlers are unchanged.

Framing, like the SDK: a message is one line; ``\\r\\n`` is accepted; partial writes are reassembled; a line is
bounded only by :data:`MAX_LINE` (the SDK has no bound). Unlike the SDK, a line that is not JSON gets a JSON-RPC
parse error (``-32700``, id ``null``) and JSON that is not a single JSON-RPC message gets ``-32600`` (id
``null``), instead of silence; neither echoes any of the input. An answer-shaped line that does not validate is
dropped as the SDK drops it (a pending request then times out). Invalid UTF-8 inside a string is replaced
(U+FFFD), as the SDK's text layer does.

While serving, fd 0 reads the null device and fd 1 writes to stderr, so a stray ``print`` or child process
cannot corrupt the wire (the SDK does the same); both are restored on exit. Only pipes and sockets are served
here: anything else (a regular file, a terminal) falls back to the SDK's transport.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import stat
from collections import deque
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Final

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import from_json

from rootbound.workspace.transport.deep_json import answer_too_deep, too_deep

__all__ = [
    "INVALID_REQUEST_LINE",
    "MAX_LINE",
    "PARSE_ERROR_LINE",
    "PipeReader",
    "PipeWriter",
    "encode",
    "pipe_streams",
    "servable",
]

logger = logging.getLogger("rootbound.serve.stdio")

MAX_LINE: Final = 256 * 1024 * 1024
"""Longest line accepted (write_file takes 16 MiB of content, up to 6x that once JSON-escaped)."""
READ_SIZE: Final = 256 * 1024
PARSE_ERROR_LINE: Final = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n'
INVALID_REQUEST_LINE: Final = (
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,'
    b'"message":"Invalid Request: not a single JSON-RPC request, notification or response"}}\n'
)
_TOO_LONG_LINE: Final = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: line too long"}}\n'
_DRAIN_TIMEOUT: Final = 10.0
"""How long the rest of a half-written frame may wait for the client to read, even when cancelled."""


_ADAPTER: Final = types.jsonrpc_message_adapter


def _json_invalid(error: ValidationError) -> bool:
    return any(item["type"] == "json_invalid" for item in error.errors(include_url=False, include_input=False))


def encode(item: SessionMessage) -> bytes:
    """The message as the SDK's transport writes it (``model_dump_json(by_alias=True, exclude_unset=True)``), as
    UTF-8 bytes straight from the model's serializer: a fifth of the cost for a small answer, no re-encoding of a
    large one."""
    message = item.message
    return type(message).__pydantic_serializer__.to_json(message, by_alias=True, exclude_unset=True)


def pollable(fd: int) -> bool:
    """A pipe or socket: the event loop can wait on it (a regular file or a terminal is left to the SDK)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class PipeWriter:
    """``WriteStream[SessionMessage]``: each message is serialised and written straight to the pipe.

    No writer task and no queue: a complete write (the usual case, the pipe has room) costs no await. When the
    pipe is full, the rest of the frame waits for it, shielded for up to :data:`_DRAIN_TIMEOUT` so a cancelled
    handler cannot leave half a frame; later senders queue behind it so frames never interleave.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._busy = False
        self._idle = anyio.Event()
        self._closed = False
        self._broken = False

    async def send(self, item: SessionMessage, /) -> None:
        await self.send_bytes(encode(item) + b"\n")

    async def send_bytes(self, data: bytes) -> None:
        """Write one whole frame (a line ending in ``\\n``)."""
        while self._busy:
            await self._idle.wait()
        if self._closed:
            raise anyio.ClosedResourceError
        if self._broken:
            raise anyio.BrokenResourceError
        written = self._write_some(data)
        if written == len(data):
            return
        self._busy = True
        try:
            with anyio.CancelScope(shield=True) as scope:
                scope.deadline = anyio.current_time() + _DRAIN_TIMEOUT
                view = memoryview(data)[written:]
                while view:
                    await anyio.wait_writable(self._fd)
                    view = view[self._write_some(view) :]
            if scope.cancelled_caught:
                self._broken = True  # the client stopped reading mid-frame: never append to a torn frame
                raise anyio.BrokenResourceError
        finally:
            self._busy = False
            self._idle.set()
            self._idle = anyio.Event()

    def _write_some(self, data: bytes | memoryview) -> int:
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError:  # EPIPE: the client is gone
            self._broken = True
            raise anyio.BrokenResourceError from None

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> PipeWriter:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        await self.aclose()


class PipeReader:
    """``ReadStream[SessionMessage | Exception]``: one parsed message per line of the pipe, until EOF.

    Reads in large chunks and splits them in place, so a long line costs O(length) and a chunk of many small
    messages costs one read. An unparseable line is answered through ``errors`` and skipped.
    """

    def __init__(self, fd: int, errors: PipeWriter) -> None:
        self._fd = fd
        self._errors = errors
        self._lines: deque[bytes] = deque()
        self._partial: list[bytes] = []
        self._partial_size = 0
        self._skipping = False  # inside a line past MAX_LINE: drop up to its newline
        self._eof = False
        self._closed = False

    def __aiter__(self) -> PipeReader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def receive(self) -> SessionMessage | Exception:
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            while self._lines:
                message = await self._parse(self._lines.popleft())
                if message is not None:
                    return message
            if self._eof:
                raise anyio.EndOfStream
            await self._fill()

    async def _fill(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, READ_SIZE)
                break
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
            except OSError as error:  # EIO and the like: the channel is unusable, treat as closed
                logger.debug("stdin read failed: %s", error)
                chunk = b""
                break
        if not chunk:
            self._eof = True
            if self._partial and not self._skipping:  # EOF mid-line: the rest is the last line, as in the SDK
                self._lines.append(b"".join(self._partial))
            self._partial.clear()
            return
        pieces = chunk.split(b"\n")
        tail = pieces.pop()
        if pieces:
            first = pieces[0]
            if self._skipping:
                self._skipping = False
                pieces = pieces[1:]
            elif self._partial:
                self._partial.append(first)
                pieces[0] = b"".join(self._partial)
            self._lines.extend(pieces)
            self._partial.clear()
            self._partial_size = 0
        if tail and not self._skipping:
            self._partial.append(tail)
            self._partial_size += len(tail)
            if self._partial_size > MAX_LINE:
                self._partial.clear()
                self._partial_size = 0
                self._skipping = True
                await self._answer(_TOO_LONG_LINE)

    async def _parse(self, line: bytes) -> SessionMessage | None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return None  # blank lines between frames are harmless (the SDK drops them too)
        try:
            return SessionMessage(_ADAPTER.validate_json(line, by_name=False))
        except ValidationError as error:
            failure = error
        data: bytes | str = line
        if _json_invalid(failure):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:  # invalid UTF-8 inside a string: replaced, as the SDK's text layer does
                data = line.decode("utf-8", "replace")
                try:
                    return SessionMessage(_ADAPTER.validate_json(data, by_name=False))
                except ValidationError as error:
                    failure = error
            if _json_invalid(failure):
                if too_deep(data):  # issue 16 #12: the request's id when readable, not silence or a bare -32700
                    answer = answer_too_deep(data)
                    if answer is not None:
                        await self._answer(answer + b"\n")
                    return None
                await self._answer(PARSE_ERROR_LINE)
                return None
        document = from_json(data)
        if isinstance(document, dict) and "method" not in document and ("result" in document or "error" in document):
            logger.debug("dropped an answer that is not a valid JSON-RPC response")
        else:
            await self._answer(INVALID_REQUEST_LINE)
        return None

    async def _answer(self, line: bytes) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._errors.send_bytes(line)

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> PipeReader:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        await self.aclose()


def servable(stdin: int = 0, stdout: int = 1) -> bool:
    """Whether :func:`pipe_streams` can serve these descriptors: both pipes or sockets, and stdout not shared
    with stderr (``2>&1``), whose writes must stay blocking."""
    if not (pollable(stdin) and pollable(stdout)):
        return False
    try:
        out, err = os.fstat(stdout), os.fstat(2)
    except OSError:
        return True
    return (out.st_dev, out.st_ino) != (err.st_dev, err.st_ino)


def _claim(fd: int, diversion: int, restore: list[tuple[int, int, int]]) -> int:
    """A private, non-blocking, close-on-exec duplicate of ``fd`` for the wire; ``fd`` now names ``diversion``."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    flags = fcntl.fcntl(private, fcntl.F_GETFL)
    restore.append((fd, private, flags))
    fcntl.fcntl(private, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    os.dup2(diversion, fd)
    return private


@contextlib.asynccontextmanager
async def pipe_streams(stdin: int = 0, stdout: int = 1) -> AsyncIterator[tuple[PipeReader, PipeWriter]]:
    """Serve the wire on ``stdin``/``stdout`` (see :func:`servable`) for the block's duration."""
    restore: list[tuple[int, int, int]] = []  # (fd, private duplicate, flags to restore)
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            private_in = _claim(stdin, null, restore)
        finally:
            os.close(null)
        private_out = _claim(stdout, 2, restore)
        writer = PipeWriter(private_out)
        yield PipeReader(private_in, writer), writer
    finally:
        for fd, private, flags in reversed(restore):
            with contextlib.suppress(OSError):
                fcntl.fcntl(private, fcntl.F_SETFL, flags)  # the description is shared with the parent's view
            with contextlib.suppress(OSError):
                os.dup2(private, fd)
            with contextlib.suppress(OSError):
                os.close(private)
