"""Real servers, installed from npm into .deps/peers: the reference filesystem server's advisories are reproduced
with evidence (CVE-2025-53110 prefix bypass, CVE-2025-53109 symlink bypass, read and write), its fixed release and
``rootbound serve`` show nothing above info. Each scan's time is printed with the test output."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from rootbound.audit import Report, ServerSpec
from tests.audit.conftest import above_info, peer_spec, run_and_check
from tests.helpers.processes import report as print_report

SYMLINK_CLASSES = {"symlink-leaf", "symlink-parent", "symlink-prefix"}


def _scan(request: pytest.FixtureRequest, parent: Path, label: str, spec: ServerSpec, **options: object) -> Report:
    started = time.monotonic()
    result = run_and_check(parent, spec, **options)
    took = time.monotonic() - started
    modes = ", ".join(f"{m.mode} {m.status} {m.seconds:.1f}s/{m.calls} calls" for m in result.modes)
    print_report(request.config, f"audit timing: {label}", [f"{took:.1f}s total ({modes})"])
    return result


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
    assert result.exit_code("low") == 1
    # 0.6.2 and 2025.3.28 need a directory argument: roots mode is "unsupported", not a failure
    assert result.modes[1].status == "roots unsupported"


def test_fixed_release_is_clean(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    result = _scan(request, tmp_path, "server-filesystem 2.0.1 --write", peer_spec("2.0.1"), write=True)
    assert above_info(result) == []
    assert result.modes[0].tested and result.modes[1].tested, [m.status for m in result.modes]
    assert result.exit_code("low") == 0


def test_rootbound_serve_is_clean(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # Roots mode runs it without DIRs, where client roots are confined to the serving user's home unless the
    # operator trusts them (issue 16): the trap lives in a temp dir, so say so explicitly.
    command = (sys.executable, "-m", "rootbound", "serve", "--writable", "--trust-client-roots", "{workspace}")
    spec = ServerSpec(command=command)
    result = _scan(request, tmp_path, "rootbound serve --write", spec, write=True)
    assert above_info(result) == []
    assert [m.status for m in result.modes] == ["ok", "ok", "ok"], [(m.mode, m.status, m.detail) for m in result.modes]
    tested = {t.name for t in result.modes[2].tools if t.tested}
    assert {"read_file", "list_directory", "stat", "write_file"} <= tested


def test_latest_release_findings(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """server-filesystem 2026.8.31 (pinned): a trailing-space sibling is listable, and withdrawn roots stay served."""
    result = _scan(request, tmp_path, "server-filesystem 2026.8.31 (roots)", peer_spec("2026.8.31"), modes="roots")
    found = {(f.tool, f.class_id, f.kind) for f in result.findings}
    assert ("list_directory", "normaliser", "list") in found
    listing = next(f for f in result.findings if (f.tool, f.class_id) == ("list_directory", "normaliser"))
    assert listing.location == "ws " and listing.probe.endswith("/ws ")
    assert ("read_text_file", "empty-roots", "roots") in found
    assert {f.severity for f in result.findings} <= {"info", "medium", "high"}
