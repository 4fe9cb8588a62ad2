"""``RootsService.snapshot``, ``refresh`` and ``on_change`` in both eras, over a real stdio subprocess
(``changes_server.py``) with the real SDK client and a counting ``RootsProvider``."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from rootbound import RootSet
from rootbound.mcp import RootsProvider

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).parent / "changes_server.py"
DEBOUNCE = 0.1


class CountingRoots:
    """The client's roots, behind a provider whose handler counts every roots answer it gives."""

    def __init__(self, *uris: str) -> None:
        self.uris = list(uris)
        self.answers = 0
        self.delay = 0.0
        self.provider = RootsProvider(handler=self.answer, notify=False)

    async def answer(self, context: ClientRequestContext) -> RootSet:
        self.answers += 1
        if self.delay:
            await anyio.sleep(self.delay)
        return RootSet.of(self.uris)


@contextlib.asynccontextmanager
async def connect(roots: CountingRoots, mode: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER), str(DEBOUNCE)])
    with anyio.fail_after(60):
        async with Client(params, mode=mode, **roots.provider.client_kwargs()) as client:
            yield client


async def call(client: Client, tool: str) -> Any:
    result = await client.call_tool(tool, {})
    content = result.content[0]
    assert isinstance(content, types.TextContent), result
    assert not result.is_error, content.text
    return json.loads(content.text)


async def list_changed_burst(client: Client, count: int) -> None:
    for _ in range(count):
        await client.session.send_notification(types.RootsListChangedNotification())


async def wait_for_answers(roots: CountingRoots, count: int) -> None:
    """Wait until the client has answered ``count`` roots requests, then one more debounce window."""
    while roots.answers < count:
        await anyio.sleep(0.01)
    await anyio.sleep(DEBOUNCE * 3)


# --------------------------------------------------------------------------------------------- handshake era


async def test_handshake_snapshot_is_none_before_the_first_fetch_and_never_fetches() -> None:
    roots = CountingRoots("file:///srv/a")
    async with connect(roots, "legacy") as client:
        assert await call(client, "snapshot") is None
        assert roots.answers == 0  # a snapshot never asks
        assert await call(client, "roots") == ["file:///srv/a"]
        assert await call(client, "snapshot") == ["file:///srv/a"]
        assert roots.answers == 1


async def test_handshake_refresh_fetches_even_if_cached_and_updates_the_cache() -> None:
    roots = CountingRoots("file:///srv/a")
    async with connect(roots, "legacy") as client:
        assert await call(client, "roots") == ["file:///srv/a"]
        roots.uris = ["file:///srv/b"]  # changed without a notification: the cache cannot know
        assert await call(client, "roots") == ["file:///srv/a"]
        assert await call(client, "refresh") == ["file:///srv/b"]
        assert roots.answers == 2
        assert await call(client, "snapshot") == ["file:///srv/b"]
        assert await call(client, "roots") == ["file:///srv/b"]
        assert roots.answers == 2
        assert await call(client, "changes") == [
            {
                "old": ["file:///srv/a"],
                "new": ["file:///srv/b"],
                "added": ["file:///srv/b"],
                "removed": ["file:///srv/a"],
            }
        ]


async def test_handshake_concurrent_refreshes_share_one_flight() -> None:
    roots = CountingRoots("file:///srv/a")
    async with connect(roots, "legacy") as client:
        await call(client, "roots")
        roots.delay = 0.3
        results: list[Any] = []

        async def refresh() -> None:
            results.append(await call(client, "refresh"))

        async with anyio.create_task_group() as group:
            for _ in range(10):
                group.start_soon(refresh)
        assert results == [["file:///srv/a"]] * 10
        assert roots.answers == 2  # the first fetch, then one refresh for all ten callers


async def test_handshake_on_change_fires_once_for_a_burst_that_changes_the_set() -> None:
    roots = CountingRoots("file:///srv/a", "file:///srv/b")
    async with connect(roots, "legacy") as client:
        await call(client, "roots")
        roots.uris = ["file:///srv/b", "file:///srv/c"]
        await list_changed_burst(client, 20)
        await wait_for_answers(roots, 2)
        assert roots.answers == 2  # one debounced refresh for the whole burst
        assert await call(client, "snapshot") == ["file:///srv/b", "file:///srv/c"]
        assert await call(client, "changes") == [
            {
                "old": ["file:///srv/a", "file:///srv/b"],
                "new": ["file:///srv/b", "file:///srv/c"],
                "added": ["file:///srv/c"],
                "removed": ["file:///srv/a"],
            }
        ]


async def test_handshake_on_change_stays_silent_when_the_set_is_unchanged() -> None:
    roots = CountingRoots("file:///srv/a", "file:///srv/b")
    async with connect(roots, "legacy") as client:
        await call(client, "roots")
        roots.uris = ["file:///srv/b", "file:///srv/a"]  # same set, other order
        await list_changed_burst(client, 20)
        await wait_for_answers(roots, 2)  # the refresh did happen...
        assert await call(client, "changes") == []  # ...and found nothing new
        assert await call(client, "refresh") == ["file:///srv/b", "file:///srv/a"]
        assert await call(client, "changes") == []


async def test_handshake_a_failing_callback_never_breaks_the_server() -> None:
    roots = CountingRoots("file:///srv/a")
    async with connect(roots, "legacy") as client:
        await call(client, "roots")
        await call(client, "break_callbacks")
        roots.uris = ["file:///srv/b"]
        assert await call(client, "refresh") == ["file:///srv/b"]  # the refresh still answers
        await list_changed_burst(client, 1)
        roots.uris = ["file:///srv/c"]
        await wait_for_answers(roots, 3)
        assert await call(client, "roots") == ["file:///srv/c"]  # the connection still serves
        changes = await call(client, "changes")  # the callback after the failing one still ran, each time
        assert [change["new"] for change in changes] == [["file:///srv/b"], ["file:///srv/c"]]


# ------------------------------------------------------------------------------------------------ 2026-07-28


async def test_2026_snapshot_is_what_this_request_was_given_and_never_asks() -> None:
    roots = CountingRoots("file:///srv/a")
    async with connect(roots, "2026-07-28") as client:
        assert await call(client, "snapshot") is None
        assert roots.answers == 0  # no input request was made for a snapshot
        # Round 1: nothing yet, roots() asks; round 2: the answer is in this request, so the snapshot sees it.
        assert await call(client, "snapshot_then_roots") == {"before": ["file:///srv/a"], "after": ["file:///srv/a"]}
        assert roots.answers == 1
        assert await call(client, "snapshot") is None  # nothing is kept across requests


async def test_2026_refresh_is_roots_and_on_change_never_fires() -> None:
    roots = CountingRoots("file:///srv/a")
    async with connect(roots, "2026-07-28") as client:
        assert await call(client, "refresh") == ["file:///srv/a"]
        roots.uris = ["file:///srv/b"]
        assert await call(client, "refresh") == ["file:///srv/b"]
        assert await call(client, "roots") == ["file:///srv/b"]
        assert roots.answers == 3  # every request asks: there is no cache in this era
        assert await call(client, "changes") == []
