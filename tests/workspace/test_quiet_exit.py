"""A server leaves nothing behind: its scan helper has ended by the time the server's own process has (on stdin's
end and on SIGTERM over HTTP), so a host waiting for the end of the server's stderr is not kept waiting by a child
holding it, and no process is left (issue 50: the exit paths end in ``os._exit``, which skipped the helper's
``atexit`` close)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.helpers.scan_helper_probe import children, helper_socket, until_idle
from tests.helpers.serve_process import http_serve_process

pytestmark = pytest.mark.anyio


async def _idle_helper(server: int) -> int | None:
    """The server's scan helper once it waits for work; ``None`` on one CPU (no helper is started there)."""
    if len(os.sched_getaffinity(0)) < 2:
        await anyio.sleep(1.0)
        assert children(server) == []
        return None
    with anyio.fail_after(120):
        while not (found := [(pid, sock) for pid in children(server) if (sock := helper_socket(pid)) is not None]):
            await anyio.sleep(0.05)
    ((helper, sock),) = found
    await until_idle(helper, sock)
    return helper


async def test_stdin_s_end_ends_the_helper_before_the_server(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a line\n")
    server = subprocess.Popen(  # noqa: ASYNC220 - started once, then read through /proc
        [sys.executable, "-m", "rootbound", "serve", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        assert server.stdin is not None and server.stderr is not None
        helper = await _idle_helper(server.pid)
        server.stdin.close()
        assert server.wait(60) == 0
        if helper is not None:
            assert not os.path.exists(f"/proc/{helper}")  # reaped by the server before it left
        lines = server.stderr.read().decode().splitlines()  # at its end: no other process holds the pipe
        assert len(lines) == 1 and lines[0].startswith("rootbound serve: stdio;"), lines
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


async def test_sigterm_ends_an_http_server_s_helper_before_the_server(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a line\n")
    with http_serve_process([str(tmp_path)]) as (_url, server):
        helper = await _idle_helper(server.pid)
        server.send_signal(signal.SIGTERM)
        server.wait(60)
        if helper is not None:
            assert not os.path.exists(f"/proc/{helper}")
        assert server.stderr is not None
        assert "Traceback" not in server.stderr.read()
