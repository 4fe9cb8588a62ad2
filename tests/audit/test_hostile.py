"""A hostile server cannot make the audit unbounded, loud or lying: its stderr flood, hard links and file flood in
the trap cost bounded memory (peak RSS of a real ``rootbound audit`` process), its tool names and stderr are
escaped, its non-JSON stdout lines are counted (no tracebacks), and a grandchild that left the process group with
``setsid`` is killed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rootbound.audit import ServerSpec
from tests.audit.conftest import HERE, processes_naming, run_and_check
from tests.helpers.processes import python_env

HOSTILE = HERE / "hostile_server.py"
MIB = 1 << 20


def hostile(*flags: str) -> ServerSpec:
    return ServerSpec(command=(sys.executable, str(HOSTILE), *flags, "{workspace}"))


def audit_process(tmp_path: Path, *flags: str, budget: int = 60, timeout: int = 5) -> tuple[int, str, str, int]:
    """Run ``rootbound audit`` as a real process; (exit code, stdout, stderr, its peak RSS in bytes)."""
    traps = tmp_path / "traps"
    traps.mkdir(exist_ok=True)
    argv = [
        sys.executable, "-m", "rootbound", "audit", "--mode", "args", "--budget", str(budget), "--timeout",
        str(timeout), "--trap-dir",
        str(traps), "--stderr-log", str(tmp_path / "server.log"), "--", sys.executable, str(HOSTILE), *flags,
        "{workspace}",
    ]  # fmt: skip
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen(argv, stdout=o, stderr=e, env=python_env(), stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    assert list(traps.iterdir()) == [], "the trap was left behind"
    return proc.returncode, out.read_text(), err.read_text(), usage.ru_maxrss * 1024


def test_stderr_flood_costs_a_pipe_drain_not_memory(tmp_path: Path) -> None:
    code, out, err, peak = audit_process(tmp_path, "--stderr-mib", "512")
    assert code == 0, out + err
    assert peak < 300 * MIB, f"peak RSS {peak / MIB:.0f} MiB while the server wrote 512 MiB to stderr"
    log = tmp_path / "server.log"
    assert log.stat().st_size <= MIB + 4096 and "first 1048576 kept" in out
    assert str(log) in out and "\x1b" not in out + err


def test_hard_links_in_the_trap_are_read_once(tmp_path: Path) -> None:
    code, out, err, peak = audit_process(tmp_path, "--hardlinks", "2000")
    assert peak < 300 * MIB, f"peak RSS {peak / MIB:.0f} MiB with 2000 links to a 1 MiB file in the trap"
    assert "Traceback" not in err and code in (0, 2), out + err


def test_a_flooded_trap_stops_the_audit(tmp_path: Path) -> None:
    """More entries than a snapshot takes (2,000 here, 20,000 by default): the mode stops, the verdict is
    incomplete, and the trap (flood included) is still removed."""
    report = run_and_check(tmp_path / "traps", hostile("--files", "2500"), modes="args", max_entries=2000, timeout=30)
    assert report.exit_code("low") == 2
    assert "flooded" in report.modes[0].detail and "flooded the trap" in report.to_text()
    assert report.modes[0].calls == 1, "probing went on after the flood"


def test_server_text_is_escaped_and_stdout_noise_counted(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    report = run_and_check(tmp_path / "traps", hostile("--evil-names", "--stdout-noise", "50"), modes="args")
    text = report.to_text()
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert not any(line.startswith("YOUR AUDIT PASSED") for line in text.splitlines())
    assert "\\x1b]0;PWNED\\x07read_title" in text
    assert report.unparseable == 50 and "50 line(s) to stdout that are not JSON-RPC" in text
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "Failed to parse" not in captured.err


def test_setsid_grandchild_is_killed(tmp_path: Path) -> None:
    report = run_and_check(tmp_path / "traps", hostile("--setsid-child"), modes="args")  # checks no process left
    assert any("left running outside its group" in note for note in report.notes), report.notes
    assert processes_naming(report.trap) == []
