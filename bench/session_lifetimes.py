"""Issue 33 #2: what handshake-era HTTP sessions leave behind in the server, counted in ``/proc``.

A fresh ``rootbound serve --http 127.0.0.1:0 DIR --writable`` per scenario and variant; real SDK clients, each with
one root of its own (``DIR/sN``) and one ``write_file``:

* **churn**: ``--sessions`` sessions (default 2,000) opened, used and closed (DELETE), ``--parallel`` at a time;
  then the server's threads and fds right after the last close, 1 s and 5 s after, beside the counts before;
* **open**: ``--open`` sessions (default 256) opened with one write each and kept open; the counts once they are
  all open, and 5 s later with every session still open (write threads end when idle; roots stay held).

``--baseline SRC`` runs the same against another source tree (its ``src``, e.g. ``git archive 935e875 src | tar
-x -C /tmp/base``), so both columns come from one run on one machine.

    .venv/bin/python bench/session_lifetimes.py --baseline /tmp/base/src
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client

from _serve_url import served_url
from mcp import Client
from rootbound.mcp import RootsProvider


def counts(pid: int) -> tuple[int, int, int]:
    """(threads, write threads named rootbound-write, fds) of ``pid`` now."""
    tasks = os.listdir(f"/proc/{pid}/task")
    writers = 0
    for tid in tasks:
        try:
            writers += Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip() == "rootbound-write"
        except OSError:
            continue
    return len(tasks), writers, len(os.listdir(f"/proc/{pid}/fd"))


async def session(url: str, root: Path, hold: anyio.Event | None = None, opened: list[int] | None = None) -> None:
    provider = RootsProvider([root])
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=300)) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy", **provider.client_kwargs()) as client,
    ):
        result = await client.call_tool("write_file", {"path": "note.txt", "content": "x\n"})
        if result.is_error:
            raise SystemExit(f"write failed: {result.content}")
        if hold is not None and opened is not None:
            opened.append(1)
            await hold.wait()


def start(src: str | None, base: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if src:
        env["PYTHONPATH"] = src
    command = [sys.executable, "-m", "rootbound", "serve", str(base), "--writable", "--http", "127.0.0.1:0"]
    return subprocess.Popen(
        [*command, "--max-sessions", "4096"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )


def churn(src: str | None, sessions: int, parallel: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        roots = [base / f"s{n}" for n in range(sessions + 1)]
        for root in roots:
            root.mkdir()
        process = start(src, base)
        try:
            url = served_url(process)
            anyio.run(session, url, roots[0])
            time.sleep(3)  # the warm-up session's threads idle out
            before = counts(process.pid)
            started = time.monotonic()

            async def run() -> None:
                limit = anyio.Semaphore(parallel)

                async def one(root: Path) -> None:
                    async with limit:
                        await session(url, root)

                async with anyio.create_task_group() as tg:
                    for root in roots[1:]:
                        tg.start_soon(one, root)

            anyio.run(run)
            took = time.monotonic() - started
            closed = time.monotonic()
            samples = {}
            for at in (0.0, 1.0, 5.0):
                time.sleep(max(0.0, closed + at - time.monotonic()))
                samples[at] = counts(process.pid)
        finally:
            process.terminate()
            process.wait(10)
    rows = [f"  before: threads {before[0]}, write threads {before[1]}, fds {before[2]}"]
    for at, (threads, writers, fds) in samples.items():
        rows.append(f"  +{at:g} s after the last close: threads {threads}, write threads {writers}, fds {fds}")
    rows.append(f"  {sessions:,} sessions in {took:.1f} s")
    return rows


def held_open(src: str | None, sessions: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        roots = [base / f"o{n}" for n in range(sessions)]
        for root in roots:
            root.mkdir()
        process = start(src, base)
        try:
            url = served_url(process)
            before = counts(process.pid)
            rows: list[str] = []

            async def run() -> None:
                hold = anyio.Event()
                opened: list[int] = []
                async with anyio.create_task_group() as tg:
                    for root in roots:
                        tg.start_soon(session, url, root, hold, opened)
                    while len(opened) < sessions:  # noqa: ASYNC110 - a count, not one event
                        await anyio.sleep(0.05)
                    now = counts(process.pid)
                    rows.append(f"  all {sessions} open: threads {now[0]}, write threads {now[1]}, fds {now[2]}")
                    await anyio.sleep(5)
                    now = counts(process.pid)
                    rows.append(f"  5 s later, still open: threads {now[0]}, write threads {now[1]}, fds {now[2]}")
                    hold.set()

            anyio.run(run)
        finally:
            process.terminate()
            process.wait(10)
    return [f"  before: threads {before[0]}, write threads {before[1]}, fds {before[2]}", *rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--open", type=int, default=256)
    parser.add_argument("--baseline", metavar="SRC", help="another source tree's src directory, run side by side")
    args = parser.parse_args()
    variants: list[tuple[str, str | None]] = [("this tree", None)]
    if args.baseline:
        variants.append((f"baseline {args.baseline}", args.baseline))
    for name, src in variants:
        print(f"churn, {name}:", flush=True)
        print("\n".join(churn(src, args.sessions, args.parallel)), flush=True)
    for name, src in variants:
        print(f"open, {name}:", flush=True)
        print("\n".join(held_open(src, args.open)), flush=True)


if __name__ == "__main__":
    main()
