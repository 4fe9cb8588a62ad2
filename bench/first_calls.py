"""Issue 24 #3: many parallel first ``tools/call``s in one handshake-era HTTP session, on a loaded machine.

A fresh ``rootbound serve --http 127.0.0.1:0 DIR`` per variant and the real SDK client (roots from a
``RootsProvider``) issuing ``--calls`` ``read_file`` calls at once right after ``initialize``, while ``--busy``
processes spin to load the machine. Printed per variant: the answers by kind and the wall time.

Client variants: the SDK's default connection pool (100 connections: its ``roots/list`` answer queues behind
the calls waiting for it) and a pool of 1,000. With ``--baseline SRC`` also that source tree (e.g. ``git archive
main src | tar -x -C /tmp/base``), alternating so machine drift hits both alike.

    .venv/bin/python bench/first_calls.py --baseline /tmp/base/src
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
from mcp.client.streamable_http import streamable_http_client

from _serve_url import served_url
from mcp import Client
from rootbound import Root
from rootbound.mcp import RootsProvider

SRC = Path(__file__).resolve().parent.parent / "src"


def spin() -> None:
    while True:
        pass


async def calls(url: str, work: Path, count: int, pool: int | None) -> tuple[collections.Counter[str], float]:
    provider = RootsProvider([Root.from_path(work)])
    # The SDK's own pool unless told: httpx2's default, 100 connections.
    limits = httpx2.Limits(max_connections=pool or 100, max_keepalive_connections=20)
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=300), limits=limits) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy", **provider.client_kwargs()) as client,
    ):
        started = time.monotonic()

        async def one() -> str:
            try:
                result = await client.call_tool("read_file", {"path": str(work / "a.txt")})
            except Exception as error:  # counted, not raised
                return f"exception {type(error).__name__}"
            text = str(getattr(result.content[0], "text", "")) if result.content else ""
            return f"error: {text[:90]}" if result.is_error else "ok"

        answers = await asyncio.gather(*(one() for _ in range(count)))
        return collections.Counter(answers), time.monotonic() - started


def run(src: Path, work: Path, count: int, pool: int | None, timeout: float) -> tuple[collections.Counter[str], float]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rootbound",
            "serve",
            "--http",
            "127.0.0.1:0",
            "--roots-timeout",
            f"{timeout:g}",
            str(work),
        ],
        env={**os.environ, "PYTHONPATH": str(src), "PYTHONWARNINGS": "ignore"},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(process)
        return asyncio.run(calls(url, work, count, pool))
    finally:
        process.terminate()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--busy", type=int, default=2, help="spinning processes loading the machine")
    parser.add_argument("--roots-timeout", type=float, default=10.0)
    parser.add_argument("--baseline", type=Path, help="another source tree's src directory")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="first-calls-")).resolve()
    (work / "a.txt").write_text("hello\n")
    trees = [("this tree", SRC)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
    for spinner in spinners:
        spinner.start()
    try:
        for pool in (None, 1000):
            for name, src in trees:
                answers, took = run(src, work, args.calls, pool, args.roots_timeout)
                shown = "default pool (100)" if pool is None else f"pool {pool}"
                load = os.getloadavg()[0]
                print(f"{name:9} {shown:18} {args.calls} calls: {dict(answers)} in {took:.1f} s (load {load:.1f})")
    finally:
        for spinner in spinners:
            spinner.terminate()


if __name__ == "__main__":
    main()
