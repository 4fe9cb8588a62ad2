"""200 sessions subscribing and closing on one ``rootbound serve --http`` (issue 49): afterwards the server has no
subscription watch thread, and its threads and fds are back to the baseline (``/proc``) within 10 s of the last
session's end, the issue's bound, counted with no call made meanwhile (what the sessions left must end by itself:
our worker threads end after 1 s idle; anyio's stayed 10 s and ended only on the pool's next use). Sessions run 20
at a time, each subscribing to a file and a directory (shared watches) and to a file of its own (a watch of its own)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from rootbound.core.uri import path_to_uri
from tests.helpers.greedy import counts, fds_of
from tests.helpers.serve_process import http_serve_process
from tests.workspace.resources.test_subscriptions_wire import watch_threads

SESSIONS = 200
AT_ONCE = 20
BOUND = 10.0  # the bound: threads, fds and watches back to the baseline within 10 s of the last close


@pytest.mark.timeout(900)
def test_200_sessions_subscribing_and_closing_leave_nothing_behind(tmp_path: Path) -> None:
    root = tmp_path.resolve() / "work"
    (root / "d").mkdir(parents=True)
    (root / "f.txt").write_text("x\n")
    (root / "a.txt").write_text("alpha\n")  # what settle_counts reads between its samples
    for n in range(AT_ONCE):
        (root / f"own{n}").mkdir()
        (root / f"own{n}" / "f.txt").write_text(f"{n}\n")
    with http_serve_process(["--insecure-no-auth", str(root)]) as (url, process):

        async def one(http: httpx2.AsyncClient, n: int) -> None:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                await client.subscribe_resource(path_to_uri(root / "f.txt"))
                await client.subscribe_resource(path_to_uri(root / "d"))
                await client.subscribe_resource(path_to_uri(root / f"own{n % AT_ONCE}" / "f.txt"))
                await client.read_resource(path_to_uri(root / "f.txt"))

        async def main() -> None:
            async with httpx2.AsyncClient(timeout=60, limits=httpx2.Limits(max_connections=200)) as http:
                async with Client(streamable_http_client(url, http_client=http), mode="legacy") as warm:
                    await warm.list_resources()  # the server's own threads and fds, once warm
                    await warm.subscribe_resource(path_to_uri(root / "f.txt"))  # the watch machinery imported
                    await warm.unsubscribe_resource(path_to_uri(root / "f.txt"))
                await anyio.sleep(2.0)  # the warm-up's worker threads idle past 1 s: ended, not in the baseline
                base = max(counts(process.pid) for _ in range(3))
                before = fds_of(process.pid)
                for start in range(0, SESSIONS, AT_ONCE):
                    async with anyio.create_task_group() as tasks:
                        for n in range(start, start + AT_ONCE):
                            tasks.start_soon(one, http, n)
            began = time.monotonic()  # every session has ended (its DELETE answered): nothing more is asked
            after, back = counts(process.pid), 0.0

            def behind() -> bool:
                return after[0] > base[0] or after[1] > base[1] or watch_threads(process.pid) > 0

            while behind() and (back := time.monotonic() - began) < BOUND:
                await anyio.sleep(0.1)  # no call meanwhile: whatever the sessions left must end by itself
                after = counts(process.pid)
            print(f"\n200 sessions: threads, fds {base} -> {after} after {back:.1f} s (bound {BOUND:g} s)")
            assert watch_threads(process.pid) == 0
            assert after[0] <= base[0] and after[1] <= base[1], (
                after,
                base,
                sorted(set(fds_of(process.pid)) - set(before)),
            )

        anyio.run(main)
