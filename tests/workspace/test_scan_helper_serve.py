"""``rootbound serve`` and its scan helper as an operator runs them: one sandboxed child process that reads part
of a grep's files (the kernel's read counters say so), answers equal to a server without it, gone with the server;
and the helper's own Landlock wall: a directory fd of a place outside the DIRs opens nothing there."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from rootbound.confine import landlock
from rootbound.search.chunk_scan import CHUNK_FILES
from rootbound.search.scan_helper import ScanHelper
from rootbound.workspace.scan_process import helper_command
from tests.helpers.scan_helper_probe import ask_ready_helper, children, helper_socket, read_bytes, until_idle
from tests.helpers.serve_process import http_serve_process, text_of

pytestmark = pytest.mark.anyio


def _tree(root: Path) -> None:
    for d in range(30):
        sub = root / f"pkg{d:02d}"
        sub.mkdir(parents=True)
        for f in range(60):
            body = "".join(f"line {n} of {d}/{f}\n" for n in range(40))
            if (d * 60 + f) % 37 == 0:
                body += f"needle in {d}/{f}\n"
            (sub / f"m{f:02d}.txt").write_text(body)


async def _grep(url: str, **arguments: object) -> str:
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120)) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        error, text = await text_of(client, "grep", **arguments)
        assert not error, text
        return text


async def test_serve_shares_a_scan_with_one_sandboxed_helper_that_ends_with_it(tmp_path: Path) -> None:
    work = tmp_path / "work"
    _tree(work)
    queries: list[dict[str, Any]] = [
        {"pattern": "needle"},
        {"pattern": r"needle in \d+/4\d", "regex": True, "context": 1},
        {"pattern": "line 3", "max_per_file": 2},
    ]
    with anyio.fail_after(180):
        with http_serve_process(["--no-index", "--no-scan-helper", str(work)]) as (url, server):
            assert children(server.pid) == []  # turned off: no second process
            alone = [await _grep(url, **query) for query in queries]
        with http_serve_process(["--no-index", str(work)]) as (url, server):
            if len(os.sched_getaffinity(0)) < 2:  # one CPU: a second process would only take turns with the server
                await anyio.sleep(1.0)
                assert children(server.pid) == []
                assert [await _grep(url, **query) for query in queries] == alone
                return
            ends = time.monotonic() + 60
            while not children(server.pid) and time.monotonic() < ends:
                await anyio.sleep(0.05)
            (helper,) = children(server.pid)
            sock_fd = helper_socket(helper)
            assert sock_fd is not None and b"--sandbox" in Path(f"/proc/{helper}/cmdline").read_bytes().split(b"\0")
            chunk_bytes = CHUNK_FILES * min(f.stat().st_size for f in work.rglob("*.txt"))
            shared = []
            for query in queries:
                # Waiting on its socket: its start (imports, sandbox) is behind it, and it reads nothing until sent a
                # chunk. Under load that start takes seconds, which a fixed number of warm-up calls did not cover.
                await until_idle(helper, sock_fd)
                before = read_bytes(helper)
                shared.append(await _grep(url, **query))
                taken = read_bytes(helper) - before
                if "max_per_file" not in query:  # a whole walk: its fifth chunk goes to the idle helper at any pace
                    assert taken >= chunk_bytes, (query, taken)  # (the capped one ends within the first four)
            assert os.path.exists(f"/proc/{helper}")
        assert shared == alone
        assert "needle in 0/0" in shared[0] and "files had more than 2 matches" in shared[2]
        ends = time.monotonic() + 30
        while os.path.exists(f"/proc/{helper}") and time.monotonic() < ends:
            await anyio.sleep(0.05)
        assert not os.path.exists(f"/proc/{helper}")  # no helper outlives its server


def test_the_helper_s_own_sandbox_opens_nothing_outside_the_dirs(tmp_path: Path) -> None:
    if landlock.abi_version() == 0:
        pytest.skip("no Landlock in this kernel: the helper runs unsandboxed, as the server does")
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    for place in (inside, outside):
        place.mkdir()
        (place / "f.txt").write_text("needle\n")
    held = os.open(inside, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)  # as serve passes its held DIRs
    try:
        helper = ScanHelper(helper_command(sandbox=True), holds=[held])
    finally:
        os.close(held)
    try:
        answers = ask_ready_helper(helper, [(inside, "f.txt"), (outside, "f.txt")])
        assert answers[1] == [("c", "searched", 1), ("h", 0, [(1, "needle", True, False)], False)]  # read
        assert answers[2] == [("c", "unreadable", 1)]  # outside: the kernel refused the open
    finally:
        helper.close()
