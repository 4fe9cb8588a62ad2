"""Resources calls under issue 48's per-client accounting, decided by counting (issue 49): a greedy client whose
``resources/read`` calls all block on their worker threads holds at most its share of the workers (32, one client
at most 24), and another client's read is answered while every one of those calls is still blocked.

Why in process: over HTTP on a loaded 2-core machine the event loops, not the worker threads, are what a flood
saturates (measured: 160 calls in flight, the worker queue peaked at 16 to 20 calls), so the flood test
(``tests/reliability/test_greedy_resources.py``) is answered the same with or without the per-client slots. Here
the greedy client's work waits on a gate: without the slots it would take all 32 workers and the victim's read
would queue behind it until the gate opened (the test fails at its bound). Counted, never timed: the bounds below
bound waiting only.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

import rootbound.workspace.resources.contents as contents
import rootbound.workspace.resources.handlers as handlers
from rootbound.core.uri import path_to_uri
from rootbound.workspace.limits.call_slots import WORKERS
from rootbound.workspace.server import WorkspaceConfig, build_workspace_server
from tests.helpers.raw_peer import raw_connection
from tests.helpers.trees import local_dir

pytestmark = pytest.mark.anyio
WAIT = 60.0  # a bound on waiting, never a measurement
GREEDY = 64  # the greedy client's reads in flight at once: twice the process's workers
SHARE = WORKERS - WORKERS // 4  # one client's most (24 of 32)


class Gate:
    """The greedy client's reads wait here, on their worker threads, counted."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.lock = threading.Lock()
        self.inside = 0
        self.most = 0

    def hold(self) -> None:
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        try:
            self.open.wait(WAIT)
        finally:
            with self.lock:
                self.inside -= 1


async def test_a_greedy_clients_blocked_reads_leave_another_clients_read_its_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = local_dir(tmp_path) / "work"
    for name in ("greedy", "victim"):
        (root / name).mkdir(parents=True)
        (root / name / "a.txt").write_text(f"{name}\n")
    gate = Gate()
    real = contents.read_resource  # what the resources/read handler calls, by its name in handlers

    def read_resource(fs: Any, request: Any) -> Any:
        if "/greedy/" in request.uri:
            gate.hold()
        return real(fs, request)

    monkeypatch.setattr(handlers, "read_resource", read_resource)
    server, _ = build_workspace_server(WorkspaceConfig(dirs=(root,)))  # HTTP's setting: every call on a worker
    greedy_uri, victim_uri = path_to_uri(root / "greedy" / "a.txt"), path_to_uri(root / "victim" / "a.txt")
    try:
        with anyio.fail_after(WAIT):
            async with (
                raw_connection(server, capabilities={}) as greedy,  # no roots capability: the DIRs are the roots
                raw_connection(server, capabilities={}) as victim,
            ):
                ids = [greedy.next_id() for _ in range(GREEDY)]
                for request_id in ids:
                    await greedy.send(
                        {"jsonrpc": "2.0", "id": request_id, "method": "resources/read", "params": {"uri": greedy_uri}}
                    )
                while gate.inside < SHARE:  # the greedy client's share is taken, every call of it blocked
                    await anyio.sleep(0.01)
                with anyio.fail_after(WAIT / 2):  # without the per-client slots: queued behind the gate, never answered
                    answer = await victim.request("resources/read", {"uri": victim_uri})
                assert answer["result"]["contents"][0]["text"] == "victim\n", answer
                assert gate.inside == gate.most == SHARE  # at most its share at once, all still blocked
                gate.open.set()
                for answered in (await greedy.responses(ids)).values():  # then every greedy call is answered
                    assert answered["result"]["contents"][0]["text"] == "greedy\n", answered
    finally:
        gate.open.set()  # a failed run leaves no thread waiting on the gate
