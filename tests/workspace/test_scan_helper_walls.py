"""Issue 48 row 11: the scan helper walls exactly the DIRs the server holds, whatever their names say by the time it
starts. Its interpreter's start takes seconds under load; a DIR renamed, removed or swapped for a link in that time
made it fail to start ("No such file or directory") or wall the link's target. Its wall is now built from the held
DIRs' fds, passed to it as they are.

The serve tests catch the helper before it builds its wall (stopped as soon as it exists, with no Landlock ruleset
fd and ``NoNewPrivs: 0``: it has not begun), change the DIR, and let it go."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from rootbound.confine import landlock
from rootbound.search.chunk_scan import CHUNK_FILES
from rootbound.search.scan_helper import ScanHelper
from rootbound.workspace.scan_process import helper_command
from tests.helpers.scan_helper_probe import HELPER_MODULE, ask_ready_helper, helper_socket, read_bytes
from tests.helpers.serve_process import listening_url

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(landlock.abi_version() == 0, reason="no Landlock in this kernel: the helper has no wall"),
]


def _tree(root: Path) -> None:
    for d in range(20):
        sub = root / f"pkg{d:02d}"
        sub.mkdir(parents=True)
        for f in range(60):
            body = "".join(f"line {n} of {d}/{f}\n" for n in range(40))
            if (d * 60 + f) % 37 == 0:
                body += f"needle in {d}/{f}\n"
            (sub / f"m{f:02d}.txt").write_text(body)


def _status(pid: int, field: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def _not_begun(pid: int) -> bool:
    """Stopped before its wall: no Landlock ruleset made yet (so no DIR looked at), no restriction."""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            if "landlock" in os.readlink(f"/proc/{pid}/fd/{fd}"):
                return False
    return _status(pid, "NoNewPrivs") == "0"


def _helper_child(server: int) -> int | None:
    try:
        found = Path(f"/proc/{server}/task/{server}/children").read_text().split()
    except OSError:
        return None
    for pid in map(int, found):
        with contextlib.suppress(OSError):
            if HELPER_MODULE in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                return pid
    return None


@contextlib.contextmanager
def _serve_with_helper_caught(work: Path) -> Iterator[tuple[str, subprocess.Popen[str], int]]:
    """``rootbound serve --http`` whose scan helper is stopped before it built its wall (retried until caught)."""
    for _attempt in range(10):
        process = subprocess.Popen(
            [sys.executable, "-m", "rootbound", "serve", "--no-index", "--http", "127.0.0.1:0", str(work)],
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
            stderr=subprocess.PIPE,
            text=True,
        )
        helper: int | None = None
        try:
            ends = time.monotonic() + 60
            while helper is None and process.poll() is None and time.monotonic() < ends:
                helper = _helper_child(process.pid)
            assert helper is not None, "serve started no scan helper"
            os.kill(helper, signal.SIGSTOP)
            while _status(helper, "State")[:1] not in ("T", "t"):
                time.sleep(0.001)
            if not _not_begun(helper):
                os.kill(helper, signal.SIGCONT)
                continue
            yield listening_url(process), process, helper
            return
        finally:
            if helper is not None and _helper_child(process.pid) == helper:  # a failure left it stopped: let it go
                os.kill(helper, signal.SIGCONT)
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stderr is not None:
                process.stderr.close()
    pytest.fail("the scan helper was never caught before its wall in 10 starts")


def _serve_alone(work: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rootbound",
            "serve",
            "--no-index",
            "--no-scan-helper",
            "--http",
            "127.0.0.1:0",
            *[str(work)],
        ],
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        stderr=subprocess.PIPE,
        text=True,
    )


async def _grep(url: str) -> str:
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120)) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        result = await client.call_tool("grep", {"pattern": "needle"})
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        assert not result.is_error, text
        return text


async def _ready(helper: int, sock_fd: int, server: subprocess.Popen[str]) -> None:
    """Until the helper waits on its socket (started, walled, ready); fails if it ended instead."""
    ends = time.monotonic() + 120
    while time.monotonic() < ends:
        state = _status(helper, "State")[:1] if os.path.exists(f"/proc/{helper}") else "X"
        assert state not in ("Z", "X"), "the scan helper ended: " + _stderr_so_far(server)
        fields = Path(f"/proc/{helper}/syscall").read_text().split()
        if len(fields) > 1 and fields[0] not in ("running", "-1") and int(fields[1], 16) == sock_fd:
            return
        await anyio.sleep(0.05)
    raise AssertionError("the scan helper never became ready")


def _stderr_so_far(server: subprocess.Popen[str]) -> str:
    server.terminate()
    assert server.stderr is not None
    return server.stderr.read()[-500:]


@pytest.mark.parametrize("change", ["renamed", "removed", "swapped_for_a_link"])
async def test_the_helper_walls_the_held_dir_whatever_its_name_says_when_it_starts(tmp_path: Path, change: str) -> None:
    work, other, moved = tmp_path / "work", tmp_path / "other", tmp_path / "moved"
    _tree(work)
    other.mkdir()
    (other / "canary.txt").write_text("needle canary\n")
    alone_server = _serve_alone(work)
    try:
        assert alone_server.stderr is not None
        url = ""
        while not url:
            line = alone_server.stderr.readline()
            assert line, "serve did not start"
            url = next(iter(re.findall(r"http://127\.0\.0\.1:\d+/mcp", line)), "")
        with anyio.fail_after(120):
            alone = await _grep(url)
    finally:
        alone_server.terminate()
        alone_server.wait(10)
    assert "needle in 0/0" in alone
    with anyio.fail_after(400), _serve_with_helper_caught(work) as (url, server, helper):
        sock_fd = helper_socket(helper)
        assert sock_fd is not None
        if change == "removed":
            shutil.rmtree(work)
        else:
            os.rename(work, moved)
            if change == "swapped_for_a_link":
                os.symlink(other, work)
        os.kill(helper, signal.SIGCONT)
        await _ready(helper, sock_fd, server)  # main: "scan helper not started: ... No such file or directory"
        if change == "removed":
            return
        if change == "swapped_for_a_link":
            os.unlink(work)
        os.rename(moved, work)  # the held DIR named again: the server serves it again
        before = read_bytes(helper)
        assert await _grep(url) == alone  # main, swapped: the helper walled the link's target, not this DIR
        chunk_bytes = CHUNK_FILES * min(f.stat().st_size for f in work.rglob("*.txt"))
        assert read_bytes(helper) - before >= chunk_bytes  # it read its chunks: an idle helper is sent the fifth


def test_a_helper_started_after_its_dir_became_a_link_cannot_read_the_link_s_target(tmp_path: Path) -> None:
    work, other, moved = tmp_path / "work", tmp_path / "other", tmp_path / "moved"
    for place in (work, other):
        place.mkdir()
    (work / "f.txt").write_text("needle\n")
    (other / "canary.txt").write_text("needle canary\n")
    held = os.open(work, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)  # the server's held DIR
    try:
        os.rename(work, moved)
        os.symlink(other, work)  # after the server took it in, before the helper starts
        helper = ScanHelper(helper_command(sandbox=True), holds=[held])
    finally:
        os.close(held)
    try:
        answers = ask_ready_helper(helper, [(moved, "f.txt"), (other, "canary.txt")])
        assert answers[1] == [("c", "searched", 1), ("h", 0, [(1, "needle", True, False)], False)]  # held
        assert answers[2] == [("c", "unreadable", 1)]  # the canary: the kernel refused the open
    finally:
        helper.close()
