"""What a session holds dies with it (issue 33 #2): root fds, the write domain's ruleset and its threads.

Counted in the server process itself (``/proc/PID/task``, ``/proc/PID/fd``), over a real ``rootbound serve``:
handshake-era HTTP sessions opened and closed (DELETE) by the SDK client, sessions left open, a stdio client whose
roots change, and 2026-07-28 requests carrying ever new roots. Deadlines are generous (a loaded machine is slow);
the failure they catch is a count that never comes back (before the fix: minutes, until SDK timers expired).
``bench/session_lifetimes.py`` runs the same at 2,000 sessions and prints the figures.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from rootbound.mcp import RootsProvider
from rootbound.workspace.effective_roots import RECENT_SNAPSHOTS
from tests.helpers.serve_process import http_serve_process, proc_counts, serve, text_of

SESSIONS = 12
SETTLE = 30.0  # seconds a count may take to come back on a loaded machine (the write threads idle out in 2 s)


def settled(pid: int, threads: int, fds: int) -> tuple[int, int]:
    """The counts once both are at most the given ones, or the last counts after :data:`SETTLE` s."""
    end = time.monotonic() + SETTLE
    counts = proc_counts(pid)
    while time.monotonic() < end and (counts[0] > threads or counts[1] > fds):
        time.sleep(0.1)
        counts = proc_counts(pid)
    return counts


async def one_session(url: str, root: Path, *, write: bool = True) -> None:
    provider = RootsProvider([root])
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120)) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy", **provider.client_kwargs()) as client,
    ):
        if write:
            failed, text = await text_of(client, "write_file", path="note.txt", content="x\n")
            assert not failed, text
        else:
            failed, text = await text_of(client, "list_roots")
            assert not failed, text


def test_closed_http_sessions_leave_no_fds_or_threads(tmp_path: Path) -> None:
    roots = []
    for n in range(SESSIONS + 1):
        roots.append(tmp_path / f"s{n}")
        roots[-1].mkdir()
    with http_serve_process([str(tmp_path), "--writable"]) as (url, process):
        anyio.run(one_session, url, roots[0])  # warms up what lives for the process (imports, pools)
        baseline = settled(process.pid, 10**6, 10**6)
        baseline = settled(process.pid, baseline[0], baseline[1])

        async def churn() -> None:
            for root in roots[1:]:
                await one_session(url, root)

        anyio.run(churn)
        threads, fds = settled(process.pid, 0, baseline[1])
    assert all((root / "note.txt").read_text() == "x\n" for root in roots)
    assert fds <= baseline[1], f"fds {fds} after {SESSIONS} closed sessions, {baseline[1]} before"
    assert threads == 0, f"{threads} write threads after {SESSIONS} closed sessions"


def test_open_sessions_hold_their_roots_but_no_idle_write_threads(tmp_path: Path) -> None:
    roots = []
    for n in range(SESSIONS):
        roots.append(tmp_path / f"s{n}")
        roots[-1].mkdir()
    with http_serve_process([str(tmp_path), "--writable"]) as (url, process):

        async def idle_sessions() -> tuple[int, int]:
            warm = tmp_path / "warm"
            warm.mkdir()
            await one_session(url, warm, write=False)
            base = settled(process.pid, 10**6, 10**6)
            async with anyio.create_task_group() as tg:
                done = anyio.Event()
                opened: list[None] = []

                async def hold(root: Path) -> None:
                    provider = RootsProvider([root])
                    async with (
                        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120)) as http,
                        Client(
                            streamable_http_client(url, http_client=http), mode="legacy", **provider.client_kwargs()
                        ) as client,
                    ):
                        failed, text = await text_of(client, "write_file", path="open.txt", content="o\n")
                        assert not failed, text
                        opened.append(None)
                        await done.wait()

                for root in roots:
                    tg.start_soon(hold, root)
                with anyio.fail_after(120):
                    while len(opened) < len(roots):
                        await anyio.sleep(0.05)
                # Every session still open, each with its roots held: the write threads have gone idle and ended.
                counts = await anyio.to_thread.run_sync(settled, process.pid, 0, 10**6)
                done.set()
            return base[0], counts[0]

        base_threads, open_threads = anyio.run(idle_sessions)
    assert open_threads == 0, (open_threads, base_threads)  # held roots, no threads: they start for a write


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_roots_that_change_release_what_the_old_ones_held(tmp_path: Path, mode: str) -> None:
    """stdio: one client whose roots change 24 times, a write on each; the server's fds stay bounded: a handshake
    session's old snapshot is released when its roots change, 2026-07-28 keeps the last RECENT_SNAPSHOTS (16)."""
    roots = []
    for n in range(24):
        roots.append(tmp_path / f"r{n}")
        roots[-1].mkdir()

    async def main() -> list[int]:
        provider = RootsProvider([roots[0]])
        counts: list[int] = []
        async with serve("stdio", [str(tmp_path), "--writable"], mode=mode, provider=provider) as client:
            pid = _server_pid()
            for root in roots:
                await provider.set_roots([root])
                await provider.flush()
                for _ in range(100):  # the server refreshes after list_changed (debounced): wait to be served it
                    failed, text = await text_of(client, "write_file", path=str(root / "w.txt"), content="w\n")
                    if not failed:
                        break
                    await anyio.sleep(0.05)
                assert not failed, text
                counts.append(proc_counts(pid)[1])
        return counts

    counts = anyio.run(main)
    assert all((root / "w.txt").read_text() == "w\n" for root in roots)
    kept = 1 if mode == "legacy" else RECENT_SNAPSHOTS
    assert max(counts[kept + 1 :]) <= counts[kept] + 1, counts  # bounded: not one more held snapshot per change


def _server_pid() -> int:
    """The pid of the one ``rootbound serve`` child of this process (the stdio server the SDK started)."""
    import os

    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except OSError:
            continue
        if int(fields[1]) == me and b"serve" in command:
            return int(entry)
    raise AssertionError("no rootbound serve child found")
