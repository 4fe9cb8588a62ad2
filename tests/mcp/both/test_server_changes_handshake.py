"""``RootsService.snapshot``, ``refresh`` and ``on_change`` in the handshake era on BOTH SDK majors, over a real
stdio subprocess (``server_harness.py``) serving the lowlevel flavour and the decorator flavour."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.mcp.both.server_harness import KINDS, ClientRoots, Conn, connect

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("kind", KINDS)]

DEBOUNCE = 0.1


def link(kind: str, roots: ClientRoots) -> Any:
    return connect("stdio", None, roots, kind=kind, stdio_args=["--debounce", str(DEBOUNCE)])


async def burst(client: Conn, count: int) -> None:
    for _ in range(count):
        await client.notify_changed()


async def wait_for_answers(roots: ClientRoots, count: int) -> None:
    """Wait until the client has answered ``count`` roots requests, then one more debounce window."""
    with anyio.fail_after(30):  # a hang guard
        while roots.calls < count:
            await anyio.sleep(0.01)
    await anyio.sleep(DEBOUNCE * 3)


async def test_snapshot_is_none_before_the_first_fetch_and_never_fetches(kind: str) -> None:
    roots = ClientRoots(["file:///srv/a"])
    async with link(kind, roots) as client:
        assert await client.json("snapshot") is None
        assert roots.calls == 0  # a snapshot never asks
        assert await client.text("roots") == "file:///srv/a"
        assert await client.json("snapshot") == ["file:///srv/a"]
        assert await client.json("snapshot_then_roots") == {"before": ["file:///srv/a"], "after": ["file:///srv/a"]}
        assert roots.calls == 1


async def test_refresh_fetches_even_if_cached_and_updates_the_cache(kind: str) -> None:
    roots = ClientRoots(["file:///srv/a"])
    async with link(kind, roots) as client:
        assert await client.text("roots") == "file:///srv/a"
        roots.uris = ["file:///srv/b"]  # changed without a notification: the cache cannot know
        assert await client.text("roots") == "file:///srv/a"
        assert await client.json("refresh") == ["file:///srv/b"]
        assert roots.calls == 2
        assert await client.json("snapshot") == ["file:///srv/b"]
        assert await client.text("roots") == "file:///srv/b"
        assert roots.calls == 2
        assert await client.json("changes") == [
            {
                "old": ["file:///srv/a"],
                "new": ["file:///srv/b"],
                "added": ["file:///srv/b"],
                "removed": ["file:///srv/a"],
            }
        ]


async def test_concurrent_refreshes_share_one_flight(kind: str) -> None:
    roots = ClientRoots(["file:///srv/a"])
    async with link(kind, roots) as client:
        await client.text("roots")
        roots.delay = 0.3
        results: list[Any] = []

        async def refresh() -> None:
            results.append(await client.json("refresh"))

        async with anyio.create_task_group() as group:
            for _ in range(10):
                group.start_soon(refresh)
        assert results == [["file:///srv/a"]] * 10
        assert roots.calls == 2  # the first fetch, then one refresh for all ten callers


async def test_on_change_fires_once_for_a_burst_that_changes_the_set(kind: str) -> None:
    roots = ClientRoots(["file:///srv/a", "file:///srv/b"])
    async with link(kind, roots) as client:
        await client.text("roots")
        roots.uris = ["file:///srv/b", "file:///srv/c"]
        await burst(client, 20)
        await wait_for_answers(roots, 2)
        assert roots.calls == 2  # one debounced refresh for the whole burst
        assert await client.json("snapshot") == ["file:///srv/b", "file:///srv/c"]
        assert await client.json("changes") == [
            {
                "old": ["file:///srv/a", "file:///srv/b"],
                "new": ["file:///srv/b", "file:///srv/c"],
                "added": ["file:///srv/c"],
                "removed": ["file:///srv/a"],
            }
        ]


async def test_on_change_stays_silent_when_the_set_is_unchanged(kind: str) -> None:
    roots = ClientRoots(["file:///srv/a", "file:///srv/b"])
    async with link(kind, roots) as client:
        await client.text("roots")
        roots.uris = ["file:///srv/b", "file:///srv/a"]  # same set, other order
        await burst(client, 20)
        await wait_for_answers(roots, 2)  # the refresh did happen...
        assert await client.json("changes") == []  # ...and found nothing new
        assert await client.json("refresh") == ["file:///srv/b", "file:///srv/a"]
        assert await client.json("changes") == []


async def test_a_failing_callback_never_breaks_the_server(kind: str) -> None:
    roots = ClientRoots(["file:///srv/a"])
    async with link(kind, roots) as client:
        await client.text("roots")
        assert await client.json("break_callbacks") is True
        roots.uris = ["file:///srv/b"]
        assert await client.json("refresh") == ["file:///srv/b"]  # the refresh still answers
        await burst(client, 1)
        roots.uris = ["file:///srv/c"]
        await wait_for_answers(roots, 3)
        assert await client.text("roots") == "file:///srv/c"  # the connection still serves
        changes = await client.json("changes")  # the callback after the failing one still ran, each time
        assert [change["new"] for change in changes] == [["file:///srv/b"], ["file:///srv/c"]]
