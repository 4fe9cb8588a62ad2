"""Issue 16 #1 and #3: a grep stopped by the per-call deadline really stops, over a real ``rootbound serve``.

RE2 is linear-time, but when its DFA runs out of memory it falls back to the NFA: ``((a{1,10}){1,10}){1,10}x``
crawls at tens of KB/s over runs of ``a``. A grep used to search a whole file in one engine call, and the deadline
was checked only between files, so after the server answered "stopped after 1 s" the abandoned worker thread kept
a core busy for over a minute per 4 MiB file (and a client can start many). Now the scanner searches in small
windows with a check between them: the server's CPU time must stop growing right after the answer. Measured from
``/proc/<pid>/stat`` (utime + stime of every thread), with slack for a loaded 2-core machine: the old code burns
about a core-second per second for a minute; the bound here is 0.45 s over three seconds.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from rootbound.mcp import RootsProvider
from rootbound.search.index.tree_index import THREAD_NAME as INDEX_THREAD
from tests.helpers.serve_process import serve, text_of

SLOW = r"((a{1,10}){1,10}){1,10}x"
TICKS = os.sysconf("SC_CLK_TCK")


def _children() -> set[int]:
    found: set[int] = set()
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            found.update(int(pid) for pid in Path(f"/proc/{os.getpid()}/task/{task}/children").read_text().split())
        except OSError:
            continue
    return found


def _server_pid(before: set[int]) -> int:
    for pid in sorted(_children() - before):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"rootbound" in command and b"serve" in command:
            return pid
    raise AssertionError("the server process was not found among this process's children")


def _cpu_seconds(pid: int) -> float:
    """CPU seconds of the server's threads now, but for the search index's build: background work of its own, at
    nice 10, started by the first grep (docs/search-index.md), which is not the grep that must stop."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            if Path(f"/proc/{pid}/task/{task}/comm").read_text().strip() == INDEX_THREAD:
                continue
            fields = Path(f"/proc/{pid}/task/{task}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat(5)
    return total / TICKS


def _planted(base: Path, line: int = 20_000, files: int = 3) -> Path:
    """``files`` files of 2 MB, of ``line``-byte runs of ``a``: minutes of NFA work each when lines are long (over
    ~600 bytes RE2's DFA runs out of memory), about a second each when short. Lines longer than a search window
    may be refused as "too slow" once their pace is known; short ones are searched until stopped."""
    root = base.resolve() / "long"
    root.mkdir()
    text = b"a" * line + b"\n"
    for number in range(files):
        (root / f"f{number:02}.txt").write_bytes(text * (2_000_000 // line))
    return root


async def _cpu_after(pid: int) -> float:
    """CPU seconds the server uses in 3 s, from 2 s after the answer (a window may still be finishing)."""
    await anyio.sleep(2)
    start = _cpu_seconds(pid)
    await anyio.sleep(3)
    return _cpu_seconds(pid) - start


@pytest.mark.anyio
@pytest.mark.parametrize(("transport", "mode"), [("stdio", "legacy"), ("http", "2026-07-28")])
async def test_a_timed_out_grep_stops_burning_cpu(tmp_path: Path, transport: str, mode: str) -> None:
    root = _planted(tmp_path)
    before = _children()
    with anyio.fail_after(90):
        async with serve(
            transport, ["--tool-timeout", "1", str(root)], mode=mode, provider=RootsProvider([root])
        ) as client:
            pid = _server_pid(before)
            began = time.monotonic()
            result = await client.call_tool("grep", {"pattern": SLOW, "regex": True})
            answered = time.monotonic() - began
            assert result.is_error
            text = getattr(result.content[0], "text", "")
            assert "deadline" in text or "too slow" in text, text
            assert SLOW not in text
            assert answered < 10
            burnt = await _cpu_after(pid)
            assert burnt < 0.45, f"the server used {burnt:.2f} CPU seconds in the 3 s after answering"
            again = await client.call_tool("grep", {"pattern": "a{3}b", "regex": True})  # and it still serves
            assert not again.is_error


@pytest.mark.anyio
@pytest.mark.parametrize(("transport", "mode"), [("http", "legacy"), ("stdio", "2026-07-28")])
async def test_a_cancelled_grep_stops_burning_cpu(tmp_path: Path, transport: str, mode: str) -> None:
    """The client gives up once the server has spent 0.3 CPU seconds on the grep (``notifications/cancelled``),
    while the deadline is a minute away. Lines of 200 bytes, shorter than the smallest search window
    (``grep_scan.WINDOW_MIN``): never a line longer than a window, which a loaded machine's slow pace could get
    refused as too slow, ending the grep before the client cancels it; 60 MB of them, tens of CPU seconds."""
    root = _planted(tmp_path, line=1_000)
    before = _children()
    with anyio.fail_after(90):
        async with serve(
            transport, ["--tool-timeout", "60", str(root)], mode=mode, provider=RootsProvider([root])
        ) as client:
            pid = _server_pid(before)
            error, _ = await text_of(client, "list_roots")  # the roots are known: the grep starts at once
            assert not error
            start = _cpu_seconds(pid)
            scope = anyio.CancelScope()

            async def grep() -> None:
                with scope:
                    await client.call_tool("grep", {"pattern": SLOW, "regex": True})

            async with anyio.create_task_group() as group:
                group.start_soon(grep)
                while _cpu_seconds(pid) - start <= 0.3:  # the grep is running (however loaded the machine)
                    await anyio.sleep(0.05)
                scope.cancel()  # the client gives up: notifications/cancelled
            assert scope.cancelled_caught
            burnt = await _cpu_after(pid)
            assert burnt < 0.45, f"the server used {burnt:.2f} CPU seconds in the 3 s after the cancel"
            error, _ = await text_of(client, "list_roots")
            assert not error


@pytest.mark.parametrize("tool", ["grep", "search_files"])
def test_a_library_caller_s_deadline_is_the_one_in_its_limits(tmp_path: Path, tool: str) -> None:
    """``call_tool`` without a budget in its context takes the deadline of the limits it is given, not the
    default's 30 s (a bench or a library user that raises it is obeyed; one that lowers it is stopped)."""
    from rootbound import Boundary, RootedFS
    from rootbound.workspace.tools import call_tool
    from rootbound.workspace.tools.calls import Limits, ToolError

    for n in range(150):
        (tmp_path / f"f{n:03d}.txt").write_text("needle\n")
    arguments = {"pattern": "needle" if tool == "grep" else "*.txt", "path": str(tmp_path)}
    with Boundary([tmp_path]) as boundary:
        fs = RootedFS(boundary)
        with pytest.raises(ToolError, match="per-call deadline"):
            call_tool(tool, fs, arguments, Limits(deadline=0.0))
        assert "f149.txt" in call_tool(tool, fs, arguments, Limits(deadline=600.0)).text
