"""Parallel first calls and ``list_changed`` storms on one handshake-era HTTP session (issue 24 #3).

A real ``rootbound serve --http`` and the real SDK client whose roots handler is deliberately slow or noisy. The
assertions are about outcomes (what each call answered, which roots it saw), never durations: the
slow handler waits on an event the test sets, not on the clock.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from rootbound import Root
from rootbound.mcp import RootsProvider
from rootbound.workspace.tool_guard import INTERNAL_ERROR_TEXT
from tests.helpers.serve_process import serve, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    base = tmp_path.resolve()
    for name in ("old", "new"):
        (base / name).mkdir()
        (base / name / "notes.txt").write_text(f"{name} notes\n")
    return base


async def _parallel(client: Any, path: Path, calls: int) -> list[tuple[bool, str]]:
    answers: list[tuple[bool, str]] = []

    async def one() -> None:
        answers.append(await text_of(client, "read_file", path=str(path)))

    async with anyio.create_task_group() as tg:
        for _ in range(calls):
            tg.start_soon(one)
    return answers


async def test_a_client_that_does_not_answer_gets_a_clear_error_on_every_call(work: Path) -> None:
    """Every parallel first call waits for the one roots/list; when the client does not answer in time each says
    so in words (never "internal error"), and once the client answers the session works."""
    answer = anyio.Event()

    async def handler(ctx: object) -> list[Root]:
        await answer.wait()
        return [Root.from_path(work / "new")]

    provider = RootsProvider(handler=handler)
    async with serve("http", ["--roots-timeout", "0.5", str(work)], mode="legacy", provider=provider) as client:
        answers = await _parallel(client, work / "new" / "notes.txt", 12)
        answer.set()
        after = await text_of(client, "read_file", path=str(work / "new" / "notes.txt"))
    texts = Counter(text for _error, text in answers)
    assert all(error for error, _text in answers), texts
    assert all("did not answer roots/list within" in text for text in texts), texts
    assert INTERNAL_ERROR_TEXT not in texts
    assert after == (False, "new notes\n")


async def test_a_list_changed_storm_never_fails_a_read_nor_serves_the_old_roots(work: Path) -> None:
    """The client announces a change before every answer it gives (a storm: each fetch is overtaken by a
    notification, and each notification's debounced refresh brings another). Every call still succeeds, on the new
    roots only."""
    current = [work / "old"]
    storm = False
    client_ref: list[Any] = []

    async def handler(ctx: object) -> list[Root]:
        if storm:
            await client_ref[0].send_roots_list_changed()
        return [Root.from_path(path) for path in current]

    provider = RootsProvider(handler=handler, notify=False)
    async with serve("http", [str(work)], mode="legacy", provider=provider) as client:
        client_ref.append(client)
        assert await text_of(client, "read_file", path=str(work / "old" / "notes.txt")) == (False, "old notes\n")
        current[:] = [work / "new"]
        storm = True
        await client.send_roots_list_changed()
        calls = 8
        answers = await _parallel(client, work / "new" / "notes.txt", calls)
        storm = False
        old = await text_of(client, "read_file", path=str(work / "old" / "notes.txt"))
    assert answers == [(False, "new notes\n")] * calls
    assert old[0] and "outside" in old[1]  # the old root is gone: never served after the notification
