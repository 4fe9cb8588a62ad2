"""The memory of answers in flight (issue 24 #4): a byte budget across sessions, and one answer per HTTP message.

``bench/answer_memory.py`` measures the RSS; here: the budget refuses cleanly, the HTTP app counts what it is
still sending, and over real Streamable HTTP the SDK's client receives the largest media answer allowed while a
larger file gets the media limit in words instead of an answer the client cannot read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from rootbound import Boundary, Root
from rootbound.mcp import RootsProvider
from rootbound.search.rooted_fs import RootedFS
from rootbound.workspace.limits.answer_budget import (
    ANSWER_COPIES,
    HTTP_MAX_MEDIA,
    AnswerBudget,
    AnswerMeter,
    AnswersFull,
    base64_size,
    too_big,
)
from rootbound.workspace.tools import call_tool
from rootbound.workspace.tools.calls import Limits, Media, ToolOutput
from tests.helpers.serve_process import serve, text_of

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 17


def _image(path: Path, size: int) -> Path:
    path.write_bytes(PNG + b"\x01" * (size - len(PNG)))
    return path


def test_the_budget_refuses_cleanly_when_full_and_gives_back_what_a_call_held() -> None:
    budget = AnswerBudget(capacity=10 * 1024 * 1024)
    first, second = budget.ledger(), budget.ledger()
    first.reserve(2 * 1024 * 1024)
    assert budget.in_flight == ANSWER_COPIES * 2 * 1024 * 1024
    with pytest.raises(AnswersFull) as refused:
        second.reserve(1024 * 1024)
    assert str(refused.value) == (
        "busy: the server is already sending 10 MiB of answers, its limit; retry later, or read less at once "
        "(a smaller length or file)"
    )
    assert budget.in_flight == ANSWER_COPIES * 2 * 1024 * 1024  # a refusal holds nothing
    small = budget.ledger()
    small.reserve(1024)  # small answers are not counted: many sessions of them stay cheap
    first.release()
    first.release()  # idempotent
    assert budget.in_flight == 0
    second.reserve(1024 * 1024)
    second.release()
    assert budget.in_flight == 0


def test_read_media_file_is_refused_before_reading_when_the_budget_is_spent(tmp_path: Path) -> None:
    base = tmp_path.resolve()
    _image(base / "a.png", 600_000)
    budget = AnswerBudget(capacity=4 * 1024 * 1024)
    busy = budget.ledger()
    busy.reserve(800_000)  # another call's answer
    fs = RootedFS(Boundary([base]))
    ledger = budget.ledger()
    with pytest.raises(AnswersFull, match="retry later"):
        call_tool("read_media_file", fs, {"path": str(base / "a.png")}, Limits(), {"answers": ledger})
    busy.release()
    output = call_tool("read_media_file", fs, {"path": str(base / "a.png")}, Limits(), {"answers": ledger})
    assert output.text == "PNG image, 600000 bytes, image/png"
    assert budget.in_flight == ANSWER_COPIES * base64_size(600_000)  # held until the server hands the answer on
    ledger.release()
    assert budget.in_flight == 0


@pytest.mark.anyio
async def test_the_http_app_counts_a_large_body_until_its_response_is_complete() -> None:
    budget = AnswerBudget(capacity=1 << 30)
    body = b"x" * (256 * 1024)
    sent, finish = anyio.Event(), anyio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body, "more_body": True})
        sent.set()
        await finish.wait()  # a client that does not read: the response never completes
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        return None

    meter = AnswerMeter(app, budget)
    async with anyio.create_task_group() as tg:
        tg.start_soon(meter, {"type": "http"}, receive, send)
        await sent.wait()
        assert budget.in_flight == ANSWER_COPIES * len(body)
        finish.set()
    assert budget.in_flight == 0


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_over_http_the_largest_media_answer_reaches_the_sdk_client_and_a_larger_file_is_refused_in_words(
    tmp_path: Path,
) -> None:
    base = tmp_path.resolve()
    fits = _image(base / "fits.png", HTTP_MAX_MEDIA)
    big = _image(base / "big.png", 2 * 1024 * 1024)
    provider = RootsProvider([Root.from_path(base)])
    async with serve("http", [str(base)], mode="legacy", provider=provider) as client:
        result = await client.call_tool("read_media_file", {"path": str(fits)})
        refused = await text_of(client, "read_media_file", path=str(big))
    assert not result.is_error
    image = result.content[1]
    assert getattr(image, "mime_type", None) == "image/png" and len(getattr(image, "data", "")) == base64_size(
        HTTP_MAX_MEDIA
    )
    over = f"PNG image of {2 * 1024 * 1024} bytes is over the {HTTP_MAX_MEDIA}-byte media limit"
    assert refused == (True, f"{over}; no tool returns it (stat describes the file)")


def test_an_answer_is_measured_as_json_and_refused_in_words_when_over_the_limit() -> None:
    assert too_big(ToolOutput("x" * 100), 1000) is None
    quoted = ToolOutput('"' * 600)  # 600 characters, 1,200 bytes once JSON-escaped
    assert too_big(quoted, 1000) == (
        "the answer is 1202 bytes, over the 1000 bytes one message to this client may hold; ask for less at once "
        "(a smaller length, max_entries or head, or a narrower path)"
    )
    media = ToolOutput("PNG image", None, (Media("image", "image/png", "A" * 990),))
    assert too_big(media, 1000) is not None and too_big(media, 990 + len('"PNG image"')) is None


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_over_http_a_read_of_a_mebibyte_is_cut_to_the_answer_s_size(tmp_path: Path) -> None:
    """``read_file`` of 1 MiB of text (``--max-read`` allows it) would not fit in one SSE event to the SDK's
    client; since the answer's size (issue 50) bounds every read, it is answered, cut, with where to read on (the
    message bound, :func:`too_big`, stays the net for what could still pass it)."""
    base = tmp_path.resolve()
    (base / "big.txt").write_text(("a" * 99 + "\n") * 10_486)
    provider = RootsProvider([Root.from_path(base)])
    async with serve("http", [str(base)], mode="legacy", provider=provider) as client:
        cut = await text_of(client, "read_file", path=str(base / "big.txt"), length=1024 * 1024)
    assert not cut[0] and cut[1].startswith("a" * 99 + "\n") and len(cut[1]) <= 64 * 1024
    assert cut[1].endswith("[truncated: bytes 0-65280 of 1048600; read on with offset=65280]"), cut[1][-200:]
