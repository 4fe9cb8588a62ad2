"""``rootbound audit`` end to end: exit codes, report formats, ``-o``, usage errors, HTTP. The CLI runs in-process
(``rootbound.cli.main``, the console script's entry point) to keep the suite fast; one test runs the real
``python -m rootbound audit`` subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rootbound.cli import main
from tests.audit.conftest import FLAWED, processes_naming
from tests.helpers.processes import python_env

AUDIT = [sys.executable, "-m", "rootbound", "audit"]
SMALL = "--tools=read_prefix,read_safe,write_dangling,exec_command"  # the flawed server, cut to what these tests read


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


_capsys: pytest.CaptureFixture[str] | None = None


@pytest.fixture(autouse=True)
def _capture(capsys: pytest.CaptureFixture[str]) -> Iterator[None]:
    global _capsys
    _capsys = capsys
    yield
    _capsys = None


def run(*args: str) -> Result:
    """``rootbound audit ARGS`` through the console script's entry point, in this process."""
    assert _capsys is not None
    _capsys.readouterr()
    code = main(["audit", *args])
    out, err = _capsys.readouterr()
    return Result(code, out, err)


@pytest.mark.parametrize(
    "args",
    [
        [],  # no server
        ["--url", "http://127.0.0.1:1/mcp"],  # --url without --start
        ["--url", "http://example.com/mcp", "--start", "x", "--"],  # not loopback
        ["--url", "http://10.0.0.1:{port}/mcp", "--start", "x"],  # not loopback
        ["--mode", "args", "--", sys.executable, "x.py"],  # args mode without {workspace}
        ["--header", "nocolon", "--", "x", "{workspace}"],
        ["--timeout", "0", "--", "x", "{workspace}"],
        ["--bogus-flag", "--", "x", "{workspace}"],
        ["--roots-cmd", "srv {workspace}", "--", "srv", "{workspace}"],  # the roots command has no workspace
        ["--roots-cmd", "", "--", "srv", "{workspace}"],
    ],
)
def test_usage_errors_exit_64(args: list[str]) -> None:
    result = run(*args)
    assert result.returncode == 64, result.stderr
    assert "Traceback" not in result.stderr


def test_server_that_does_not_start_is_incomplete(tmp_path: Path) -> None:
    """A real subprocess of the console entry point, the one place the suite starts ``rootbound audit`` itself."""
    exits = [sys.executable, "-c", "import sys; sys.exit(3)", "{workspace}"]
    result = subprocess.run(
        [*AUDIT, "--trap-dir", str(tmp_path), "-q", "--", *exits],
        capture_output=True,
        text=True,
        timeout=60,
        env=python_env(),
        check=False,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "did not start" in result.stdout
    assert list(tmp_path.iterdir()) == []


def test_server_that_does_not_start_in_process(tmp_path: Path) -> None:
    result = run(
        "--trap-dir", str(tmp_path), "-q", "--", sys.executable, "-c", "import sys; sys.exit(3)", "{workspace}"
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "did not start" in result.stdout
    assert list(tmp_path.iterdir()) == []


def test_json_report_to_file_and_exit_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls.log"
    monkeypatch.setenv("FLAWED_CALL_LOG", str(calls))
    out = tmp_path / "report.json"
    traps = tmp_path / "traps"
    traps.mkdir()
    result = run(
        "--trap-dir", str(traps), "--mode", "args", "--format", "json", "-o", str(out),
        "--", sys.executable, str(FLAWED), SMALL, "{workspace}",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert "root cause" in result.stderr  # the summary still reaches the terminal
    report = json.loads(out.read_text())
    # without --write the writer is not tested, and exec_command never is: both are gaps, named with the reason
    assert report["incomplete"] is True and report["verdict"] == "findings"
    gaps = "\n".join(report["gaps"])
    assert "write_dangling path not tested: may modify files" in gaps
    assert "exec_command path not tested: looks like exec" in gaps
    rows = {(r["tool"], r["param"]): r["status"] for r in report["coverage"] if r["mode"] == "args"}
    assert rows[("read_prefix", "path")] == "tested" and rows[("write_dangling", "path")] == "not tested"
    finding = next(f for f in report["findings"] if f["tool"] == "read_prefix" and f["class_id"] == "prefix-bypass")
    assert finding["severity"] == "high" and finding["mode"] == "args" and finding["kind"] == "read"
    assert finding["class"] == "prefix-bypass"
    assert finding["request"]["method"] == "tools/call"
    assert finding["request"]["params"]["name"] == "read_prefix"
    assert list(traps.iterdir()) == []
    called = set(calls.read_text().split())
    assert "read_prefix" in called
    assert not called & {"write_dangling", "exec_command"}, "without --write no tool that may modify is called"
    calls.unlink()
    # --fail-on critical: read escapes are high, so nothing at or above critical (no --write); the untested
    # writer and exec tool make it incomplete (2), unless --accept-partial accepts the listed gaps (0)
    again = run(
        "--trap-dir", str(traps), "--mode", "args", "-q", "--fail-on", "critical",
        "--", sys.executable, str(FLAWED), SMALL, "{workspace}",
    )  # fmt: skip
    assert again.returncode == 2, again.stdout
    assert again.stdout.index("Coverage: INCOMPLETE") < again.stdout.index("root cause")  # coverage leads
    accepted = run(
        "--trap-dir", str(traps), "--mode", "args", "-q", "--fail-on", "critical", "--accept-partial",
        "--", sys.executable, str(FLAWED), SMALL, "{workspace}",
    )  # fmt: skip
    assert accepted.returncode == 0, accepted.stdout
    assert "accepted with --accept-partial" in accepted.stdout


def test_sarif_report(tmp_path: Path) -> None:
    result = run("--trap-dir", str(tmp_path), "--mode", "args", "-q", "--format", "sarif",
                 "--", sys.executable, str(FLAWED), SMALL, "{workspace}")  # fmt: skip
    assert result.returncode == 1
    sarif = json.loads(result.stdout)
    assert sarif["version"] == "2.1.0"
    run0 = sarif["runs"][0]
    rules = [r["id"] for r in run0["tool"]["driver"]["rules"]]
    assert len(rules) == len(set(rules)) and "prefix-bypass" in rules and "stale-roots" in rules
    levels = {r["ruleId"]: r["level"] for r in run0["results"] if r["properties"]["tool"] == "read_prefix"}
    assert levels["prefix-bypass"] == "error"
    for r in run0["results"]:
        assert rules[r["ruleIndex"]] == r["ruleId"]
        assert r["partialFingerprints"]["rootboundAudit/v1"]
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    # fingerprints hash the stable parts only: a second run (new random trap) gives the same set
    second = json.loads(
        run(
            "--trap-dir",
            str(tmp_path),
            "--mode",
            "args",
            "-q",
            "--format",
            "sarif",
            "--",
            sys.executable,
            str(FLAWED),
            SMALL,
            "{workspace}",
        ).stdout
    )
    prints = {r["partialFingerprints"]["rootboundAudit/v1"] for r in run0["results"]}
    assert prints == {r["partialFingerprints"]["rootboundAudit/v1"] for r in second["runs"][0]["results"]}


def test_http_server_started_and_stopped_by_the_audit(tmp_path: Path) -> None:
    start = f"{sys.executable} -m rootbound serve --http 127.0.0.1:{{port}} {{workspace}}"
    result = run("--trap-dir", str(tmp_path), "--mode", "args", "--format", "json",
                 "--url", "http://127.0.0.1:{port}/mcp", "--start", start)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["modes"][0]["status"] == "ok"
    assert any(t["tested"] for t in report["modes"][0]["tools"])
    assert [f for f in report["findings"] if f["severity"] != "info"] == []
    assert list(tmp_path.iterdir()) == []
    assert processes_naming(report["trap"]) == []


def test_serve_does_not_import_the_audit_package() -> None:
    code = "import sys; from rootbound import cli; cli.build_parser(); print('rootbound.audit' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=python_env(), check=True)
    assert result.stdout.strip() == "False"


def test_replay_rebuilds_the_trap_and_reproduces_a_finding(tmp_path: Path) -> None:
    """A JSON report names its trap's seed: --replay rebuilds the same trap (the request's paths are valid again),
    sends that one request and judges the answer again."""
    traps = tmp_path / "traps"
    traps.mkdir()
    out = tmp_path / "report.json"
    first = run("--trap-dir", str(traps), "--mode", "args", "-q", "--format", "json", "-o", str(out),
                "--", sys.executable, str(FLAWED), SMALL, "{workspace}")  # fmt: skip
    assert first.returncode == 1
    report = json.loads(out.read_text())
    number = 1 + next(i for i, f in enumerate(report["findings"]) if f["class_id"] == "prefix-bypass")
    assert list(traps.iterdir()) == []  # removed after the audit ...
    again = run("--replay", str(out), str(number), "--use-report-command")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "evidence token of ws-evil/" in again.stdout
    assert list(traps.iterdir()) == []  # ... and after the replay
    assert run("--replay", str(out), "99").returncode == 64


def test_relative_command_paths_are_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server runs with its cwd in the trap: ``python flawed_server.py`` typed in its folder still starts."""
    monkeypatch.chdir(FLAWED.parent)
    result = run("--trap-dir", str(tmp_path), "--mode", "args", "-q", "--",
                 sys.executable, f"./{FLAWED.name}", SMALL, "{workspace}")  # fmt: skip
    assert result.returncode == 1, result.stdout
    assert f"{FLAWED}" in result.stdout.splitlines()[0]
