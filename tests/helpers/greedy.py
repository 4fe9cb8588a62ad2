"""A victim and a greedy attacker on one real ``rootbound serve --http`` (issue 48): sessions, counts, settling.

Every client here is its own ``httpx2.AsyncClient`` (its own connections, so its own peer port) and its own MCP
session. Counts are the server process's, from ``/proc/PID``: all its threads, and its open fds.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from rootbound.mcp import RootsProvider
from tests.helpers.serve_process import text_of

__all__ = ["answered", "baseline_counts", "counts", "fds_of", "session", "settle_counts"]

SETTLE = 90.0  # seconds counts may take to come back on a loaded machine (an idle worker thread ends after 1 s)


def fds_of(pid: int) -> list[str]:
    """What the open fds of ``pid`` are (for a failure's message)."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            out.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return sorted(out)


def counts(pid: int) -> tuple[int, int]:
    """All threads and open fds of process ``pid`` now."""
    return len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd"))


@contextlib.asynccontextmanager
async def session(
    url: str, roots: list[Path], *, mode: str = "legacy", headers: Mapping[str, str] | None = None
) -> AsyncIterator[Client]:
    """One client of its own (connections, session) with ``roots``."""
    provider = RootsProvider(roots)
    async with (
        httpx2.AsyncClient(
            timeout=httpx2.Timeout(60, read=600), headers=dict(headers or {}), limits=httpx2.Limits(max_connections=200)
        ) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, **provider.client_kwargs()) as client,
    ):
        yield client


async def answered(client: Client, tool: str, **arguments: Any) -> str:
    """The call's text; fails the test when the call is refused (busy, deadline, any tool error)."""
    failed, text = await text_of(client, tool, **arguments)
    assert not failed, text
    return text


async def settle_counts(pid: int, url: str, root: Path, baseline: tuple[int, int]) -> tuple[int, int]:
    """The server's counts once both are at most ``baseline`` (a call each second lets anyio prune its idle
    workers, which it does only on its next use), or the last counts after :data:`SETTLE` s."""
    end = time.monotonic() + SETTLE
    now = counts(pid)
    while time.monotonic() < end and (now[0] > baseline[0] or now[1] > baseline[1]):
        async with session(url, [root]) as client:
            await answered(client, "list_roots")
        await anyio.sleep(1.0)
        now = counts(pid)
    return now


async def baseline_counts(pid: int, url: str, *roots: Path, write: bool = False) -> tuple[int, int]:
    """The counts after a warm-up call in each era on each root (imports, pools, and the 2026-07-28 snapshots the
    server keeps by design; with ``write``, a write too: a held snapshot keeps its write ruleset), the highest of
    a few samples."""
    for root in roots:
        for mode in ("legacy", "2026-07-28"):
            async with session(url, [root], mode=mode) as client:
                await answered(client, "list_roots")
                await answered(client, "read_file", path=str(root / "a.txt"))
                if write:
                    await answered(client, "write_file", path=str(root / "warm.txt"), content="warm\n")
    await anyio.sleep(0.5)
    samples = [counts(pid)]
    for _ in range(3):
        await anyio.sleep(0.2)
        samples.append(counts(pid))
    return max(s[0] for s in samples), max(s[1] for s in samples)
