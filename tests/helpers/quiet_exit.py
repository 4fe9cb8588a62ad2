"""One stdio session as a host runs it, watched from outside (issue 50 item 5): start the command, initialize, list
the tools, grep once the scan helper waits for work, close stdin, and see when the server exited, when its stderr
reached its end (no process holds it any more), what stderr said, and which of its processes are left.

Used by ``tests/packaging/test_installers.py`` (pipx, uvx, ``python -m``) and ``bench/stderr_eof.py``. Plain
JSON-RPC over pipes, no SDK client: the client must not hold the server's stderr itself."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.scan_helper_probe import HELPER_MODULE

__all__ = ["Session", "descendants", "run_session"]


@dataclass(frozen=True)
class Session:
    exit_code: int
    stderr: list[str]
    eof_after_exit: float
    """Seconds from the server's exit (its wait returned) to its stderr's end; negative: the end came first."""
    helpers: list[int]
    """The scan helpers seen while it ran (none on one CPU, or with --no-scan-helper)."""
    at_exit: list[int]
    """Processes of the session alive when the server's exit was seen (its wait returned): a helper must be gone."""
    left: list[int]
    """Processes of the session still alive 1 s after the server's exit."""
    grep_files: int


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], [pid]
    while frontier:
        below = [child for child, parent in parents.items() if parent in frontier]
        found.extend(below)
        frontier = below
    return found


def _helpers(pid: int) -> list[int]:
    found = []
    for child in descendants(pid):
        try:
            if HELPER_MODULE in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0"):
                found.append(child)
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _idle(pid: int) -> bool:
    """Whether a scan helper is blocked reading its socket (ready, between chunks)."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    sock = int(argv[argv.index(HELPER_MODULE) + 1])
    fields = Path(f"/proc/{pid}/syscall").read_text().split()
    return len(fields) > 1 and fields[0] != "running" and int(fields[1], 16) == sock


def run_session(
    argv: Sequence[str],
    workspace: Path,
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    helper: bool = True,
    deadline: float = 240,
) -> Session:
    """Run one session of ``argv`` (a ``rootbound serve`` serving ``workspace``); ``helper``: wait for the scan
    helper to be ready before the grep (when the machine has two CPUs)."""
    server = subprocess.Popen(
        list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(env), cwd=cwd
    )
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    said: list[bytes] = []
    eof_at: list[float] = []

    def drain() -> None:
        assert server.stderr is not None
        while chunk := os.read(server.stderr.fileno(), 65536):
            said.append(chunk)
        eof_at.append(time.monotonic())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    ends = time.monotonic() + deadline
    try:

        def ask(method: str, params: dict[str, object], ident: int | None) -> dict[str, object] | None:
            assert server.stdin is not None and server.stdout is not None
            message: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": params}
            if ident is not None:
                message["id"] = ident
            server.stdin.write(json.dumps(message).encode() + b"\n")
            server.stdin.flush()
            while ident is not None:
                line = server.stdout.readline()
                assert line, "the server closed stdout"
                answer = json.loads(line)
                if answer.get("id") == ident:
                    return dict(answer)
            return None

        client = {"name": "probe", "version": "1"}
        hello: dict[str, object] = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        assert "result" in (ask("initialize", hello, 1) or {})
        ask("notifications/initialized", {}, None)
        listed = ask("tools/list", {}, 2) or {}
        assert "grep" in json.dumps(listed)
        helpers: list[int] = []
        if helper and len(os.sched_getaffinity(0)) > 1:
            while not (helpers := _helpers(server.pid)) or not all(_idle(pid) for pid in helpers):
                assert time.monotonic() < ends, "the scan helper never got ready"
                time.sleep(0.05)
        called = ask("tools/call", {"name": "grep", "arguments": {"pattern": "needle", "files_only": True}}, 3) or {}
        result = called.get("result")
        assert isinstance(result, dict) and not result.get("isError"), called
        files = len(result["structuredContent"]["files"])
        session = [*descendants(server.pid)]
        server.stdin.close()
        exit_code = server.wait(max(1.0, ends - time.monotonic()))
        exited = time.monotonic()
        at_exit = [pid for pid in session if _alive(pid)]
        reader.join(max(1.0, ends - time.monotonic()))
        assert eof_at, "stderr never reached its end"
        time.sleep(max(0.0, exited + 1.0 - time.monotonic()))
        left = [pid for pid in session if _alive(pid)]
        lines = b"".join(said).decode(errors="replace").splitlines()
        return Session(exit_code, lines, eof_at[0] - exited, helpers, at_exit, left, files)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
