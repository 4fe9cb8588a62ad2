"""Roots fetched when the client says they exist (issue 33 #5): at ``notifications/initialized``, never waited on.

Handshake era, real ``rootbound serve`` subprocesses over stdio and Streamable HTTP, real SDK clients. A client
that lists a root, then withdraws it before its first tool call, is refused on that call (it was served every DIR
when "listed" meant "seen at a tool call"); the first call finds the roots already cached; a warm-up the client
does not answer delays no call. (2026-07-28 has no roots request outside a call: nothing to warm.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from rootbound.mcp import RootsProvider
from tests.helpers.serve_process import serve, text_of

pytestmark = pytest.mark.anyio

TRANSPORTS = ["stdio", "http"]
TOKEN = "WARM-5c1d"


class Recording(RootsProvider):
    """A provider that counts the ``roots/list`` requests it answered, and can hold the first one back."""

    def __init__(self, *args: Any, hold_first: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.answered = 0
        self.asked = anyio.Event()
        self.hold_first = hold_first
        self.release = anyio.Event()

    async def list_roots(self, context: Any) -> types.ListRootsResult | types.ErrorData:
        first = not self.asked.is_set()
        self.asked.set()
        if first and self.hold_first:
            await self.release.wait()  # the warm-up goes unanswered until the test lets it go
        result = await super().list_roots(context)
        self.answered += 1
        return result


@pytest.fixture
def work(tmp_path: Path) -> Path:
    for name in ("app", "other"):
        (tmp_path / "ws" / name).mkdir(parents=True)
        (tmp_path / "ws" / name / "notes.md").write_text(f"{TOKEN}\n")
    return tmp_path / "ws"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_withdrawn_before_the_first_call_is_refused(work: Path, transport: str) -> None:
    provider = Recording([work / "app"])
    with anyio.fail_after(90):
        async with serve(transport, [str(work)], mode="legacy", provider=provider) as client:
            await provider.asked.wait()  # the server asked at initialized, before any call
            while provider.answered < 1:
                await anyio.sleep(0.01)
            await provider.set_roots([])
            await provider.flush()
            for name in ("other", "app"):
                error, text = await text_of(client, "read_file", path=str(work / name / "notes.md"))
                assert error and TOKEN not in text, (name, text)
                assert "withdrew" in text or "no roots" in text, text
            error, text = await text_of(client, "list_roots")
    assert not error
    assert "(the client withdrew every root (its roots list went from some roots to none))" in text


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_first_call_finds_the_roots_cached(work: Path, transport: str) -> None:
    provider = Recording([work / "app"])
    with anyio.fail_after(90):
        async with serve(transport, [str(work)], mode="legacy", provider=provider) as client:
            while provider.answered < 1:
                await anyio.sleep(0.01)
            calls = [text_of(client, "read_file", path=str(work / "app" / "notes.md")) for _ in range(8)]
            results: list[tuple[bool, str]] = []

            async def one(call: Any) -> None:
                results.append(await call)

            async with anyio.create_task_group() as tg:
                for call in calls:
                    tg.start_soon(one, call)
            answered = provider.answered
    assert results == [(False, f"{TOKEN}\n")] * 8
    assert answered == 1  # the warm-up's answer served every call: none asked again


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_unanswered_warm_up_delays_no_call(work: Path, transport: str) -> None:
    """The client sits on the warm-up's ``roots/list``; the first call asks on its own stream and is answered.
    The roots timeout is 60 s: a call that waited on the warm-up would run into the 45 s limit here."""
    provider = Recording([work / "app"], hold_first=True)
    with anyio.fail_after(45):
        async with serve(transport, [str(work), "--roots-timeout", "60"], mode="legacy", provider=provider) as client:
            await provider.asked.wait()
            assert await text_of(client, "read_file", path=str(work / "app" / "notes.md")) == (False, f"{TOKEN}\n")
            provider.release.set()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_lost_warm_up_is_asked_again(work: Path, transport: str) -> None:
    """The warm-up's first ``roots/list`` is never answered (as when the SDK drops a request sent before the client's
    GET stream is open): the server asks again, and the first calls find the roots cached."""
    provider = Recording([work / "app"], hold_first=True)  # the first ask is never released
    with anyio.fail_after(30):
        async with serve(transport, [str(work)], mode="legacy", provider=provider) as client:
            while provider.answered < 1:  # the roots timeout is 10 s: only asking again answers within 30
                await anyio.sleep(0.01)
            for _ in range(3):
                assert await text_of(client, "read_file", path=str(work / "app" / "notes.md")) == (False, f"{TOKEN}\n")
            assert provider.answered == 1  # the calls were served from the cache the second ask filled
            provider.release.set()
