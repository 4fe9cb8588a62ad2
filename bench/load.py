"""Load over Streamable HTTP: concurrent clients x tool calls, both eras, ``rootbound serve`` vs the SDK's bare
lowlevel server, side by side.

    .venv/bin/python bench/load.py [--clients 8] [--calls 500]

Both servers run as subprocesses on 127.0.0.1 behind the same Starlette + ``StreamableHTTPSessionManager`` setup
(``rootbound.workspace.transport.http.http_app``) under uvicorn, listening on an ``IPPROTO_TCP`` socket (Nagle off).
``rootbound serve DIR`` answers ``list_roots`` (the client's roots ∩ DIR, each root held open); the baseline is a
lowlevel ``Server`` with one tool that returns a constant. Each client is an ``mcp.Client`` with its own
``httpx2.AsyncClient`` (pool of 64) and a ``RootsProvider`` naming DIR. In the handshake era every client is one session
(roots fetched once, then cached); in 2026-07-28 every call is two rounds on rootbound (``InputRequiredResult``, then
the retry with the roots) and one on the baseline, which asks for nothing. Each client makes 20 unmeasured warm-up calls
first. Any error (an exception or ``isError``) is counted and makes the exit status 1.

Internal: ``bench/load.py --serve-baseline PORT`` runs the baseline server.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from rootbound.mcp import RootsProvider

MODES = ("legacy", "2026-07-28")
WARMUP = 20


# ------------------------------------------------------------------------------------------- the baseline


def serve_baseline(port: int) -> None:
    import uvicorn
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    from rootbound.workspace.transport.http import http_app

    tool = types.Tool(name="echo", input_schema={"type": "object"})

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    server: Server[Any] = Server("baseline", on_list_tools=list_tools, on_call_tool=call_tool)
    app = http_app(server, allowed_hosts=[f"127.0.0.1:{port}", "127.0.0.1:*"])
    # Listen exactly as `rootbound serve --http` does: an IPPROTO_TCP socket, so asyncio turns Nagle off on every
    # connection (uvicorn.run's own socket has proto 0 and would hold each response body ~40 ms on keep-alive).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])


# ------------------------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running(command: list[str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{command[1:3]} did not start")
            time.sleep(0.05)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# ------------------------------------------------------------------------------------------- the load


@dataclass
class Run:
    server: str
    mode: str
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    rss: float = 0.0

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def quantile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def load(url: str, tool: str, run: Run, clients: int, calls: int, provider: RootsProvider) -> None:
    ready = anyio.Event()
    started = 0

    async def one() -> None:
        nonlocal started
        limits = httpx2.Limits(max_connections=64, max_keepalive_connections=64)
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120), limits=limits) as http,
            Client(streamable_http_client(url, http_client=http), mode=run.mode, **provider.client_kwargs()) as client,
        ):
            for _ in range(WARMUP):
                await call(client)
            started += 1
            if started == clients:
                ready.set()
            await ready.wait()  # measure only once every client is connected and warm
            for _ in range(calls):
                begin = time.perf_counter()
                ok = await call(client)
                run.latencies.append(time.perf_counter() - begin)
                run.errors += not ok

    async def call(client: Client) -> bool:
        try:
            result = await client.call_tool(tool, {})
        except Exception:
            return False
        return not result.is_error

    async with anyio.create_task_group() as tg:
        for _ in range(clients):
            tg.start_soon(one)
        await ready.wait()
        begin = time.perf_counter()
    run.seconds = time.perf_counter() - begin


def table(runs: list[Run]) -> str:
    base = {run.mode: run for run in runs if run.server == "baseline"}
    lines = [
        "| server | era | calls | calls/s | p50 ms | p99 ms | errors | RSS after (MiB) | calls/s vs baseline "
        "| p50 vs baseline | p99 vs baseline |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        ref = base[run.mode]
        lines.append(
            f"| {run.server} | {run.mode} | {len(run.latencies)} | {run.throughput:.0f} | {run.quantile(0.5):.1f} "
            f"| {run.quantile(0.99):.1f} | {run.errors} | {run.rss:.0f} | {run.throughput / ref.throughput:.2f}x "
            f"| {run.quantile(0.5) / ref.quantile(0.5):.2f}x | {run.quantile(0.99) / ref.quantile(0.99):.2f}x |"
        )
    return "\n".join(lines)


def run_all(clients: int, calls: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp).resolve()
        for name in ("app", "lib"):
            (work / name).mkdir()
            (work / name / "README.md").write_text(f"{name}\n")
        provider = RootsProvider([work / "app", work / "lib"])
        ours, theirs = free_port(), free_port()
        rootbound_cmd = [sys.executable, "-m", "rootbound", "serve", str(work), "--http", f"127.0.0.1:{ours}"]
        baseline_cmd = [sys.executable, str(Path(__file__).resolve()), "--serve-baseline", str(theirs)]
        runs: list[Run] = []
        started = time.perf_counter()
        with running(rootbound_cmd, ours) as rootbound_proc, running(baseline_cmd, theirs) as baseline_proc:
            for mode in MODES:
                for name, port, tool, proc in (
                    ("baseline", theirs, "echo", baseline_proc),
                    ("rootbound serve", ours, "list_roots", rootbound_proc),
                ):
                    run = Run(name, mode)
                    anyio.run(load, f"http://127.0.0.1:{port}/mcp", tool, run, clients, calls, provider)
                    run.rss = rss_mib(proc.pid)
                    runs.append(run)
                    print(
                        f"{name:>16} {mode:>10}: {run.throughput:6.0f} calls/s  p50 {run.quantile(0.5):6.1f} ms  "
                        f"p99 {run.quantile(0.99):6.1f} ms  errors {run.errors}",
                        file=sys.stderr,
                    )
        total = time.perf_counter() - started
    cores = os.cpu_count()
    print(f"\n{clients} clients x {calls} calls per server x era, Streamable HTTP on 127.0.0.1, {cores} cores, "
          f"{total:.0f} s in all (the clients and both servers share the machine)\n")  # fmt: skip
    print(table(runs))
    errors = sum(run.errors for run in runs)
    print(f"\nerrors: {errors}")
    return 1 if errors else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--serve-baseline", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_baseline:
        serve_baseline(args.serve_baseline)
        return 0
    return run_all(args.clients, args.calls)


if __name__ == "__main__":
    sys.exit(main())
