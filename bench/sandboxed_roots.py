"""Issue 24 #2: the descriptor budget of ``rootbound serve --http`` under its Landlock sandbox.

A fresh server per variant with ``RLIMIT_NOFILE`` 1,024 (``--max-roots 256``); four handshake-era sessions (the
real SDK client) each declare 256 file roots, make one ``read_file`` and then stay open and idle (abandoned: no
DELETE); then a victim session with one directory root reads a file. Printed per variant: each attacker's
answer (ok, refused by the budget, another error, or no answer within 20 s), how many were admitted, the server's
open fds, the victim's answer, and with ``--idle S`` a fifth 256-root session after S seconds of idleness (the
abandoned snapshots are released after 60 s).

Variants: the sandbox on (the default) and ``--no-sandbox``; with ``--baseline SRC`` also that source tree (e.g.
``git archive main src | tar -x -C /tmp/base``).

    .venv/bin/python bench/sandboxed_roots.py --baseline /tmp/base/src --idle 65
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client

from _serve_url import served_url
from mcp import Client
from rootbound import Root
from rootbound.mcp import RootsProvider

SRC = Path(__file__).resolve().parent.parent / "src"
LAUNCHER = (
    "import resource, sys\n"
    "resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))\n"
    "from rootbound.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
ROOTS = 256


async def session(url: str, roots: list[Root], path: Path, done: anyio.Event, out: list[str]) -> None:
    said = False
    try:
        provider = RootsProvider(roots)
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(20, read=20)) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy", **provider.client_kwargs()) as client,
        ):
            with anyio.move_on_after(20) as scope:
                result = await client.call_tool("read_file", {"path": str(path)})
            said = True
            if scope.cancelled_caught:
                out.append("no answer")
                return
            text = str(getattr(result.content[0], "text", ""))
            out.append(("refused" if "budget" in text else f"error: {text[:50]}") if result.is_error else "ok")
            await done.wait()  # open and idle: abandoned
    except Exception as error:  # counted once, not raised (closing a session that got no answer fails too)
        if not said:
            out.append(f"failed: {type(error).__name__}")


async def attack(url: str, work: Path, pid: int, idle: float) -> tuple[list[str], int, list[str], list[str]]:
    done = anyio.Event()
    attackers: list[str] = []
    victim: list[str] = []
    late: list[str] = []
    async with anyio.create_task_group() as tg:

        async def answered(out: list[str], count: int) -> None:
            with anyio.move_on_after(30):
                while len(out) < count:  # noqa: ASYNC110 - polling a list the sessions fill
                    await anyio.sleep(0.05)

        for index in range(4):
            roots = [Root.from_path(work / f"f{index * ROOTS + i}.txt") for i in range(ROOTS)]
            tg.start_soon(session, url, roots, work / f"f{index * ROOTS}.txt", done, attackers)
            await answered(attackers, index + 1)
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        tg.start_soon(session, url, [Root.from_path(work)], work / "victim.txt", done, victim)
        await answered(victim, 1)
        if idle:
            await anyio.sleep(idle)
            roots = [Root.from_path(work / f"f{ROOTS + i}.txt") for i in range(ROOTS)]
            tg.start_soon(session, url, roots, work / f"f{ROOTS}.txt", done, late)
            await answered(late, 1)
        done.set()
    return attackers, fds, victim, late


def run(src: Path, work: Path, sandbox: bool, idle: float) -> tuple[list[str], int, list[str], list[str]]:
    args = ["serve", "--http", "127.0.0.1:0", "--max-roots", str(ROOTS), str(work)]
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, *args, *([] if sandbox else ["--no-sandbox"])],
        env={**os.environ, "PYTHONPATH": str(src), "PYTHONWARNINGS": "ignore"},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(process)
        return anyio.run(attack, url, work, process.pid, idle)
    finally:
        process.terminate()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="another source tree's src directory")
    parser.add_argument("--idle", type=float, default=0.0, help="then wait this long and try a fifth session")
    args = parser.parse_args()
    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # the SDK client logs each failed session's traceback
    work = Path(tempfile.mkdtemp(prefix="sandboxed-roots-")).resolve()
    for index in range(4 * ROOTS):
        (work / f"f{index}.txt").write_text("x\n")
    (work / "victim.txt").write_text("victim\n")
    trees = [("this tree", SRC)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    for sandbox in (True, False):
        for name, src in trees:
            attackers, fds, victim, late = run(src, work, sandbox, args.idle)
            shown = "sandbox on" if sandbox else "--no-sandbox"
            after = f"; after {args.idle:g} s idle a new session: {late}" if args.idle else ""
            print(
                f"{name:9} {shown:12} attackers {attackers}: admitted {attackers.count('ok')}/4; server fds {fds}; "
                f"victim {victim}{after}",
                flush=True,
            )


if __name__ == "__main__":
    main()
