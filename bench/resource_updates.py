"""How soon ``notifications/resources/updated`` reaches a client after another process writes a subscribed file
(issue 49: "within 2 s", median over 50 changes). Printed, never asserted.

    .venv/bin/python bench/resource_updates.py [--changes N]

A writer in its own process rewrites the file on command and says when it started (``time.monotonic``, the
system's CLOCK_MONOTONIC); each client stamps the arrival of the first ``updated`` after it on the same clock.
Clients: the Python SDK (``mcp.Client``) over stdio and over Streamable HTTP, handshake era; the TypeScript SDK
v2 client (``tests/judges/interop/ts_resources_client.mjs``, if its node_modules are installed) over stdio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import IncomingMessage
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from rootbound.core.uri import path_to_uri

REPO = Path(__file__).resolve().parents[1]
TS_CLIENT = REPO / "tests" / "judges" / "interop" / "ts_resources_client.mjs"
_WRITER = """
import sys, time
path = sys.argv[1]
for k, _ in enumerate(sys.stdin):
    start = time.monotonic()
    with open(path, "w") as out:
        out.write(f"change {k}\\n")
    print(start, flush=True)
"""


class Writer:
    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def write(self) -> float:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(30)


async def _python_client(client: Client, arrivals: list[float], uri: str, writer: Writer, changes: int) -> list[float]:
    await client.subscribe_resource(uri)
    delays = []
    for _ in range(changes):
        arrivals.clear()
        start = await anyio.to_thread.run_sync(writer.write)
        while not [t for t in arrivals if t >= start]:  # noqa: ASYNC110 (a poll of a list the handler fills)
            await anyio.sleep(0.001)
        delays.append(min(t for t in arrivals if t >= start) - start)
        await anyio.sleep(0.05)  # the write's other events (one write is several), before the next write
    return delays


def _handler(arrivals: list[float]) -> Any:
    async def handle(message: IncomingMessage) -> None:
        if isinstance(getattr(message, "root", message), types.ResourceUpdatedNotification):
            arrivals.append(time.monotonic())

    return handle


async def python_stdio(root: Path, watched: Path, changes: int) -> list[float]:
    arrivals: list[float] = []
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rootbound", "serve", str(root)],
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    writer = Writer(watched)
    try:
        async with Client(params, mode="legacy", message_handler=_handler(arrivals)) as client:
            return await _python_client(client, arrivals, path_to_uri(watched), writer, changes)
    finally:
        writer.close()


async def python_http(root: Path, watched: Path, changes: int) -> list[float]:
    arrivals: list[float] = []
    server = subprocess.Popen(  # noqa: ASYNC220 (set-up, before anything is timed)
        [sys.executable, "-m", "rootbound", "serve", "--http", "127.0.0.1:0", str(root)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    writer = Writer(watched)
    try:
        assert server.stderr is not None
        url = ""
        while "http://" not in url:
            url = server.stderr.readline()
        url = url[url.index("http://") :].split()[0].rstrip(".,")
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            Client(
                streamable_http_client(url, http_client=http), mode="legacy", message_handler=_handler(arrivals)
            ) as c,
        ):
            return await _python_client(c, arrivals, path_to_uri(watched), writer, changes)
    finally:
        writer.close()
        server.terminate()
        server.wait(30)


def ts_stdio(root: Path, watched: Path, changes: int) -> list[float] | None:
    node = shutil.which("node")
    if node is None or not (TS_CLIENT.parent / "node_modules").exists():
        return None
    updates = str(changes * 10)  # a write's late events count as updates there: those before a write are skipped here
    argv = [node, str(TS_CLIENT), "--file", path_to_uri(watched), "--dir", path_to_uri(root), "--updates", updates]
    serve = [sys.executable, "-m", "rootbound", "serve", str(root)]
    client = subprocess.Popen([*argv, "--stdio", *serve], stdout=subprocess.PIPE, text=True)
    writer = Writer(watched)
    delays: list[float] = []
    start = 0.0
    try:
        assert client.stdout is not None
        for raw in client.stdout:
            if not raw.startswith("{"):
                continue
            line = json.loads(raw)
            if line["step"] == "updated":
                if line["t"] < start:
                    continue  # an earlier write's late event
                delays.append(line["t"] - start)
            if len(delays) == changes:
                break
            if line["step"] in ("subscribed", "updated"):
                time.sleep(0.05)  # the write's other events, before the next write
                start = writer.write()
    finally:
        writer.close()
        client.kill()
        client.wait(60)
    return delays


def _line(name: str, delays: list[float] | None) -> str:
    if delays is None:
        return f"{name:<34} not run (node or tests/judges/interop/node_modules missing)"
    ms = sorted(d * 1000 for d in delays)
    return (
        f"{name:<34} median {statistics.median(ms):7.1f} ms   p90 {ms[int(len(ms) * 0.9) - 1]:7.1f} ms   "
        f"max {ms[-1]:7.1f} ms   ({len(ms)} changes; target: median <= 2000 ms)"
    )


def main(changes: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve() / "work"
        root.mkdir()
        watched = root / "watched.txt"
        watched.write_text("start\n")
        print(_line("Python SDK, stdio", anyio.run(python_stdio, root, watched, changes)))
        print(_line("Python SDK, Streamable HTTP", anyio.run(python_http, root, watched, changes)))
        print(_line("TypeScript SDK v2, stdio", ts_stdio(root, watched, changes)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=50)
    main(parser.parse_args().changes)
