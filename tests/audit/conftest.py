"""Shared helpers for the audit tests: run one audit with its trap under a test-owned directory, and prove it left
nothing behind (the trap directory gone, no process still naming the trap)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from rootbound.audit import AuditOptions, Report, ServerSpec, run_audit
from tests.helpers.processes import DEPS, require

HERE = Path(__file__).parent
FLAWED = HERE / "flawed_server.py"
PEERS = DEPS / "peers" / "node_modules"

Audit = Callable[..., Report]


def processes_naming(text: str) -> list[str]:
    """Command lines of live processes that mention ``text`` (the trap's unique path)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if text in cmdline and int(entry) != os.getpid():
            found.append(f"{entry}: {cmdline}")
    return found


def run_and_check(parent: Path, spec: ServerSpec, **options: Any) -> Report:
    """Run one audit with its trap under ``parent``; fail if it leaves a file or a process behind."""
    parent.mkdir(parents=True, exist_ok=True)
    before = set(os.listdir(parent))
    options.setdefault("stderr_log", parent.parent / f"{parent.name}.stderr.log")
    cwd = options.setdefault("server_cwd", parent.parent / f"{parent.name}.cwd")  # not the checkout: tests run at once
    cwd.mkdir(exist_ok=True)
    cwd_before = set(os.listdir(cwd))
    report = anyio.run(run_audit, AuditOptions(spec=spec, trap_dir=parent, **options))
    assert set(os.listdir(parent)) == before, f"the trap was left behind: {sorted(os.listdir(parent))}"
    assert report.trap.startswith(str(parent))
    assert processes_naming(report.trap) == [], "a server process outlived the audit"
    assert set(os.listdir(cwd)) == cwd_before, "a canary was left in the server's working directory"
    return report


def flawed_spec(*flags: str, workspace: bool = True) -> ServerSpec:
    return ServerSpec(command=(sys.executable, str(FLAWED), *flags, *(["{workspace}"] if workspace else [])))


def peer_spec(version: str) -> ServerSpec:
    script = require(PEERS / f"fs-{version}" / "dist" / "index.js", f"server-filesystem {version} (.deps/peers)")
    return ServerSpec(command=("node", str(script), "{workspace}"))


def causes(report: Report, tool: str | None = None) -> set[tuple[str, str, str]]:
    """(tool, class, kind) of every finding, optionally for one tool."""
    return {(f.tool, f.class_id, f.kind) for f in report.findings if tool is None or f.tool == tool}


def above_info(report: Report) -> list[str]:
    return [f"{f.severity} {f.class_id} {f.tool} {f.kind} {f.mode} {f.probe!r}" for f in report.at_or_above("low")]


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("audit")
