"""Modes and root causes over the real wire: a roots-mode command that keeps no dangling flag, a slow roots fetch,
a repository server in a git trap, and the same groups from run to run."""

from __future__ import annotations

import sys
from pathlib import Path

from rootbound.audit import ServerSpec
from rootbound.audit.session import substitute
from tests.audit.conftest import FLAWED, flawed_spec, run_and_check


def test_a_flag_whose_value_is_the_workspace_is_dropped_with_it() -> None:
    assert substitute(["srv", "--repository", "{workspace}"], None, None) == ["srv"]
    assert substitute(["srv", "--allowed-directories", "{workspace}", "-v"], None, None) == ["srv", "-v"]
    assert substitute(["srv", "--allow", "{workspace}"], None, None) == ["srv"]
    assert substitute(["srv", "--stale", "{workspace}"], None, None) == ["srv", "--stale"]  # a switch stays
    assert substitute(["srv", "--trust-client-roots", "{workspace}"], None, None) == ["srv", "--trust-client-roots"]
    assert substitute(["srv", "--repository", "{workspace}"], Path("/w"), None) == ["srv", "--repository", "/w"]


def test_dangling_roots_flag_is_not_left_behind(module_dir: Path) -> None:
    """``--root-dir {workspace}``: without the drop, the fixture exits ("needs a value") and roots mode would read
    as unsupported."""
    spec = ServerSpec(
        command=(sys.executable, str(FLAWED), "--tools=read_prefix,read_safe", "--root-dir", "{workspace}")
    )
    report = run_and_check(module_dir / "traps", spec, modes="roots")
    assert report.modes[0].status == "ok", (report.modes[0].status, report.modes[0].detail)
    assert ("read_prefix", "prefix-bypass") in {(f.tool, f.class_id) for f in report.findings}


def test_roots_cmd_is_used_for_roots_mode(module_dir: Path) -> None:
    spec = ServerSpec(
        command=(sys.executable, str(FLAWED), "--bogus-without-value", "{workspace}"),
        roots_command=(sys.executable, str(FLAWED), "--stale", "--tools=read_safe"),
    )
    report = run_and_check(module_dir / "traps", spec, modes="roots")
    assert report.modes[0].status == "ok"
    assert [f for f in report.findings if f.class_id == "stale-roots"], "roots mode ran without --roots-cmd"


def test_slow_roots_fetch_leaves_no_tool_untested(module_dir: Path) -> None:
    report = run_and_check(
        module_dir / "traps",
        flawed_spec("--slow-roots", "--tools=read_prefix,read_safe,list_lexical", workspace=False),
        modes="roots",
        timeout=3.0,
    )
    roots = report.modes[0]
    assert roots.status == "ok", roots.detail
    untested = [
        (t.name, p.param, p.detail)
        for t in roots.tools
        for p in t.params
        if p.status != "tested" and t.access != "skip"
    ]
    assert untested == []
    assert ("read_prefix", "prefix-bypass") in {(f.tool, f.class_id) for f in report.findings}


def test_repository_server_reads_outside_repositories(module_dir: Path) -> None:
    """A git trap: W and the outside directories are repositories; a log of the prefix sibling's repository is
    evidence (its commit message carries that sibling's token)."""
    report = run_and_check(module_dir / "traps", flawed_spec("--only-git"), workspace_kind="git", modes="both")
    assert report.workspace_kind == "git"
    found = {(f.tool, f.class_id, f.kind, f.mode) for f in report.findings}
    for mode in ("args", "roots"):
        assert ("repo_log", "prefix-bypass", "read", mode) in found, found
    assert all(t.tested for m in report.modes[:2] for t in m.tools)


def test_groups_are_the_same_every_run(module_dir: Path) -> None:
    """Five audits of the same server (read probes run four at a time, so answers arrive in varying order): the
    same root causes, with the same representative probe, every time."""
    seen = []
    for _ in range(5):
        tools = "--tools=read_lookalike,read_prefix,read_nocheck,read_dotdot,list_lexical"
        report = run_and_check(module_dir / "traps", flawed_spec(tools), modes="args")
        seen.append(sorted((f.mode, f.tool, f.param, f.class_id, f.kind, f.location, f.also) for f in report.findings))
    assert all(groups == seen[0] for groups in seen[1:])
    lookalike = {g for g in seen[0] if g[1] == "read_lookalike"}
    classes = {g[3] for g in lookalike}
    assert "normaliser" in classes and "prefix-bypass" not in classes, f"look-alike reads regrouped: {classes}"
