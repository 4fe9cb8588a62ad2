"""Faults at RootsService on BOTH SDK majors: a client that never answers, a client that leaves while the server
awaits its ``roots/list``, and a ``list_changed`` storm written in one chunk to a real stdio pipe. The servers are
``tests/mcp/both/server_harness.py``'s (the lowlevel flavour of the installed major).

The 2.x-only faults (HTTP streams cut mid-round, abandoned 2026-07-28 rounds, ``rootbound serve``) stay in
``test_faults.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from rootbound.mcp import RootsService
from tests.fixtures.hostile_wire import REPO, StdioPeer, answer_line
from tests.mcp.both import server_harness
from tests.mcp.both.server_harness import answer_with, build, raw_connection

pytestmark = pytest.mark.anyio

GOOD = {"roots": [{"uri": "file:///work/ok"}]}


def text_of(response: dict[str, Any]) -> str:
    return str(response["result"]["content"][0]["text"])


async def test_a_silent_client_times_out_without_holding_up_other_connections() -> None:
    service = RootsService(warn_deprecated=False, timeout=1.0)
    server, _ = build("lowlevel", service)
    latencies: list[float] = []
    with anyio.fail_after(20):
        async with (
            raw_connection(server, answer=None) as silent,
            raw_connection(server, answer=answer_with(GOOD)) as other,
        ):
            stuck: dict[str, Any] = {}

            async def silent_call() -> None:
                stuck.update(await silent.call_tool("roots"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(silent_call)
                with anyio.fail_after(5):
                    while silent.roots_requests == 0:  # the silent client's roots/list is now pending
                        await anyio.sleep(0.01)
                for _ in range(50):
                    started = time.perf_counter()
                    assert text_of(await other.call_tool("roots")) == "file:///work/ok"
                    latencies.append(time.perf_counter() - started)
                assert not stuck  # the other connection finished while the silent one still waited
            text = "roots are unavailable (the client did not answer roots/list within 1 s)"
            assert stuck["result"] == {"content": [{"type": "text", "text": text}], "isError": True}
            assert silent.roots_requests == 1
            silent.answer = answer_with(GOOD)  # it may still recover: the failure cached nothing
            assert text_of(await silent.call_tool("roots")) == "file:///work/ok"
    print(f"\n[silent] other connection's calls: max {max(latencies) * 1000:.1f} ms")
    assert max(latencies) < 0.5, max(latencies)  # far below the 1 s the silent one waits: nobody queues behind it
    assert service.cache_size == 0


async def test_a_client_leaving_while_the_server_awaits_roots_list_ends_the_call_with_the_connection() -> None:
    service = RootsService(warn_deprecated=False, timeout=10.0)
    server, tools = build("lowlevel", service)
    with anyio.fail_after(10):
        async with raw_connection(server, answer=None) as peer:
            await peer.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "roots"}})
            while peer.roots_requests == 0:
                incoming = (await peer._read.receive()).message.model_dump(by_alias=True, exclude_none=True)
                peer.roots_requests += incoming.get("method") == "roots/list"
            assert service.cache_size == 1 and tools.failures == []
            left = time.perf_counter()
        # leaving the block closed the client's stream mid-round; the server loop ends with it
        while service.cache_size or not tools.failures:
            await anyio.sleep(0.01)
        ended_after = time.perf_counter() - left
    # The pending roots/list ended with the connection (closed), not with the 10 s timeout.
    assert tools.failures == ["roots are unavailable (connection closed)"]
    assert ended_after < 5.0
    async with raw_connection(server, answer=answer_with(GOOD)) as other:  # the server serves new connections
        assert text_of(await other.call_tool("roots")) == "file:///work/ok"


STORM = 3_000


@contextlib.asynccontextmanager
async def harness_peer(*args: str) -> AsyncIterator[StdioPeer]:
    """The harness's lowlevel server as a subprocess with raw pipes (``StdioPeer``); killed on exit."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    command = [sys.executable, server_harness.__file__, "lowlevel", *args]
    async with await anyio.open_process(command, cwd=REPO, env=env, stderr=None) as process:
        try:
            yield StdioPeer(process)
        finally:
            process.kill()


async def test_list_changed_storm_in_one_write_to_a_real_pipe_refreshes_at_most_twice() -> None:
    """3,000 notifications written to the pipe in one chunk (each costs ~1 ms of SDK dispatch): one or two
    trailing refreshes, and the next call is served from the refreshed cache."""
    good = json.dumps(GOOD).encode()

    async def answer(request: dict[str, Any]) -> bytes:
        return answer_line(request["id"], good)

    with anyio.fail_after(60):
        async with harness_peer("--debounce", "0.05") as peer:
            peer.on_request = answer  # the refresh's roots/list is answered inside whatever exchange sees it
            await peer.initialize()
            response = await peer.exchange("tools/call", {"name": "roots", "arguments": {}})
            assert text_of(response) == "file:///work/ok"
            notification = b'{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}\n'
            assert peer.process.stdin is not None
            await peer.process.stdin.send(notification * STORM)
            seen: list[int] = []
            while len(seen) < 4 or seen[-1] < 1 or len(set(seen[-4:])) > 1:  # settled: 0.3 s > the debounce
                seen.append((await peer.probe())["refreshes"])
                await anyio.sleep(0.1)
            response = await peer.exchange("tools/call", {"name": "roots", "arguments": {}})
            assert text_of(response) == "file:///work/ok"
            figures = await peer.probe()
    print(
        f"\n[storm] {STORM:,} list_changed in one write: refreshes {figures['refreshes']}, fetches {figures['fetches']}"
    )
    assert 1 <= figures["refreshes"] <= 2
    assert figures["fetches"] == 1 + figures["refreshes"]  # the call after the storm was served from the cache
