"""Real servers, installed from npm into .deps/peers and from PyPI into .deps/git-servers: the reference filesystem
server's advisories are reproduced with evidence (CVE-2025-53110 prefix bypass, CVE-2025-53109 symlink bypass,
read and write; 2026.8.31's trailing-character write), its fixed releases and ``rootbound serve`` (run as the
README shows, apply_patch's paths probed inside its patch texts) are clean with full coverage, and
mcp-server-git's reads of repositories outside the workspace are found. Each scan's time is printed with the
test output."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pytest

from rootbound.audit import Report, ServerSpec
from rootbound.audit.trap import default_trap_dir, remove
from tests.audit.conftest import above_info, peer_spec, run_and_check
from tests.helpers.processes import DEPS, require
from tests.helpers.processes import report as print_report

SYMLINK_CLASSES = {"symlink-leaf", "symlink-parent", "symlink-prefix"}


def _scan(request: pytest.FixtureRequest, parent: Path, label: str, spec: ServerSpec, **options: object) -> Report:
    started = time.monotonic()
    result = run_and_check(parent, spec, **options)
    took = time.monotonic() - started
    modes = ", ".join(f"{m.mode} {m.status} {m.seconds:.1f}s/{m.calls} calls" for m in result.modes)
    print_report(request.config, f"audit timing: {label}", [f"{took:.1f}s total ({modes})"])
    return result


def _untested(result: Report) -> list[str]:
    return result.gaps()


@pytest.mark.parametrize("version", ["0.6.2", "2025.3.28"])
def test_vulnerable_releases_reproduce_both_cves(request: pytest.FixtureRequest, tmp_path: Path, version: str) -> None:
    result = _scan(request, tmp_path, f"server-filesystem {version} --write", peer_spec(version), write=True)
    found = {(f.class_id, f.kind) for f in result.findings}
    for kind in ("read", "write"):
        assert ("prefix-bypass", kind) in found, f"CVE-2025-53110 ({kind}) not reproduced: {sorted(found)}"
        assert {c for c, k in found if k == kind} & SYMLINK_CLASSES, f"CVE-2025-53109 ({kind}) not reproduced"
    read = next(f for f in result.findings if (f.class_id, f.kind) == ("prefix-bypass", "read"))
    assert read.severity == "high" and "token of ws-evil/" in read.evidence
    write = next(f for f in result.findings if (f.class_id, f.kind) == ("prefix-bypass", "write"))
    assert write.severity == "critical" and "outside the roots" in write.evidence
    assert ("move_file", "destination") in {(f.tool, f.param) for f in result.findings if f.kind == "write"}
    assert result.exit_code("low") == 1
    # these releases need a directory argument: roots mode is "unsupported" (not offered), not a gap
    assert result.modes[1].status == "roots unsupported"
    assert _untested(result) == []


@pytest.mark.parametrize("version", ["2025.7.1", "2.0.1"])
def test_fixed_releases_are_clean_with_full_coverage(
    request: pytest.FixtureRequest, tmp_path: Path, version: str
) -> None:
    result = _scan(request, tmp_path, f"server-filesystem {version} --write", peer_spec(version), write=True)
    assert above_info(result) == []
    assert _untested(result) == [], "a mode, tool or parameter went untested"
    assert result.modes[0].tested
    assert result.exit_code("low") == 0


def test_latest_release_trailing_character_write(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """server-filesystem 2026.8.31: ``W"`` or ``W `` passes the check (trimmed) and is created as written, outside
    every root: critical. Also its listing form (medium) and withdrawn roots still served (one finding)."""
    result = _scan(request, tmp_path, "server-filesystem 2026.8.31 --write", peer_spec("2026.8.31"), write=True)
    writes = {
        f.tool for f in result.findings if (f.class_id, f.kind, f.severity) == ("normaliser", "write", "critical")
    }
    assert {"write_file", "create_directory"} <= writes, sorted(writes)
    assert ("list_directory", "normaliser", "list") in {(f.tool, f.class_id, f.kind) for f in result.findings}
    empty = [f for f in result.findings if f.class_id == "empty-roots"]
    assert len(empty) == 1 and "read_text_file" in empty[0].tools
    assert result.exit_code("low") == 1
    assert _untested(result) == []


def test_rootbound_serve_as_the_readme_shows(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """``rootbound audit --write -- rootbound serve --writable {workspace}``: no --trust-client-roots. The trap is
    where the audit puts it by default (under the home directory, where the server accepts client roots), so all
    three modes are tested and the verdict is clean."""
    home_traps = default_trap_dir()
    if home_traps is None:
        pytest.skip("no usable home directory for the audit's default trap location")
    parent = Path(tempfile.mkdtemp(prefix="test-", dir=home_traps))
    try:
        spec = ServerSpec(command=(sys.executable, "-m", "rootbound", "serve", "--writable", "{workspace}"))
        log = tmp_path / "serve.stderr.log"  # nothing of the test's stays in the home directory
        result = _scan(request, parent, "rootbound serve --writable (README)", spec, write=True, stderr_log=log)
    finally:
        remove(parent)
    assert above_info(result) == []
    assert [m.status for m in result.modes] == ["ok", "ok", "ok"], [(m.mode, m.status, m.detail) for m in result.modes]
    # apply_patch's paths live in its patch text: probed there (its if_match[].path names the patch's file)
    assert _untested(result) == []
    assert result.exit_code("low") == 0
    tested = {t.name for t in result.modes[2].tools if t.tested}
    assert {"read_file", "list_directory", "stat", "write_file", "move_file", "apply_patch"} <= tested


def _git_server(name: str) -> str:
    return str(require(DEPS / "git-servers" / name / "bin" / "mcp-server-git", f"{name} (.deps/git-servers)"))


def test_git_server_2025_11_25_reads_any_repository(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """Before CVE-2025-68145's fix, ``--repository`` confines nothing: a log of an outside repository is read."""
    spec = ServerSpec(command=(_git_server("mcp-server-git-2025.11.25"), "--repository", "{workspace}"))
    result = _scan(request, tmp_path, "mcp-server-git 2025.11.25 (args)", spec, modes="args")  # roots: the corpus
    assert result.workspace_kind == "git"
    found = {(f.tool, f.class_id, f.kind, f.mode) for f in result.findings}
    assert ("git_log", "outside-absolute", "read", "args") in found, sorted(found)
    assert result.exit_code("low") == 1


def test_git_server_latest_ignores_roots(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The latest release confines to ``--repository`` (args mode: nothing found, every read tool tested) but has
    no roots support: in roots mode (the flag dropped with its value) it reads outside repositories."""
    spec = ServerSpec(command=(_git_server("mcp-server-git-2026.10.19"), "--repository", "{workspace}"))
    result = _scan(request, tmp_path, "mcp-server-git 2026.10.19", spec)
    args = result.modes[0]
    assert args.status == "ok" and [f for f in result.findings if f.mode == "args" and f.severity != "info"] == []
    assert all(p.status == "tested" for t in args.tools if t.access == "read" for p in t.params)
    ignored = [f for f in result.findings if f.class_id == "ignores-roots"]
    # each tool's read outside is its own finding at its own severity, beside the one "ignores roots" finding
    reads = [f for f in result.findings if f.mode == "roots" and f.class_id != "ignores-roots" and f.kind == "read"]
    assert ignored and reads and all(f.severity == "high" for f in reads), [(f.tool, f.class_id) for f in reads]
    assert result.exit_code("low") == 1
