"""The memory of answers in flight: one byte budget across every session, and how big one HTTP answer may be.

A 4 MiB ``read_media_file`` answer is held several times over before it leaves the process (the bytes, their
base64 text, the JSON-RPC message, the SSE event, the socket's send buffer): ~17 MB of RSS per call in flight over
HTTP, so 64 sessions x 4 calls took 1.1 GB and a client that does not read its answers keeps them there (issue 24
#4). Two bounds:

* one process-wide :class:`AnswerBudget`: a tool that is about to build a large answer reserves
  :data:`ANSWER_COPIES` times its encoded size first, for the rest of its call, and the HTTP app
  (:class:`AnswerMeter`) counts every large response body as many times until its response is complete (a
  client that does not read keeps it in the process). Past :attr:`AnswerBudget.capacity` the tool answers
  "busy: retry later or read less" instead of allocating;
* one answer must fit in one message a client accepts: the SDK's Streamable HTTP client refuses an SSE event over
  ``DEFAULT_MAX_SSE_EVENT_SIZE`` (1 MiB, "SSE event exceeds"), so over HTTP media are capped at
  :data:`HTTP_MAX_MEDIA` bytes (their base64 and the message around it fit).
"""

from __future__ import annotations

import json
import threading
from typing import Final

from mcp.client.streamable_http import DEFAULT_MAX_SSE_EVENT_SIZE
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rootbound.workspace.tools.calls import ToolError, ToolOutput

__all__ = [
    "ANSWERS",
    "ANSWER_COPIES",
    "HTTP_MAX_ANSWER",
    "HTTP_MAX_MEDIA",
    "AnswerBudget",
    "AnswerMeter",
    "AnswersFull",
    "Ledger",
    "base64_size",
    "too_big",
]

ANSWER_COPIES: Final = 4
"""Bytes of RSS per byte of an answer's encoded form while it is in flight: ``bench/answer_memory.py`` measured
17-19 MB per 5.6 MB answer (the base64, the result, the JSON-RPC message and the SSE event all alive at once)."""
DEFAULT_CAPACITY: Final = 128 * 1024 * 1024
"""Bytes of answers that may be in flight at once, across every session."""
METERED: Final = 64 * 1024
"""Smaller reservations and response bodies are not counted: many sessions of small answers stay cheap."""
HTTP_MAX_MESSAGE: Final = DEFAULT_MAX_SSE_EVENT_SIZE
_ENVELOPE: Final = 16 * 1024
"""Room in one message for everything around the base64 data (JSON-RPC, the text block, the SSE framing)."""
HTTP_MAX_ANSWER: Final = HTTP_MAX_MESSAGE - _ENVELOPE
"""The content of one answer over HTTP: text (as JSON), base64 data and structured content together."""
HTTP_MAX_MEDIA: Final = (HTTP_MAX_ANSWER - 4096) // 4 * 3
"""The largest media file whose answer (its base64 and a line of text) fits in one message the SDK's HTTP client
accepts: 771,072 bytes."""


def base64_size(raw: int) -> int:
    return (raw + 2) // 3 * 4


def too_big(output: ToolOutput, limit: int) -> str | None:
    """What to answer instead when ``output`` would not fit in ``limit`` bytes of JSON (``None``: it fits).

    The text is measured exactly (JSON-escaped) only when it could be too big (at most 6 bytes a character);
    structured content, the text's data again as JSON, only when the text is long enough for it to matter."""
    text = output.text
    size = sum(len(media.data) for media in output.media)
    if size + 6 * len(text) + 2 <= limit:
        size += len(text) + 2  # even the upper bound fits: the exact size does not matter
    else:
        size += len(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if output.structured is not None and 16 * len(text) > limit:
        size += len(json.dumps(output.structured, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size <= limit:
        return None
    return (
        f"the answer is {size} bytes, over the {limit} bytes one message to this client may hold; ask for less at "
        "once (a smaller length, max_entries or head, or a narrower path)"
    )


class AnswersFull(ToolError):
    """The budget of answers in flight is spent: the call is refused before it allocates anything."""


class AnswerBudget:
    """Bytes of answers in flight, reserved by tools before they build them and counted while HTTP sends them."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self._lock = threading.Lock()
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def ledger(self) -> Ledger:
        """A call's own account: what it reserves is given back at once by :meth:`Ledger.release`."""
        return Ledger(self)

    def take(self, nbytes: int) -> bool:
        with self._lock:
            if self._in_flight + nbytes > self.capacity:
                return False
            self._in_flight += nbytes
            return True

    def add(self, nbytes: int) -> None:
        """Count bytes that already exist (a body being sent): never refused, only counted."""
        with self._lock:
            self._in_flight += nbytes

    def give(self, nbytes: int) -> None:
        with self._lock:
            self._in_flight -= nbytes


class Ledger:
    """What one call reserved; :meth:`release` when its answer has been handed on."""

    __slots__ = ("_budget", "_held")

    def __init__(self, budget: AnswerBudget) -> None:
        self._budget = budget
        self._held = 0

    def reserve(self, answer_bytes: int) -> None:
        """Reserve room for an answer of ``answer_bytes`` encoded bytes, or raise :class:`AnswersFull`."""
        need = ANSWER_COPIES * answer_bytes
        if need < METERED:
            return
        budget = self._budget
        if need > budget.capacity or not budget.take(need):
            mib = budget.capacity / (1024 * 1024)
            raise AnswersFull(
                f"busy: the server is already sending {mib:g} MiB of answers, its limit; retry later, or read "
                "less at once (a smaller length or file)"
            )
        self._held += need

    def release(self) -> None:
        held, self._held = self._held, 0
        if held:
            self._budget.give(held)


ANSWERS = AnswerBudget()
"""The process's budget: answers in flight across every session and transport."""


class AnswerMeter:
    """ASGI middleware: a large response body counts against ``budget`` until its response is complete.

    Not just while ``send`` runs: uvicorn's ``send`` puts the body in the transport's buffer and returns, and waits
    for that buffer to drain only before the *next* body, the one that ends the response. So a response counts
    until the app returns, which for a client that does not read is until it disconnects: unread answers keep
    the budget spent rather than the memory growing."""

    def __init__(self, app: ASGIApp, budget: AnswerBudget = ANSWERS) -> None:
        self._app = app
        self._budget = budget

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        budget = self._budget
        counted = 0

        async def metered(message: Message) -> None:
            nonlocal counted
            if message["type"] == "http.response.body":
                size = len(message.get("body", b""))
                if size >= METERED:
                    budget.add(ANSWER_COPIES * size)
                    counted += ANSWER_COPIES * size
            await send(message)

        try:
            await self._app(scope, receive, metered)
        finally:
            if counted:
                budget.give(counted)
