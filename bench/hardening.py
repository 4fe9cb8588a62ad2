"""Issue 16: what one hostile request (or flood) costs everybody else, side by side with a baseline.

For each scenario a fresh ``rootbound serve --http 127.0.0.1:0 DIR`` subprocess is started over a generated tree; an
unrelated handshake-era session (the *probe*, in its own process: a client's event loop would otherwise count the
attackers' own answer parsing) calls ``list_roots`` every 20 ms while the attack runs, and the server's descriptors
and RSS are sampled from ``/proc`` every 20 ms. Printed per scenario and variant: the probe's worst and median delay
(target: worst <= 100 ms), how long the attack took (or that the client gave up at the cap and cancelled), the
server's peak fds and RSS, and the CPU seconds the server used in the 3 s starting 0.5 s after the attack ended,
with the probe stopped (``cpu after``: work that goes on after its answer or cancellation; target ~0). The servers
run with ``--tool-timeout`` (default 3 s here), so slow calls end at their deadline.

Scenarios (all bounded, loopback only):

* pathological patterns: regexes ``(a+)+$`` (on a planted line) and ``(.+)+@@@`` (on an ordinary one);
  ``((a{1,10}){1,10}){1,10}x`` and ``(a{1,20}){1,50}x`` over 6 MB of 20,000-character lines of ``a`` (linear in
  RE2, but off its DFA onto the NFA at tens of KB/s: they run into the deadline); globs ``*?``x9 ``Z`` on a
  42-character name and ``**/``x17 on a deep path;
* floods: ``list_directory`` of a directory of ``--entries`` entries by 4 sessions at once (the first page, then
  every page by ``nextCursor`` with ``max_entries`` 5000), a session declaring ``--roots`` file roots (fds), and
  ``--sessions`` bare ``initialize`` POSTs.

``--baseline SRC`` runs every scenario against another source tree too (its ``src`` directory, e.g. from
``git archive main src | tar -x -C /tmp/base``), alternating variants so machine drift hits both alike.

    .venv/bin/python bench/hardening.py --baseline /tmp/base/src
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client

from _serve_url import served_url
from mcp import Client
from rootbound.mcp import RootsProvider

ACCEPT = "application/json, text/event-stream"


@dataclass
class Sample:
    fds: int = 0
    rss_kib: int = 0
    delays: list[float] = field(default_factory=list)
    cpu_after: float = float("nan")


def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of ``pid`` (fields 14 and 15 of ``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def build_tree(base: Path, *, entries: int, roots: int, planted: int) -> None:
    (base / "plant").mkdir()
    (base / "plant" / "line.txt").write_text("a" * planted + "!\n")
    (base / "plain").mkdir()
    (base / "plain" / "text.txt").write_text("an ordinary line of text, nothing planted\n" * 4)
    (base / "long").mkdir()
    for i in range(3):
        (base / "long" / f"a{i}.txt").write_bytes((b"a" * 20_000 + b"\n") * 100)
    (base / "names").mkdir()
    (base / "names" / ("n" * 41 + "a")).write_text("x")
    deep = base / "deep"
    for i in range(24):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (deep / "leaf.txt").write_text("x")
    wide = base / "wide"
    wide.mkdir()
    for i in range(entries):
        (wide / f"entry-{i:07}").touch()
    many = base / "many"
    many.mkdir()
    for i in range(roots):
        (many / f"r{i:05}").write_text("x")


@contextlib.contextmanager
def server(src: str | None, directory: Path, tool_timeout: float) -> Iterator[tuple[str, int]]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if src is not None:
        env["PYTHONPATH"] = src
    process = subprocess.Popen(
        [
            sys.executable,
            *("-m", "rootbound", "serve", "--http", "127.0.0.1:0"),
            *("--tool-timeout", f"{tool_timeout:g}", str(directory)),
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(process)
        threading.Thread(target=lambda: process.stderr.read() if process.stderr else None, daemon=True).start()
        yield url, process.pid
    finally:
        process.kill()
        process.wait()


def sample_proc(pid: int, into: Sample) -> None:
    with contextlib.suppress(OSError):
        into.fds = max(into.fds, len(os.listdir(f"/proc/{pid}/fd")))
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                into.rss_kib = max(into.rss_kib, int(line.split()[1]))


@contextlib.asynccontextmanager
async def client(url: str, roots: list[Path]) -> AsyncIterator[Client]:
    provider = RootsProvider(roots)
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=600)) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy", **provider.client_kwargs()) as c,
    ):
        yield c


Attack = Callable[[str, Path], Awaitable[None]]


def tool_attack(tool: str, arguments: dict[str, Any], root: str, *, parallel: int = 1) -> Attack:
    async def attack(url: str, base: Path) -> None:
        async def one() -> None:
            async with client(url, [base / root]) as c:
                await c.call_tool(tool, arguments)

        async with anyio.create_task_group() as tg:
            for _ in range(parallel):
                tg.start_soon(one)

    return attack


def paging_attack(root: str, *, page: int, parallel: int) -> Attack:
    """``parallel`` sessions each list a directory to its end, page by page (``nextCursor``); a server without
    pagination refuses ``max_entries`` (the outcome column says so)."""

    async def attack(url: str, base: Path) -> None:
        async def one() -> None:
            async with client(url, [base / root]) as c:
                arguments: dict[str, Any] = {"path": ".", "max_entries": page}
                while True:
                    result = await c.call_tool("list_directory", arguments)
                    if result.is_error:
                        raise RuntimeError("refused")
                    cursor = (result.structured_content or {}).get("nextCursor")
                    if cursor is None:
                        return
                    arguments["cursor"] = cursor

        async with anyio.create_task_group() as tg:
            for _ in range(parallel):
                tg.start_soon(one)

    return attack


async def fd_flood(url: str, base: Path) -> None:
    roots = sorted((base / "many").iterdir())
    async with client(url, roots) as c:
        await c.call_tool("list_roots", {})


async def session_flood(url: str, base: Path, count: int) -> None:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "0"}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
    async with httpx2.AsyncClient(timeout=30) as http:
        for _ in range(count):
            await http.post(url, json=body, headers={"accept": ACCEPT})
        async with client(url, [base / "plain"]) as c:  # a real client after the flood
            await c.call_tool("list_roots", {})


async def probe_loop(url: str, root: Path) -> None:
    """The unrelated session, in its own process (``--probe URL ROOT``): ``ready`` once connected, then one line
    per trivial call with its delay in seconds, until killed.

    Its own process because a client's event loop is shared by everything in it: the attackers' clients parse and
    validate their (large) answers on it, and a probe on the same loop would measure that, not the server.
    """
    async with client(url, [root]) as c:
        await c.call_tool("list_roots", {})
        print("ready", flush=True)
        while True:
            started = time.perf_counter()
            await c.call_tool("list_roots", {})
            print(f"{time.perf_counter() - started:.6f}", flush=True)
            await anyio.sleep(0.02)


def start_probe(url: str, root: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, "--probe", url, str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


async def run_one(url: str, pid: int, base: Path, attack: Attack, cap: float) -> tuple[Sample, str]:
    sample = Sample()
    done = anyio.Event()
    probe = start_probe(url, base / "plain")
    assert probe.stdout is not None
    lines = probe.stdout
    last_answer = [time.perf_counter()]

    def read_probe() -> None:
        for line in lines:
            if line.strip() != "ready":
                sample.delays.append(float(line))
            last_answer[0] = time.perf_counter()

    async def sampler() -> None:
        while not done.is_set():
            sample_proc(pid, sample)
            await anyio.sleep(0.02)

    outcome = "cap"
    try:
        await anyio.to_thread.run_sync(lines.readline)  # "ready": the probe is connected
        reader = threading.Thread(target=read_probe, daemon=True)
        reader.start()
        async with anyio.create_task_group() as tg:
            tg.start_soon(sampler)
            t0 = time.perf_counter()
            with anyio.move_on_after(cap):
                try:
                    await attack(url, base)
                    outcome = f"{time.perf_counter() - t0:.2f}s"
                except Exception as error:
                    outcome = f"error after {time.perf_counter() - t0:.2f}s ({type(error).__name__})"
            await anyio.sleep(0.5)  # the probe keeps measuring right after a cancel
            done.set()
            # A probe call still unanswered has waited at least this long (less its 20 ms pause).
            sample.delays.append(max(0.0, time.perf_counter() - last_answer[0] - 0.02))
            tg.cancel_scope.cancel()
    finally:
        probe.kill()
        probe.wait()
    with contextlib.suppress(OSError):  # the probe stopped: what the server still burns is the attack's leftover
        before = cpu_seconds(pid)
        await anyio.sleep(3)
        sample.cpu_after = cpu_seconds(pid) - before
    return sample, outcome


def scenarios(args: argparse.Namespace) -> list[tuple[str, Attack]]:
    return [
        ("grep regex (a+)+$ on a planted line", tool_attack("grep", {"pattern": "(a+)+$", "regex": True}, "plant")),
        ("grep regex (.+)+@@@ on plain text", tool_attack("grep", {"pattern": "(.+)+@@@", "regex": True}, "plain")),
        (
            "grep ((a{1,10}){1,10}){1,10}x on 6 MB of a-lines",
            tool_attack("grep", {"pattern": "((a{1,10}){1,10}){1,10}x", "regex": True}, "long"),
        ),
        (
            "grep (a{1,20}){1,50}x on 6 MB of a-lines x4",
            tool_attack("grep", {"pattern": "(a{1,20}){1,50}x", "regex": True}, "long", parallel=4),
        ),
        ("search_files *?x9 Z on a 42-char name", tool_attack("search_files", {"pattern": "*?" * 9 + "Z"}, "names")),
        ("search_files **/x17 on a deep path", tool_attack("search_files", {"pattern": "**/" * 17 + "Z"}, "deep")),
        (
            f"list_directory of {args.entries} entries x4",
            tool_attack("list_directory", {"path": "."}, "wide", parallel=4),
        ),
        (
            f"list_directory of {args.entries} entries x4, all pages",
            paging_attack("wide", page=5000, parallel=4),
        ),
        (f"fd flood: one session declaring {args.roots} file roots", fd_flood),
        (
            f"session flood: {args.sessions} bare initialize POSTs",
            lambda url, base: session_flood(url, base, args.sessions),
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", metavar="SRC", help="a baseline source tree (its src/ directory)")
    parser.add_argument("--cap", type=float, default=12.0, help="seconds an attack may run before it is cancelled")
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--roots", type=int, default=512)
    parser.add_argument("--sessions", type=int, default=600, help="bare initialize POSTs (the cap is 256)")
    parser.add_argument("--planted", type=int, default=24, help="length of the planted run of 'a' (issue: 27)")
    parser.add_argument("--only", help="run only scenarios whose name contains this")
    parser.add_argument("--tool-timeout", type=float, default=3.0, help="the servers' per-call deadline (s)")
    parser.add_argument("--probe", nargs=2, metavar=("URL", "ROOT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
            anyio.run(probe_loop, args.probe[0], Path(args.probe[1]))
        return
    variants: list[tuple[str, str | None]] = [("this", None)]
    if args.baseline:
        variants.append(("baseline", str(Path(args.baseline).resolve())))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp).resolve()
        build_tree(base, entries=args.entries, roots=args.roots, planted=args.planted)
        header = (
            f"{'scenario':<48} {'variant':<9} {'worst':>8} {'median':>8} {'calls':>6} {'attack':>22} "
            f"{'fds':>5} {'RSS':>8} {'cpu after':>9}"
        )
        print(header)
        print("-" * len(header))
        for name, attack in scenarios(args):
            if args.only and args.only not in name:
                continue
            for variant, src in variants:
                with server(src, base, args.tool_timeout) as (url, pid):
                    sample, outcome = anyio.run(run_one, url, pid, base, attack, args.cap)
                worst = max(sample.delays) * 1000 if sample.delays else float("nan")
                median = statistics.median(sample.delays) * 1000 if sample.delays else float("nan")
                flag = "" if worst <= 100 else "  > 100 ms"
                print(
                    f"{name:<48} {variant:<9} {worst:7.0f}ms {median:7.1f}ms {len(sample.delays):>6} "
                    f"{outcome:>22} {sample.fds:>5} {sample.rss_kib / 1024:6.0f}MiB {sample.cpu_after:8.2f}s{flag}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
