"""Issue 12's regex goals, measured: catastrophic patterns against long lines, and a second session's latency
while a grep runs.

Run: ``.venv/bin/python bench/reading.py`` (about half a minute).

* catalogue: the ``grep`` tool (RE2) on lines of 100,000 ``a`` followed by ``!``, per pattern, next to Python's
  ``re`` on the same pattern and a 20-character line (the backtracking engine's time doubles per character; the
  tool's line is 5,000x longer). Target: every pattern under 1 s.
* sessions: ``rootbound serve --http`` as a subprocess; session B calls ``list_roots`` while idle, then while
  session A greps catastrophic patterns over 30 MB in a loop. Target: B's median latency not more than 2x idle.
"""

from __future__ import annotations

import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from rootbound import Boundary, RootedFS
from rootbound.mcp import RootsProvider
from rootbound.workspace.tools import Limits, run_tool

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.helpers.serve_process import http_serve

CATALOGUE = ["(a+)+$", "(a*)*$", "(a|aa)+$", "(a|a?)+$", "(.*a){12}$", "^(\\w+\\s?)*$", "(x+x+)+y", "([a-z]+)*$"]
TARGET_SECONDS = 1.0
TARGET_LATENCY_RATIO = 2.0


def catalogue(work: Path) -> bool:
    (work / "long.txt").write_bytes((b"a" * 100_000 + b"!\n") * 10)
    ok = True
    print(f"{'pattern':<16}{'grep tool (1 MB)':>18}{'python re, 20 chars':>22}  target")
    with Boundary([work]) as boundary:
        fs = RootedFS(boundary)
        for pattern in CATALOGUE:
            started = time.perf_counter()
            run_tool("grep", fs, {"pattern": pattern, "regex": True, "path": "long.txt"}, Limits())
            ours = time.perf_counter() - started
            compiled = re.compile(pattern)
            started = time.perf_counter()
            compiled.search("a" * 20 + "!")
            theirs = time.perf_counter() - started
            passed = ours < TARGET_SECONDS
            ok &= passed
            print(f"{pattern:<16}{ours:>17.3f}s{theirs:>21.3f}s  < {TARGET_SECONDS:g} s {'PASS' if passed else 'MISS'}")
    return ok


async def sessions(work: Path) -> bool:
    for i in range(300):
        (work / "tree" / f"f{i:03}.txt").write_bytes((b"a" * 20_000 + b"!\n") * 5)
    provider = RootsProvider([work / "tree"])
    with http_serve([str(work / "tree")]) as url:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy", **provider.client_kwargs()) as a,
            Client(streamable_http_client(url, http_client=http), mode="2026-07-28", **provider.client_kwargs()) as b,
        ):

            async def latencies(count: int) -> list[float]:
                out = []
                for _ in range(count):
                    started = time.perf_counter()
                    await b.call_tool("list_roots", {})
                    out.append(time.perf_counter() - started)
                return out

            await latencies(5)
            idle = await latencies(40)
            greps = 0
            busy: list[float] = []

            async def grep_loop() -> None:
                nonlocal greps
                while not busy:
                    for pattern in CATALOGUE[:3]:
                        await a.call_tool("grep", {"pattern": pattern, "regex": True})
                        greps += 1

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(grep_loop)
                await anyio.sleep(0.3)
                busy.extend(await latencies(40))
    ratio = statistics.median(busy) / statistics.median(idle)
    print(f"\nsession B list_roots over HTTP, 40 calls each (session A ran {greps} greps over 30 MB meanwhile)")
    print(f"  idle        median {statistics.median(idle) * 1000:7.1f} ms   max {max(idle) * 1000:7.1f} ms")
    print(f"  during grep median {statistics.median(busy) * 1000:7.1f} ms   max {max(busy) * 1000:7.1f} ms")
    passed = ratio <= TARGET_LATENCY_RATIO
    print(f"  ratio {ratio:.2f}x  <= {TARGET_LATENCY_RATIO:g}x {'PASS' if passed else 'MISS'}")
    return passed


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="rootbound-bench-reading-") as tmp:
        work = Path(tmp).resolve()
        (work / "tree").mkdir()
        ok = catalogue(work)
        ok &= anyio.run(sessions, work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
