"""A victim client's latency while one greedy client attacks ``rootbound serve`` (issue 48 rows 1-4), side by side.

Run: ``.venv/bin/python bench/greedy_client.py [--seconds 60] [--baseline REV] [--busy 4]``.

For this tree and, with ``--baseline``, a temporary ``git worktree`` of that revision, one ``rootbound serve
--http 127.0.0.1:0 DIR --writable --no-index`` subprocess each (``--busy`` busy loops beside them, as on a shared
machine). The attacker, all the time: 4 sessions x 4 ``edit_file`` of a 90 KB old text on a 240 KB file (row 1), a
stateless 2026-07-28 client with 60 edits in flight (row 2), 10 sessions x 4 literal-free greps over 20,000 files
and 40 stateless ones (row 3), and about one ``initialize`` a second that it keeps (row 4). The victim, one
handshake-era session in its own process: a ``read_file``, a grep over 3 files and a ``write_file`` in turn for
``--seconds``. Printed: each operation's median and worst latency and its failures (tool errors or exceptions),
per tree, and the session's first call (which also waits for the server's ``roots/list`` round trip) apart from the
reads after it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _serve_url import served_url
from mcp import Client
from rootbound.mcp import RootsProvider

REPO = Path(__file__).resolve().parent.parent


def make_tree(base: Path) -> tuple[Path, Path]:
    attacker, victim = base / "attacker", base / "victim"
    victim.mkdir(parents=True)
    for name in ("a.txt", "b.txt", "c.txt"):
        (victim / name).write_text("alpha\nneedle here\ngamma\n")
    chunk = "".join(f"row {n} value {n * 7919 % 100003} text\n" for n in range(40))
    for d in range(100):
        (attacker / f"d{d:02d}").mkdir(parents=True)
        for n in range(200):
            (attacker / f"d{d:02d}" / f"f{n:03d}.txt").write_text(chunk)
    (attacker / "big.txt").write_text("    x\n" * 40_000)
    return attacker, victim


@contextlib.asynccontextmanager
async def client(url: str, root: Path, mode: str = "legacy") -> Any:
    provider = RootsProvider([root])
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=600), limits=httpx2.Limits(max_connections=200)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, **provider.client_kwargs()) as session,
    ):
        yield session


async def quietly(session: Client, tool: str, **arguments: Any) -> None:
    with contextlib.suppress(Exception):
        await session.call_tool(tool, arguments)


async def attack(url: str, attacker: Path, stop: anyio.Event) -> None:
    old = "  x\n" * 22_500
    edit = {"path": str(attacker / "big.txt"), "old_string": old, "new_string": "Q"}

    async def loop(mode: str, count: int, tool: str, arguments: dict[str, Any]) -> None:
        async with client(url, attacker, mode) as session, anyio.create_task_group() as tasks:
            for _ in range(count):

                async def one() -> None:
                    while not stop.is_set():
                        await quietly(session, tool, **arguments)

                tasks.start_soon(one)

    async def sessions() -> None:
        held = contextlib.AsyncExitStack()
        async with held:
            while not stop.is_set():
                with contextlib.suppress(Exception):
                    session = await held.enter_async_context(client(url, attacker))
                    await quietly(session, "list_roots")
                await anyio.sleep(1.0)

    grep = {"pattern": r"(\w+\s+){2}\d{5}[7-9]\b", "path": str(attacker)}
    async with anyio.create_task_group() as tasks:
        for _ in range(4):
            tasks.start_soon(loop, "legacy", 4, "edit_file", edit)
        tasks.start_soon(loop, "2026-07-28", 60, "edit_file", edit)
        for _ in range(10):
            tasks.start_soon(loop, "legacy", 4, "grep", grep)
        tasks.start_soon(loop, "2026-07-28", 40, "grep", grep)
        tasks.start_soon(sessions)


async def victim_run(url: str, victim: Path, seconds: float) -> dict[str, list[float | None]]:
    times: dict[str, list[float | None]] = {"read": [], "grep": [], "write": []}
    calls = {
        "read": ("read_file", {"path": str(victim / "a.txt")}),
        "grep": ("grep", {"pattern": "needle", "path": str(victim)}),
        "write": ("write_file", {"path": str(victim / "w.txt"), "content": "w\n"}),
    }
    end = time.monotonic() + seconds
    session_cm = client(url, victim)
    session = await session_cm.__aenter__()
    try:
        while time.monotonic() < end:
            for name, (tool, arguments) in calls.items():
                started = time.monotonic()
                try:
                    result = await session.call_tool(tool, arguments)
                    times[name].append(None if result.is_error else time.monotonic() - started)
                    if result.is_error:
                        text = " ".join(getattr(block, "text", "") for block in result.content)
                        print(
                            f"victim {name} failed after {time.monotonic() - started:.1f} s: {text[:200]}",
                            file=sys.stderr,
                        )
                except Exception as error:
                    times[name].append(None)
                    print(
                        f"victim {name} raised after {time.monotonic() - started:.1f} s: {error!r:.200}",
                        file=sys.stderr,
                    )
                    with contextlib.suppress(Exception):
                        await session_cm.__aexit__(None, None, None)
                    session_cm = client(url, victim)  # evicted or broken: a new session, as a client would
                    session = await session_cm.__aenter__()
    finally:
        with contextlib.suppress(Exception):
            await session_cm.__aexit__(None, None, None)
    return times


def run_tree(src: Path, base: Path, seconds: float) -> dict[str, list[float | None]]:
    attacker, victim = base / "attacker", base / "victim"
    process = subprocess.Popen(
        [sys.executable, "-m", "rootbound", "serve", "--http", "127.0.0.1:0", str(base), "--writable", "--no-index"],
        env={**os.environ, "PYTHONPATH": str(src), "PYTHONWARNINGS": "ignore"},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(process)

        async def main() -> dict[str, list[float | None]]:
            stop = anyio.Event()
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(attack, url, attacker, stop)
                await anyio.sleep(3.0)
                # The victim is its own process, as a real one is: its client side (the roots/list answer, its
                # SSE reads) never waits behind the attacker's 150 client tasks in this one.
                command = [sys.executable, __file__, "--victim", url, str(victim), str(seconds)]
                done = await anyio.run_process(command, check=True)
                stop.set()
                tasks.cancel_scope.cancel()
            loaded: dict[str, list[float | None]] = json.loads(done.stdout)
            return loaded

        return anyio.run(main)
    finally:
        process.kill()
        process.wait()


@contextlib.contextmanager
def checkout(rev: str | None) -> Iterator[Path | None]:
    if rev is None:
        yield None
        return
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), rev], check=True)
        try:
            yield where / "src"
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)], check=False)


@contextlib.contextmanager
def busy(count: int) -> Iterator[None]:
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def figures(times: list[float | None]) -> str:
    done = [t for t in times if t is not None]
    failed = len(times) - len(done)
    if not done:
        return f"- / - ({failed} of {len(times)} failed)"
    return f"{statistics.median(done):.2f} / {max(done):.2f} s ({failed} of {len(times)} failed)"


def victim_main(url: str, victim: Path, seconds: float) -> None:
    """``--victim URL DIR SECONDS``: the victim's run alone, its times as JSON on stdout."""
    print(json.dumps(anyio.run(victim_run, url, victim, seconds)))


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--victim":
        victim_main(sys.argv[2], Path(sys.argv[3]), float(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--baseline", help="a git revision to run side by side (e.g. c00cb92)")
    parser.add_argument("--busy", type=int, default=4, help="busy loops running beside the servers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, checkout(args.baseline) as old, busy(args.busy):
        make_tree(Path(tmp))
        rows = {"this tree": run_tree(REPO / "src", Path(tmp), args.seconds)}
        if old is not None:
            rows[args.baseline or ""] = run_tree(old, Path(tmp), args.seconds)
    print("| victim (median / worst, failures) | " + " | ".join(rows) + " |")
    print("|---|" + "---|" * len(rows))
    for op in ("read", "grep", "write"):
        print(f"| {op} | " + " | ".join(figures(times[op]) for times in rows.values()) + " |")
    # The session's first call (a read) also waits for the server's roots/list round trip: shown apart too.
    print("| first call (read + roots/list) | " + " | ".join(figures(t["read"][:1]) for t in rows.values()) + " |")
    print("| read after it | " + " | ".join(figures(t["read"][1:]) for t in rows.values()) + " |")


if __name__ == "__main__":
    main()
