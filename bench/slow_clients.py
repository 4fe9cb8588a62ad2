"""Issue 33 #3: stalled request bodies against ``rootbound serve --http``, and a victim session that keeps reading.

A fresh ``rootbound serve --http 127.0.0.1:0 DIR`` per variant. A victim handshake-era session (real SDK client)
reads a file every 100 ms throughout; ``--flood`` connections (default 2,000) each send a POST's headers declaring
``Content-Length: 1000000`` and one byte of body, then nothing. Printed per variant: the victim's reads (all
answered? worst and median), the server's peak fds, how many flood connections the server had closed by 5 s
and by ``--watch`` s (default 40: past the 30 s read deadline), and whether a new session could still start.

``--baseline SRC`` runs the same against another source tree (its ``src``), side by side in one run.

    .venv/bin/python bench/slow_clients.py --baseline /tmp/base/src
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client

from _serve_url import served_url
from mcp import Client
from rootbound.mcp import RootsProvider

HEAD = (
    b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:%d\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n"
    b"accept: application/json, text/event-stream\r\n\r\n{"
)


def closed_by_server(conns: list[socket.socket]) -> int:
    """How many of ``conns`` the server has closed (whatever it answered first: 408, 503, or nothing)."""
    closed = 0
    for conn in conns:
        conn.setblocking(False)
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    closed += 1  # EOF after whatever it sent
                    break
        except BlockingIOError:
            pass  # still open
        except OSError:
            closed += 1  # reset
    return closed


def run(src: str | None, flood: int, watch: float, extra: list[str]) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "v.txt").write_text("victim\n")
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        if src:
            env["PYTHONPATH"] = src
        process = subprocess.Popen(
            [sys.executable, "-m", "rootbound", "serve", str(base), "--http", "127.0.0.1:0", *extra],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            url = served_url(process)
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            peak = [0]
            stop = threading.Event()

            def sample() -> None:
                while not stop.is_set():
                    try:
                        peak[0] = max(peak[0], len(os.listdir(f"/proc/{process.pid}/fd")))
                    except OSError:
                        return
                    time.sleep(0.05)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            rows: list[str] = []

            async def victim() -> None:
                delays: list[float] = []
                failures = 0
                provider = RootsProvider([base])
                async with (
                    httpx2.AsyncClient(timeout=httpx2.Timeout(60)) as http,
                    Client(
                        streamable_http_client(url, http_client=http), mode="legacy", **provider.client_kwargs()
                    ) as client,
                ):

                    async def reads(until: float) -> None:
                        nonlocal failures
                        while time.monotonic() < until:
                            started = time.monotonic()
                            try:
                                result = await client.call_tool("read_file", {"path": "v.txt"})
                                failures += bool(result.is_error)
                            except Exception:
                                failures += 1
                            delays.append(time.monotonic() - started)
                            await anyio.sleep(0.1)

                    conns: list[socket.socket] = []

                    def open_flood() -> None:
                        for _ in range(flood):
                            try:
                                conn = socket.create_connection(("127.0.0.1", port), timeout=5)
                                conn.sendall(HEAD % port)
                                conns.append(conn)
                            except OSError:
                                break  # refused or reset at once: the server is shedding them

                    end = time.monotonic() + watch
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(reads, end)
                        await anyio.to_thread.run_sync(open_flood)
                        await anyio.sleep(5)
                        at_5 = closed_by_server(conns)
                    at_end = closed_by_server(conns)
                    for conn in conns:
                        conn.close()
                rows.append(
                    f"  victim reads: {len(delays)} ({failures} failed), worst {max(delays) * 1000:.0f} ms, median "
                    f"{statistics.median(delays) * 1000:.0f} ms"
                )
                rows.append(f"  flood: {len(conns)} connections opened; closed by the server: {at_5} by 5 s after,"
                            f" {at_end} by {watch:g} s")  # fmt: skip

            anyio.run(victim)
            stop.set()
            sampler.join()
            rows.append(f"  server fds: peak {peak[0]}")

            async def newcomer() -> str:
                provider = RootsProvider([base])
                async with (
                    httpx2.AsyncClient(timeout=httpx2.Timeout(30)) as http,
                    Client(
                        streamable_http_client(url, http_client=http), mode="legacy", **provider.client_kwargs()
                    ) as client,
                ):
                    result = await client.call_tool("read_file", {"path": "v.txt"})
                    return "served" if not result.is_error else "refused"

            rows.append(f"  a new session afterwards: {anyio.run(newcomer)}")
        finally:
            process.terminate()
            process.wait(10)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flood", type=int, default=2000)
    parser.add_argument("--watch", type=float, default=40.0)
    parser.add_argument("--baseline", metavar="SRC", help="another source tree's src directory, run side by side")
    parser.add_argument("--serve-arg", action="append", default=[], help="passed to this tree's serve (repeatable)")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.flood + 512)), hard))
    variants: list[tuple[str, str | None]] = [("this tree", None)]
    if args.baseline:
        variants.append((f"baseline {args.baseline}", args.baseline))
    for name, src in variants:
        extra = [] if src else args.serve_arg
        print(f"{args.flood} stalled bodies, {name} {' '.join(extra)}:", flush=True)
        print("\n".join(run(src, args.flood, args.watch, extra)), flush=True)


if __name__ == "__main__":
    main()
