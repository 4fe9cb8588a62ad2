"""Quick read-only calls on a one-client (stdio) server are tried on the event loop when every root is on a local
disk; everything else, and a call that runs past its slice, runs on a worker thread (issue 15: the thread hop is
0.1-0.3 ms, as much as a small read).

In-process, through the real ``Server.run`` loop: a spy on the tool dispatcher records which thread ran each
call. Over a real stdio subprocess: a ping is answered while a long walk, moved off the loop, still runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import rootbound.workspace.server as server_module
from rootbound.workspace.server import WorkspaceConfig, build_workspace_server
from rootbound.workspace.tools.calls import Budget, SliceOver, ToolError
from tests.helpers.raw_peer import raw_connection
from tests.helpers.trees import local_dir

pytestmark = pytest.mark.anyio


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a5f1d5d40000000049454e44ae426082"
)


class Ran(list[tuple[str, bool]]):
    """``(tool, on the event loop thread)`` for every time the tool dispatcher ran."""

    loop = 0


@pytest.fixture(autouse=True)
def roomy_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process, a quick call gets a slice no loaded machine outlasts, so where it *starts* is what these tests
    see; a call past its slice has its own test (the slice set to 0 there), and the stdio subprocess test below
    runs with the real one."""
    monkeypatch.setattr(server_module, "INLINE_SLICE", 60.0)


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> Ran:
    record = Ran()
    real = server_module.call_tool_in  # type: ignore[attr-defined]  # the name the server calls

    def spy(name: str, *args: Any, **kwargs: Any) -> Any:
        record.append((name, threading.get_ident() == record.loop))
        return real(name, *args, **kwargs)

    monkeypatch.setattr(server_module, "call_tool_in", spy)
    return record


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = local_dir(tmp_path) / "work"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "a.png").write_bytes(PNG)
    (root / "sub").mkdir()
    for index in range(300):
        (root / "sub" / f"f{index}.txt").write_text(f"line {index}\n")
    return root


async def _calls(config: WorkspaceConfig, ran: Ran, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    server, _ = build_workspace_server(config)
    ran.loop = threading.get_ident()
    answers = []
    with anyio.fail_after(60):
        async with raw_connection(server, capabilities={}) as peer:  # no roots capability: the DIRs are the roots
            for name, arguments in calls:
                answer = await peer.call_tool(name, arguments)
                assert "error" not in answer, answer
                assert not answer["result"]["isError"], (name, answer)
                answers.append(answer["result"])
    return answers


QUICK: list[tuple[str, dict[str, Any]]] = [
    ("stat", {"path": "a.txt"}),
    ("read_file", {"path": "a.txt"}),
    ("read_multiple_files", {"paths": ["a.txt", "sub/f1.txt"]}),
    ("list_directory", {"path": "sub"}),
    ("read_media_file", {"path": "a.png"}),
    ("list_roots", {}),
]


async def test_quick_calls_run_on_the_loop_once_the_roots_are_held(work: Path, ran: Ran) -> None:
    config = WorkspaceConfig(dirs=(work,), inline_quick_calls=True)
    answers = await _calls(config, ran, [("stat", {"path": "a.txt"}), *QUICK])
    # The first call takes the roots in (paths opened by name): a worker thread. Then every quick call on the loop.
    assert ran == [("stat", False)] + [(name, True) for name, _ in QUICK]
    assert all(not answer["isError"] for answer in answers), answers


async def test_the_same_answers_on_the_loop_and_on_threads(work: Path, ran: Ran) -> None:
    inline = await _calls(
        WorkspaceConfig(dirs=(work,), inline_quick_calls=True), ran, [("stat", {"path": "a.txt"}), *QUICK]
    )
    threaded = await _calls(WorkspaceConfig(dirs=(work,)), ran, [("stat", {"path": "a.txt"}), *QUICK])

    def steady(answer: dict[str, Any]) -> str:
        text = json.dumps(answer, sort_keys=True)
        return text.replace(str(work), "ROOT")

    assert [steady(a) for a in inline[1:]] == [steady(a) for a in threaded[1:]]


async def test_never_on_the_loop_without_the_option_or_for_grep_and_writes(work: Path, ran: Ran) -> None:
    await _calls(WorkspaceConfig(dirs=(work,)), ran, QUICK)  # HTTP's setting: many sessions share the loop
    assert ran and not any(on_loop for _, on_loop in ran)
    ran.clear()
    config = WorkspaceConfig(dirs=(work,), writable=True, inline_quick_calls=True)
    await _calls(
        config,
        ran,
        [
            ("stat", {"path": "a.txt"}),
            ("grep", {"pattern": "line 1"}),  # one engine call on a hostile pattern can outlast any slice
            ("search_files", {"pattern": "f1*.txt"}),  # a walk compiles ignore files between two checks
            ("write_file", {"path": "new.txt", "content": "x"}),
            ("stat", {"path": "new.txt"}),
        ],
    )
    assert ran == [("stat", False), ("grep", False), ("search_files", False), ("write_file", False), ("stat", True)]


async def test_reads_stay_on_threads_when_the_operator_allows_large_ones(work: Path, ran: Ran) -> None:
    from rootbound.workspace.server import INLINE_MAX_READ
    from rootbound.workspace.tools import Limits

    large = WorkspaceConfig(dirs=(work,), inline_quick_calls=True, limits=Limits(max_read=INLINE_MAX_READ + 1))
    await _calls(large, ran, [("stat", {"path": "a.txt"}), ("read_file", {"path": "a.txt"})])
    assert ran == [("stat", False), ("read_file", False)]


async def test_roots_not_known_to_be_local_run_on_threads(work: Path, ran: Ran) -> None:
    config = WorkspaceConfig(dirs=(Path("/proc"),), inline_quick_calls=True)
    answers = await _calls(config, ran, [("stat", {"path": "version"}), ("read_file", {"path": "version"})])
    assert ran == [("stat", False), ("read_file", False)]
    assert not answers[0]["isError"] and answers[0]["structuredContent"]["type"] == "file"


async def test_a_call_past_its_slice_starts_again_on_a_thread(
    work: Path, ran: Ran, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "INLINE_SLICE", 0.0)  # every budget check past the slice
    config = WorkspaceConfig(dirs=(work,), inline_quick_calls=True)
    listing = ("list_directory", {"path": "sub", "details": True})
    answers = await _calls(config, ran, [("stat", {"path": "a.txt"}), ("stat", {"path": "a.txt"}), listing])
    # A stat checks no budget: it ends on the loop. A listing checks it: tried, then run again on a thread.
    assert ran == [("stat", False), ("stat", True), ("list_directory", True), ("list_directory", False)]
    assert len(answers[2]["structuredContent"]["entries"]) == 300


def test_a_sliced_budget() -> None:
    budget = Budget(30.0)
    budget.slice(0.0)
    time.sleep(0.001)
    with pytest.raises(SliceOver):
        budget.check()
    assert budget.steps == 1
    budget.unslice()
    assert budget.steps == 0
    budget.check()  # the whole deadline again
    whole = budget.deadline
    budget.slice(10.0)
    assert whole - 21 < budget.deadline < whole - 19  # 10 s of the 30 left
    budget.unslice()
    assert budget.deadline == whole
    over = Budget(0.0)
    over.slice(5.0)
    with pytest.raises(ToolError, match="per-call deadline"):  # the deadline, not the slice, ended it
        over.check()
    over.unslice()
    with pytest.raises(ToolError, match="per-call deadline"):
        over.check()


def test_a_ping_is_answered_while_a_long_listing_runs_over_stdio(tmp_path: Path) -> None:
    root = local_dir(tmp_path) / "wide"
    (root / "w").mkdir(parents=True)
    for index in range(30_000):  # sorted by size with details: ~0.1 s, checked every 1,024 entries
        os.close(os.open(root / "w" / f"f{index}", os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
    process = subprocess.Popen(
        [sys.executable, "-m", "rootbound", "serve", "--no-sandbox", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert process.stdin is not None and process.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            }
        )
        assert json.loads(process.stdout.readline())["id"] == 0
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "list_directory", "arguments": {"path": "w", "details": True, "sort_by": "size"}}
        send(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "stat", "arguments": {"path": "w"}}}
        )
        held = json.loads(process.stdout.readline())
        assert held["id"] == 1 and not held["result"]["isError"]  # the roots are held from here on
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})  # far past the 2 ms slice
        time.sleep(0.02)  # sent once the listing is under way, not read together with it
        send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        order = [json.loads(process.stdout.readline())["id"] for _ in range(2)]
        assert order == [3, 2]  # the listing left the loop after its slice; the ping did not wait for it
    finally:
        process.stdin.close()
        process.wait(30)
        process.stdout.close()


def test_the_event_loop_never_waits_for_the_held_roots(work: Path) -> None:
    from rootbound.core.roots import RootSet
    from rootbound.workspace.effective_roots import HeldBoundaries

    held = HeldBoundaries([work])
    roots = RootSet.of([work])
    with held.held_for(roots) as boundary:
        assert boundary is None  # not taken in yet: that opens paths by name, for a worker thread to do
    with held.for_roots(roots) as taken:
        assert taken.roots[0].path == work
    with held.held_for(roots) as boundary:
        assert boundary is taken
    held._lock.acquire()  # another thread taking a snapshot in, which may wait on a slow file system
    try:
        with held.held_for(roots) as boundary:
            assert boundary is None  # at once, not after the lock is free
    finally:
        held._lock.release()
    taken.close()
    with held.held_for(roots) as boundary:
        assert boundary is None  # closed: taking it in again is a worker thread's job
