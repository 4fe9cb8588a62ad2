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
from rootbound.search.agent_grep import GrepLimits
from rootbound.search.chunk_scan import CHUNK_FILES, Event, job_of
from rootbound.search.grep_query import GrepQuery
from rootbound.search.safe_regex import compile_bytes
from rootbound.search.scan_helper import ScanHelper
from rootbound.workspace.scan_process import helper_command
from tests.helpers.scan_helper_probe import children, helper_socket, read_bytes, until_idle
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
        ends = time.monotonic() + 60
        while time.monotonic() < ends:
            with helper.take() as lease:
                if lease is None:
                    assert helper.alive, "the helper did not start"
                    time.sleep(0.02)
                    continue
                answers: dict[int, list[Event]] = {}
                for ticket, place in enumerate((inside, outside), 1):
                    fd = os.open(place, os.O_RDONLY | os.O_DIRECTORY)
                    try:
                        st = os.stat(place / "f.txt")
                        query = GrepQuery(
                            compile_bytes("needle", regex=False),
                            source=("needle", False, False),
                            limits=GrepLimits(),
                            files_only=False,
                            max_files=10,
                            required=b"needle",
                            deadline=None,
                            line_local=True,
                        )
                        job = job_of(query, "read-only", ("openat2", False, st.st_dev, None))
                        assert lease.send(ticket, job, [(0, "f.txt", st.st_ino)], [fd])
                    finally:
                        os.close(fd)
                while len(answers) < 2 and helper.alive:
                    answers.update(lease.answers(1.0))
                assert answers[1] == [("c", "searched", 1), ("h", 0, [(1, "needle", True, False)], False)]  # read
                assert answers[2] == [("c", "unreadable", 1)]  # outside: the kernel refused the open
                return
        raise AssertionError("the helper did not say it was ready")
    finally:
        helper.close()
