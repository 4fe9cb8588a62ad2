"""The flawed fixture server (one bug per tool) is caught class by class, with evidence; its correct tools and its
request-echoing errors produce nothing; stale roots and ignored roots are found over the real wire."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rootbound.audit import Report
from tests.audit.conftest import causes, flawed_spec, run_and_check

# tool -> the (class, kind) its one bug must be reported as
EXPECTED = {
    "read_nocheck": ("outside-absolute", "read"),
    "read_prefix": ("prefix-bypass", "read"),
    "read_lexical": ("symlink-leaf", "read"),
    "read_dotdot": ("dot-dot", "read"),
    "read_percent": ("percent-encoding", "read"),
    "read_uri": ("file-uri", "read"),
    "read_lookalike": ("normaliser", "read"),
    "read_backslash": ("backslash", "read"),
    "read_nul": ("nul-byte", "read"),
    "read_tilde": ("tilde", "read"),
    "read_cwd": ("cwd-relative", "read"),
    "list_lexical": ("symlink-parent", "list"),
    "stat_lexical": ("symlink-leaf", "meta"),
    "write_dangling": ("symlink-dangling-write", "write"),
    # schema shapes and parameters beyond the first
    "read_nested": ("outside-absolute", "read", "params.path"),
    "read_batch": ("prefix-bypass", "read", "files[].path"),
    "read_either": ("outside-absolute", "read", "paths[]"),
    "copy_file": ("outside-absolute", "write", "destination"),
    "edit_text": ("symlink-leaf", "write"),
    "write_trimmed": ("normaliser", "write"),
}
CORRECT = ("read_safe", "read_echo", "read_sloppy", "search_glob", "extract_text")


@pytest.fixture(scope="module")
def flawed(module_dir: Path) -> Report:
    log = module_dir / "exec.log"
    os.environ["FLAWED_EXEC_LOG"] = str(log)
    try:
        return run_and_check(module_dir / "traps", flawed_spec(), write=True, trap_home=True)
    finally:
        del os.environ["FLAWED_EXEC_LOG"]


@pytest.mark.parametrize("tool", sorted(EXPECTED))
def test_each_bug_is_caught_in_both_modes(flawed: Report, tool: str) -> None:
    class_id, kind, *rest = EXPECTED[tool]
    param = rest[0] if rest else "path"
    for mode in ("args", "roots"):
        found = [
            f
            for f in flawed.findings
            if (f.tool, f.class_id, f.kind, f.mode, f.param) == (tool, class_id, kind, mode, param)
        ]
        assert found, f"{tool}: no {class_id}/{kind} finding in {mode} mode; got {sorted(causes(flawed, tool))}"
        finding = found[0]
        assert finding.evidence and finding.request.startswith('{"jsonrpc": "2.0"')
        assert f'"name": "{tool}"' in finding.request


def test_correct_and_echoing_tools_produce_no_finding_above_info(flawed: Report) -> None:
    for tool in CORRECT:
        bad = [f for f in flawed.findings if f.tool == tool and f.severity != "info"]
        assert bad == [], f"{tool}: false positive {bad}"
        assert {f.class_id for f in flawed.findings if f.tool == tool} <= {"hardlink"}


def test_echoing_errors_really_echo(flawed: Report) -> None:
    """The echo tool is tested (its control passed), so its silence above is a real negative."""
    for mode in flawed.modes[:2]:
        status = {t.name: t for t in mode.tools}
        assert status["read_echo"].tested and status["read_echo"].probes > 20


def test_sloppy_schema_learnt_from_the_validation_error(flawed: Report) -> None:
    status = {t.name: t for t in flawed.modes[0].tools}
    assert status["read_sloppy"].tested, status["read_sloppy"].note


def test_exec_like_tool_is_never_called(flawed: Report, module_dir: Path) -> None:
    status = {t.name: t for t in flawed.modes[0].tools}
    assert status["exec_command"].access == "skip" and not status["exec_command"].tested
    assert not (module_dir / "exec.log").exists(), "exec_command was called"


def test_hardlinks_are_info_only(flawed: Report) -> None:
    hard = [f for f in flawed.findings if f.class_id == "hardlink"]
    assert hard and {f.severity for f in hard} == {"info"}


def test_roots_honoured_after_list_changed(flawed: Report) -> None:
    """The fixture re-asks for roots on list_changed: no stale-roots or empty-roots finding (read_nocheck's are
    folded into its missing check)."""
    assert [f for f in flawed.findings if f.class_id in ("stale-roots", "empty-roots")] == []
    assert flawed.modes[1].status == "ok"


def test_stale_roots_caught(module_dir: Path) -> None:
    report = run_and_check(module_dir / "traps", flawed_spec("--stale", workspace=False), modes="roots")
    stale = [f for f in report.findings if f.class_id == "stale-roots"]
    assert len(stale) == 1, "a server-wide behaviour is one finding per mode"
    assert set(stale[0].tools) >= {"read_safe", "read_echo", "list_lexical"}
    assert all(f.severity == "high" and "after the root was removed" in f.evidence for f in stale)


def test_withdrawn_roots_caught(module_dir: Path) -> None:
    report = run_and_check(module_dir / "traps", flawed_spec("--empty-means-all", workspace=False), modes="roots")
    empty = [f for f in report.findings if f.class_id == "empty-roots"]
    assert len(empty) == 1, "a server-wide behaviour is one finding per mode"
    assert set(empty[0].tools) >= {"read_safe", "read_echo", "list_lexical", "stat_lexical"}
    assert all(f.severity == "high" and "every root withdrawn" in f.evidence for f in empty)
    assert [f for f in report.findings if f.class_id == "stale-roots"] == []


def test_ignored_roots_reported_once(module_dir: Path) -> None:
    """One ``ignores-roots`` finding for the mode (with its own tool's escapes); every other tool's escape is its
    own finding, at its own severity (issue 47: folded into one, a writer's critical escape showed nowhere)."""
    report = run_and_check(module_dir / "traps", flawed_spec("--ignore-roots", workspace=False), modes="roots")
    ignoring = [f for f in report.findings if f.class_id == "ignores-roots"]
    assert len(ignoring) == 1
    others = [f for f in report.findings if f.class_id != "ignores-roots"]
    assert others and all(f.tool != ignoring[0].tool for f in others)
    assert report.modes[0].status == "ignores roots"


def test_hung_server_is_reported_and_killed(module_dir: Path) -> None:
    """Calls time out, the audit stops calling, and the child (which ignores SIGTERM) is killed: nothing remains."""
    report = run_and_check(module_dir / "traps", flawed_spec("--hang"), modes="args", timeout=1.0)
    assert report.modes[0].status == "hung", (report.modes[0].status, report.modes[0].detail)
    assert report.modes[0].calls == 2  # two timeouts in a row, then no more calls
    assert report.incomplete and report.exit_code("low") == 2


def test_budget_stops_the_audit_and_kills_the_server(module_dir: Path) -> None:
    report = run_and_check(module_dir / "traps", flawed_spec("--hang"), modes="args", timeout=30.0, budget=2.0)
    assert "budget" in report.incomplete_reason
    assert report.exit_code("low") == 2


def test_a_broken_tools_list_fails_the_mode_not_the_audit(module_dir: Path) -> None:
    report = run_and_check(module_dir / "traps", flawed_spec("--broken-list"))
    assert [m.status for m in report.modes[:2]] == ["failed", "failed"]
    assert "holiday" in report.modes[0].detail
    assert report.exit_code("low") == 2


def test_every_shape_and_parameter_is_covered(flawed: Report) -> None:
    """Nested and array-of-object leaves, exclusive parameters, both ends of a copy, a glob parameter that is not
    a path, and a reader named like a writer: each tested (its control passed) in both modes."""
    for mode in flawed.modes[:2]:
        rows = {(t.name, p.param): p for t in mode.tools for p in t.params}
        for key in [
            ("read_nested", "params.path"),
            ("read_batch", "files[].path"),
            ("read_either", "path"),
            ("read_either", "paths[]"),
            ("copy_file", "source"),
            ("copy_file", "destination"),
            ("edit_text", "path"),
            ("write_trimmed", "path"),
            ("search_glob", "path"),
            ("extract_text", "path"),
        ]:
            assert rows[key].status == "tested", (mode.mode, key, rows[key])
        assert ("search_glob", "file_pattern") not in rows, "a glob parameter was taken for a path"
        extract = next(t for t in mode.tools if t.name == "extract_text")
        assert extract.access == "read" and extract.evidence == "read", "classified by its name, not its effect"


def test_edit_gets_an_old_text_from_w_and_a_new_one(flawed: Report) -> None:
    edit = next(f for f in flawed.findings if f.tool == "edit_text" and f.kind == "write")
    arguments = json.loads(edit.request)["params"]["arguments"]
    assert arguments["old_text"] == "rbt" and arguments["new_text"] not in ("", "rbt")


def test_trailing_character_write_is_critical(flawed: Report) -> None:
    found = [f for f in flawed.findings if (f.tool, f.class_id, f.kind) == ("write_trimmed", "normaliser", "write")]
    assert found and {f.severity for f in found} == {"critical"}
    assert "outside the roots" in found[0].evidence
