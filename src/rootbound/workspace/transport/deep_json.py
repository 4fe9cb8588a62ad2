"""Answering a JSON-RPC message nested too deeply to parse, instead of dropping it.

The SDK parses every frame with ``pydantic_core`` (recursion limit ~200 levels): a request whose
``inputResponses`` (or any value) nests deeper fails to parse at all. The SDK's stdio reader then drops the line
and the client hangs until its own timeout. JSON-RPC wants an answer: the request's ``id`` when it can still be
read, otherwise a parse error with ``id: null``.

Reading the ``id`` of a document we refuse to parse is done by a flat tokenizer (no recursion, linear time): it
tracks only the bracket depth and picks ``"id"`` and ``"method"`` at the top level. Nothing of the input is echoed
except a well-formed ``id`` (a string or an integer), which JSON-RPC requires us to echo.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter
from pydantic import ValidationError
from pydantic_core import from_json
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["TOO_DEEP_MESSAGE", "AnsweringTooDeep", "DepthGuard", "answer_too_deep", "readable_id", "too_deep"]

TOO_DEEP_MESSAGE: Final = "Invalid params: nested too deeply"
_TOKEN: Final = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s"{}\[\]:,]+|\s+', re.DOTALL)
_MAX_ID_LENGTH: Final = 256
"""An id longer than this is not echoed (JSON-RPC sets no limit; a client needing more is not a real client)."""


def too_deep(data: bytes | str) -> bool:
    """Whether ``data`` is JSON the SDK's parser would refuse for its nesting alone (nothing else is judged)."""
    try:
        from_json(data)
    except ValueError as error:
        return "recursion limit exceeded" in str(error)
    return False


class _Shape:
    def __init__(self) -> None:
        self.id: int | str | None = None
        self.has_id = False
        self.method = False
        self.answer = False  # a top-level "result" or "error": a response, never to be answered


def _scan(data: bytes) -> _Shape | None:
    """The top-level keys of a JSON object, or None when ``data`` is not a single object."""
    shape = _Shape()
    depth = 0
    key: bytes | None = None
    expect_key = False
    after_colon = False
    closed = False
    for match in _TOKEN.finditer(data):
        token = match.group()
        if token[:1].isspace():
            continue
        if closed:
            return None  # something after the top-level object
        first = token[:1]
        if first in b"{[":
            if depth == 0 and first != b"{":
                return None
            if depth == 1 and after_colon and key is not None:
                _note(shape, key, token)  # a container value: an id that cannot be echoed
            depth += 1
            expect_key = depth == 1
            after_colon = False
            continue
        if first in b"}]":
            depth -= 1
            if depth < 0:
                return None
            closed = depth == 0
            continue
        if depth == 0:
            return None
        if depth != 1:
            continue
        if token == b",":
            expect_key, after_colon, key = True, False, None
        elif token == b":":
            after_colon = True
        elif expect_key:
            key, expect_key = token, False
        elif after_colon and key is not None:
            _note(shape, key, token)
            after_colon = False
    return shape if closed else None


def _note(shape: _Shape, key: bytes, value: bytes) -> None:
    if key == b'"method"':
        shape.method = True
    elif key in (b'"result"', b'"error"'):
        shape.answer = True
    elif key == b'"id"':
        shape.has_id = True
        shape.id = None
        if len(value) > _MAX_ID_LENGTH:
            return
        try:
            parsed = json.loads(value)
        except ValueError:
            return
        if isinstance(parsed, str) or (isinstance(parsed, int) and not isinstance(parsed, bool)):
            shape.id = parsed


def readable_id(data: bytes | str) -> int | str | None:
    """The top-level ``id`` of a request-shaped document, when it is a plain string or integer."""
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    shape = _scan(raw)
    return shape.id if shape is not None and shape.method else None


def answer_too_deep(data: bytes | str) -> bytes | None:
    """The JSON-RPC error object (no newline) answering ``data``, or None when it must not be answered.

    A request whose id is readable gets ``-32602`` with that id; anything else that is not a response gets
    ``-32700`` with ``id: null``; a response (``result``/``error`` without ``method``) is not answered.
    """
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    shape = _scan(raw)
    if shape is not None and shape.answer and not shape.method:
        return None
    if shape is not None and shape.method and shape.id is not None:
        error = {"code": -32602, "message": TOO_DEEP_MESSAGE}
        return json.dumps({"jsonrpc": "2.0", "id": shape.id, "error": error}, separators=(",", ":")).encode()
    if shape is not None and shape.method and not shape.has_id:
        return None  # a notification: JSON-RPC answers none
    error = {"code": -32700, "message": "Parse error"}
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": error}, separators=(",", ":")).encode()


class DepthGuard:
    """ASGI middleware: a POST body nested too deeply is answered here (HTTP 400, the request's id when
    readable); every other request reaches ``app`` with its body replayed unchanged. Bodies past ``max_body`` are
    passed on unread for the SDK to refuse (413). A class, not a function, so Starlette routes it as ASGI."""

    def __init__(self, app: ASGIApp, *, max_body: int) -> None:
        self._app = app
        self._max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app, max_body = self._app, self._max_body
        if scope["type"] != "http" or scope.get("method") != "POST":
            await app(scope, receive, send)
            return
        buffered: list[Message] = []
        size = 0
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if not message.get("more_body") or size > max_body:
                break
        complete = buffered[-1]["type"] == "http.request" and not buffered[-1].get("more_body")
        if complete and size <= max_body:
            body = b"".join(m.get("body", b"") for m in buffered)
            answer = answer_too_deep(body) if too_deep(body) else None
            if answer is not None:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 400,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(answer))],
                    }
                )
                await send({"type": "http.response.body", "body": answer})
                return

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        await app(scope, replay, send)


def _too_deep_input(item: object) -> str | None:
    """The raw line behind a parse failure the SDK's stdio reader passed on, when nesting alone caused it."""
    if not isinstance(item, ValidationError):
        return None
    for error in item.errors(include_url=False):
        if error["type"] == "json_invalid" and "recursion limit exceeded" in str(error.get("ctx", {}).get("error")):
            raw = error.get("input")
            return raw if isinstance(raw, str) else None
    return None


class AnsweringTooDeep:
    """A ``ReadStream`` over the SDK's stdio reader that answers too-deep lines instead of passing on the
    exception the server loop would only log: the answer goes out through the same write stream as every
    other message, so frames never interleave."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            raw = _too_deep_input(item)
            if raw is None:
                return item
            answer = answer_too_deep(raw)
            if answer is not None:
                message = jsonrpc_message_adapter.validate_json(answer)
                await self._write.send(SessionMessage(message))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> AnsweringTooDeep:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringTooDeep:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
