"""Issue 48 row 10: a local process SIGSTOPs the scan helper (or it wedges) while it holds a call's chunks. The grep
holding it is answered before its deadline, equal to a scan without the helper: the server sees the helper make no
progress for one window, takes it out of use for good (retired, not replaced: a sandboxed server may not start an
interpreter) and searches the chunks it held itself. Once the stopped helper is let go it exits, and the server reaps
it: no child, no zombie, and the server's fds no more than before."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.lowlevel
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.scan_helper_probe import children, helper_socket, read_bytes, until_idle
from tests.helpers.serve_process import http_serve_process, text_of

pytestmark = pytest.mark.anyio

DEADLINE = "45"  # --tool-timeout: the old code answers every grep that reached the stopped helper with this error


def _tree(root: Path) -> None:
    for d in range(40):
        sub = root / f"pkg{d:02d}"
        sub.mkdir(parents=True)
        for f in range(64):
            body = "".join(f"line {n} of {d}/{f} and some more text to read\n" for n in range(120))
            if (d * 64 + f) % 37 == 0:
                body += f"needle in {d}/{f}\n"
            (sub / f"m{f:02d}.txt").write_text(body)


async def _grep(url: str, pattern: str = r"needle in \d+/[13]\d", **arguments: object) -> str:
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=180)) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        error, text = await text_of(client, "grep", pattern=pattern, regex=True, **arguments)
        assert not error, text  # the old code: the per-call deadline, while the helper holds its chunks
        return text


def _waiting_on_socket(pid: int, sock_fd: int) -> bool:
    fields = Path(f"/proc/{pid}/syscall").read_text().split()
    return len(fields) > 1 and fields[0] not in ("running", "-1") and int(fields[1], 16) == sock_fd


async def _grep_into(url: str, answers: list[str]) -> None:
    answers.append(await _grep(url))


def _stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("T", "t")


@contextlib.contextmanager
def _let_go_on_failure(helper: int) -> Iterator[None]:
    """A failing test leaves no stopped process behind (a sandboxed server cannot end it)."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            os.kill(helper, signal.SIGCONT)
        raise


async def _helper_of(server: int) -> tuple[int, int]:
    ends = time.monotonic() + 60
    while not children(server) and time.monotonic() < ends:
        await anyio.sleep(0.05)
    (helper,) = children(server)
    sock_fd = helper_socket(helper)
    assert sock_fd is not None
    await until_idle(helper, sock_fd)  # started, sandboxed, ready, and between chunks
    return helper, sock_fd


async def _retired_and_reaped(
    url: str, server: int, helper: int, fds_before: int, alone: str, *, let_go: bool = True
) -> None:
    """The stopped helper let go (a sandboxed server may not signal it): it exits (its socket is closed); a later
    call reaps it; the answers stay right. Without the sandbox the server's SIGKILL ends it, still stopped."""
    if let_go:
        os.kill(helper, signal.SIGCONT)
    ends = time.monotonic() + 120
    while children(server) and time.monotonic() < ends:
        assert await _grep(url) == alone  # scans alone now
        await anyio.sleep(0.1)
    assert children(server) == []  # neither running, stopped nor a zombie: reaped, and not replaced
    assert len(os.listdir(f"/proc/{server}/fd")) <= fds_before  # its socket and stop flag are closed
    assert await _grep(url) == alone


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: serve starts no scan helper")
@pytest.mark.parametrize("sandbox", ["--sandbox", "--no-sandbox"])
async def test_a_grep_whose_chunks_a_stopped_helper_holds_is_answered_whole(tmp_path: Path, sandbox: str) -> None:
    work = tmp_path / "work"
    _tree(work)
    with anyio.fail_after(400):
        with http_serve_process(["--no-index", "--no-scan-helper", str(work)]) as (url, _server):
            alone = await _grep(url)
        assert "needle in 1/" in alone
        args = ["--no-index", "--tool-timeout", DEADLINE, *(["--no-sandbox"] if sandbox == "--no-sandbox" else [])]
        with http_serve_process([*args, str(work)]) as (url, server):
            helper, _sock = await _helper_of(server.pid)
            fds_before = len(os.listdir(f"/proc/{server.pid}/fd"))
            with _let_go_on_failure(helper):
                os.kill(helper, signal.SIGSTOP)  # ready and idle: the call's fifth chunk (and up to two more) go to it
                assert await _grep(url) == alone
            await _retired_and_reaped(url, server.pid, helper, fds_before, alone, let_go=sandbox == "--sandbox")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: serve starts no scan helper")
async def test_a_helper_stopped_in_the_middle_of_a_chunk_costs_its_call_nothing(tmp_path: Path) -> None:
    work = tmp_path / "work"
    _tree(work)
    with anyio.fail_after(600):
        with http_serve_process(["--no-index", "--no-scan-helper", str(work)]) as (url, _server):
            alone = await _grep(url)
        with http_serve_process(["--no-index", "--tool-timeout", DEADLINE, str(work)]) as (url, server):
            helper, sock_fd = await _helper_of(server.pid)
            fds_before = len(os.listdir(f"/proc/{server.pid}/fd"))
            with _let_go_on_failure(helper):
                for _attempt in range(50):
                    await until_idle(helper, sock_fd)
                    before = read_bytes(helper)
                    answers: list[str] = []
                    caught = False
                    async with anyio.create_task_group() as group:
                        group.start_soon(_grep_into, url, answers)
                        # Stop it once it reads a chunk's files: left its socket, its read counter moving.
                        while not answers:
                            if read_bytes(helper) > before and not _waiting_on_socket(helper, sock_fd):
                                os.kill(helper, signal.SIGSTOP)
                                while not _stopped(helper):
                                    await anyio.lowlevel.checkpoint()
                                # Holding a chunk: stopped away from its socket while the call is still waiting.
                                caught = not answers and not _waiting_on_socket(helper, sock_fd)
                                if not caught:
                                    os.kill(helper, signal.SIGCONT)
                                break
                            await anyio.lowlevel.checkpoint()
                    assert answers == [alone]
                    if caught:
                        break
                else:
                    pytest.fail("the helper was never caught holding a chunk in 50 calls")
            await _retired_and_reaped(url, server.pid, helper, fds_before, alone)
