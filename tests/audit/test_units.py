"""The audit's pure parts: trap layout and restore, the evidence judge, tool planning, report renderings."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from rootbound.audit import CLASSES, Finding, Report, build_trap, catalogue, judge
from rootbound.audit.classes import severity_for
from rootbound.audit.judge import control_evidence, control_names_path, names_path
from rootbound.audit.probes import Shape, Style
from rootbound.audit.tool_errors import learn_params
from rootbound.audit.tools import plan_tool
from rootbound.audit.trap import Snapshot, Trap, remove


@pytest.fixture
def trap(tmp_path: Path) -> Trap:
    return build_trap(tmp_path)


def test_trap_layout(trap: Trap) -> None:
    w = trap.workspace
    assert os.readlink(w / "link-dir") == str(trap.base / "far")
    assert (w / "link-leaf-abs").resolve() == trap.canaries["far"].path
    assert (w / "link-leaf-rel").resolve() == trap.canaries["far"].path
    assert (w / "link-chain-a" / trap.canaries["far"].name).resolve() == trap.canaries["far"].path
    assert not (w / "link-dangling").exists() and (w / "link-dangling").is_symlink()
    assert trap.hardlink is not None and os.stat(w / "rbt-hardlink.txt").st_ino == trap.hardlink.path.stat().st_ino
    assert trap.fifo is not None and stat.S_ISFIFO(os.lstat(trap.fifo).st_mode)
    tokens = {c.token for c in trap.canaries.values()} | {trap.marker.token}
    assert len(tokens) == len(trap.canaries) + 1  # every token unique
    for canary in trap.canaries.values():
        assert canary.path.read_text().strip() == canary.token
        assert int(canary.path.stat().st_mtime) == canary.mtime
        assert trap.workspace not in canary.path.parents


def test_restore_undoes_creation_change_and_deletion(trap: Trap) -> None:
    before = trap.snapshot()
    far = trap.canaries["far"].path
    far.write_text("overwritten")
    (trap.base / "far" / "new.txt").write_text("x")
    (trap.base / "ws-evil" / "newdir").mkdir()
    trap.canaries["second"].path.unlink()
    os.unlink(trap.workspace / "rbt-hardlink.txt")
    (trap.workspace / "rbt-hardlink.txt").write_text("replaced")
    changes = before.diff(trap.snapshot())
    assert {c.what for c in changes} == {"created", "modified", "deleted"}
    assert trap.hardlink is not None
    before.restore(changes, {"ws/rbt-hardlink.txt": trap.hardlink.path})
    assert before.diff(trap.snapshot()) == []
    assert far.read_text().strip() == trap.canaries["far"].token
    assert os.stat(trap.workspace / "rbt-hardlink.txt").st_ino == trap.hardlink.path.stat().st_ino


def test_remove_never_follows_symlinks(tmp_path: Path) -> None:
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    (tmp_path / "t").mkdir()
    trap = build_trap(tmp_path / "t")
    os.symlink(outside, trap.workspace / "to-precious")
    os.symlink(outside / "keep.txt", trap.base / "far" / "keep-link")
    remove(trap.base)
    assert not trap.base.exists()
    assert (outside / "keep.txt").read_text() == "keep"


def test_judge_token_needs_to_come_from_the_file_not_the_request(trap: Trap) -> None:
    far = trap.canaries["far"]
    allowed = frozenset({"ws"})
    leaked = {"content": [{"type": "text", "text": f"data {far.token}"}]}
    assert [e.kind for e in judge(trap, '{"path": "x"}', leaked, False, allowed)] == ["read"]
    # an answer that repeats the request proves nothing, error or not
    echoed = json.dumps({"path": far.token})
    assert judge(trap, echoed, {"content": [{"type": "text", "text": far.token}]}, True, allowed) == []
    assert judge(trap, echoed, {"content": [{"type": "text", "text": far.token}]}, False, allowed) == []


def test_judge_decodes_base64_blobs(trap: Trap) -> None:
    far = trap.canaries["far"]
    blob = base64.b64encode(f"{far.token}\n".encode()).decode()
    result = {"content": [{"type": "resource", "resource": {"uri": "file:///x", "blob": blob}}]}
    assert [e.location for e in judge(trap, "{}", result, False, frozenset({"ws"}))] == ["far"]


def test_judge_names_and_mtimes_count_only_in_successful_answers(trap: Trap) -> None:
    entry = trap.entries["far"]
    mtime = trap.canaries["far"].mtime_spellings()[1]
    listing = {"content": [{"type": "text", "text": f"[FILE] {entry}\nmodified {mtime}"}]}
    found = judge(trap, "{}", listing, False, frozenset({"ws"}))
    assert sorted(e.kind for e in found) == ["list", "meta"]
    assert judge(trap, "{}", listing, True, frozenset({"ws"})) == []  # an error describing a link is not a listing
    # a location the roots allow is not an escape
    second = trap.entries["second"]
    ok = {"content": [{"type": "text", "text": second}]}
    assert judge(trap, "{}", ok, False, frozenset({"ws", "second"})) == []
    assert [e.location for e in judge(trap, "{}", ok, False, frozenset({"ws"}))] == ["second"]


def test_control_evidence_kinds(trap: Trap) -> None:
    m = trap.marker
    text = {"content": [{"type": "text", "text": m.token}]}
    assert control_evidence(trap, "{}", text, False) == "read"
    assert control_evidence(trap, "{}", text, True) is None
    assert control_evidence(trap, "{}", {"content": [{"type": "text", "text": m.name}]}, False) == "list"
    assert control_evidence(trap, json.dumps(m.name), {"x": m.name}, False) is None
    assert control_evidence(trap, "{}", {"mtime": m.mtime}, False) is None  # numbers are not text
    assert control_evidence(trap, "{}", {"mtime": str(m.mtime)}, False) == "meta"
    assert control_evidence(trap, "{}", {"size": f"9{m.mtime}1"}, False) is None  # inside a longer number


def test_a_named_path_counts_only_resolved_whole_and_unrefused(trap: Trap) -> None:
    far = str(trap.canaries["far"].path)
    assert names_path(f"path: {far} is served", "{}", [far]) == far
    assert names_path(f"ok file://{far}.", "{}", [far]) == far
    assert names_path(f"path: {far} is served", json.dumps({"path": far}), [far]) is None  # an echo
    assert names_path(f"path: {far} is not served", "{}", [far]) is None  # a refusal
    assert names_path(f"Outside the roots:\n  {far}x", "{}", [far]) is None  # another, longer name
    assert names_path(f"path: /w/file:{far} is served", "{}", [far]) is None  # the tail of a longer path
    resolved = {"content": [{"type": "text", "text": f"path: {trap.marker.path} is served"}]}
    assert control_names_path(trap, json.dumps({"path": trap.marker.name}), resolved, False)
    assert not control_names_path(trap, json.dumps({"path": str(trap.marker.path)}), resolved, False)
    assert not control_names_path(trap, json.dumps({"path": trap.marker.name}), resolved, True)
    named = {"content": [{"type": "text", "text": f"{far} is served"}]}
    assert judge(trap, "{}", named, False, frozenset({"ws"})) == []  # only for a tool whose control named paths
    assert [e.kind for e in judge(trap, "{}", named, False, frozenset({"ws"}), names_paths=True)] == ["meta"]


def test_catalogue_covers_every_probe_class(trap: Trap) -> None:
    shapes: tuple[Shape, ...] = ("file", "dir", "new")
    styles: tuple[Style, ...] = ("absolute", "relative", "uri")
    probe_classes = {
        p.class_id
        for shape in shapes
        for style in styles
        for p in catalogue(trap, shape, style, home=True, new_name="n")
    }
    runtime_only = {"fifo-block", "stale-roots", "empty-roots", "ignores-roots", "self-widening"}
    assert probe_classes | runtime_only == {c.id for c in CLASSES}
    for probe in catalogue(trap, "file", "absolute", home=True):
        assert str(trap.base) in probe.path or not probe.path.startswith("/")  # every target inside the trap


@pytest.mark.parametrize(
    ("tool", "write", "access"),
    [
        (
            {"name": "read_file", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
            False,
            "read",
        ),
        ({"name": "readTextFile", "inputSchema": {"properties": {"uri": {"type": "string"}}}}, False, "read"),
        ({"name": "write_file", "inputSchema": {"properties": {"path": {"type": "string"}}}}, False, "skip"),
        ({"name": "write_file", "inputSchema": {"properties": {"path": {"type": "string"}}}}, True, "write"),
        ({"name": "get_permissions", "inputSchema": {"properties": {"path": {}}}}, False, "read"),
        ({"name": "process_file", "inputSchema": {"properties": {"path": {}}}}, True, "skip"),  # exec-like
        ({"name": "run_command", "inputSchema": {"properties": {"cwd": {}}}}, True, "skip"),
        ({"name": "frobnicate", "inputSchema": {"properties": {"path": {}}}}, False, "skip"),  # unknown verb
        (
            {"name": "frobnicate", "annotations": {"readOnlyHint": True}, "inputSchema": {"properties": {"path": {}}}},
            False,
            "read",
        ),
        ({"name": "list_things", "inputSchema": {"properties": {"count": {"type": "integer"}}}}, False, "skip"),
        ({"name": "read_file", "inputSchema": "garbage"}, False, "read"),  # learnt later from errors
    ],
)
def test_tool_access(tool: dict[str, object], write: bool, access: str) -> None:
    assert plan_tool(tool, frozenset(), write).access == access


def test_allow_tool_overrides_exec_heuristic() -> None:
    tool = {"name": "fetch_file", "inputSchema": {"properties": {"path": {"type": "string"}}}}
    assert plan_tool(tool, frozenset(), False).access == "skip"
    assert plan_tool(tool, frozenset({"fetch_file"}), False).access == "read"


def test_learn_params_from_errors() -> None:
    zod = '[{"expected": "array", "code": "invalid_type", "path": ["paths"], "message": "Required"}]'
    assert learn_params(zod) == {"paths": "array"}
    assert learn_params("1 validation error: loc=['file'] Field required") == {"file": "string"}
    assert learn_params('missing required parameter "path"; see "documentation"') == {"path": "string"}
    assert learn_params("something went wrong") == {}


def _finding(**kw: str) -> Finding:
    base: dict[str, str] = {
        "class_id": "prefix-bypass",
        "kind": "read",
        "severity": "high",
        "tool": "read_file",
        "mode": "args",
        "param": "path",
        "probe": "/t/ws-evil/x",
        "evidence": "token",
        "request": '{"jsonrpc": "2.0"}',
    }
    base.update(kw)
    return Finding(**base)  # type: ignore[arg-type]


def test_report_groups_and_exit_codes() -> None:
    report = Report("srv", "/t", False)
    assert report.exit_code("low") == 2  # nothing tested: incomplete
    report.add(_finding())
    report.add(_finding(probe="/t/ws-evil/y"))  # same root cause: counted, not repeated
    report.add(_finding(mode="roots"))
    report.add(_finding(class_id="hardlink", severity="info"))
    assert len(report.findings) == 4  # every probe is kept until the run is over ...
    report.fold_causes()  # ... then grouped once, by (mode, tool, parameter, class, kind)
    assert len(report.findings) == 3 and sum(f.also for f in report.findings) == 1
    assert len(report.causes()) == 2
    assert report.exit_code("low") == 1
    assert report.exit_code("critical") == 2  # still incomplete: no mode ran
    sarif = report.to_sarif()
    assert {r["level"] for r in sarif["runs"][0]["results"]} == {"error", "note"}
    assert "prefix-bypass" in report.to_text() or "Sibling-prefix" in report.to_text()


def test_severity_by_kind() -> None:
    assert severity_for("prefix-bypass", "write") == "critical"
    assert severity_for("prefix-bypass", "read") == "high"
    assert severity_for("symlink-parent", "list") == "medium"
    assert severity_for("symlink-leaf", "meta") == "low"
    assert severity_for("hardlink", "write") == "info"


def _outside(tmp_path: Path) -> Path:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("keep")
    return precious


def test_restore_does_not_follow_a_directory_swapped_for_a_link(tmp_path: Path) -> None:
    """A server deletes a canary, then swaps its directory for a link out of the trap: restore must not write
    (or delete) through the link."""
    (tmp_path / "t").mkdir()
    trap = build_trap(tmp_path / "t")
    precious = _outside(tmp_path)
    before = trap.snapshot()
    far = trap.base / "far"
    secret = trap.canaries["far"].path
    secret.unlink()
    (far / "created.txt").write_text("x")
    changes = before.diff(trap.snapshot())
    far.rename(trap.base / "far-moved")
    os.symlink(precious, far)  # the race: swapped between diff and restore
    (precious / "created.txt").write_text("not ours")
    before.restore(changes, {})
    assert sorted(os.listdir(precious)) == ["created.txt", "keep.txt"]  # nothing written, nothing deleted
    assert (precious / "created.txt").read_text() == "not ours"
    assert os.path.islink(far)  # left alone: the next diff still shows it
    assert any(c.path == far for c in before.diff(trap.snapshot()))
    remove(trap.base)
    assert (precious / "keep.txt").read_text() == "keep"


def test_remove_survives_a_trap_replaced_by_a_link(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    trap = build_trap(tmp_path / "t")
    precious = _outside(tmp_path)
    moved = tmp_path / "moved-trap"
    trap.base.rename(moved)
    os.symlink(precious, trap.base)
    remove(trap.base)  # unlinks the link, never empties what it points to
    assert not os.path.lexists(trap.base)
    assert (precious / "keep.txt").read_text() == "keep"
    remove(moved)


def test_remove_resets_permissions_a_server_took_away(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    trap = build_trap(tmp_path / "t")
    (trap.base / "far" / "locked").mkdir()
    (trap.base / "far" / "locked" / "f").write_text("x")
    os.chmod(trap.base / "far" / "locked", 0)
    os.chmod(trap.base / "far", 0o500)
    remove(trap.base)
    assert not trap.base.exists()


def test_grouping_keeps_a_lookalike_that_does_not_share_the_prefix() -> None:
    """A prefix check explains probes landing in ``ws-evil`` or ``ws.``, never a case-folded ``WS``: that one stays
    its own finding, whatever order the probes answered in."""
    for order in (1, -1):
        report = Report("srv", "/t", False)
        items = [
            _finding(),
            _finding(class_id="normaliser", location="ws.", probe="/t/ws./x"),
            _finding(class_id="normaliser", location="WS", probe="/t/WS/x"),
        ]
        for f in items[::order]:
            report.add(f)
        report.fold_causes()
        groups = {(f.class_id, f.location) for f in report.findings}
        assert groups == {("prefix-bypass", ""), ("normaliser", "WS")}, groups


def test_server_wide_findings_are_one_per_mode() -> None:
    report = Report("srv", "/t", False)
    for tool in ("read_a", "read_b", "list_c"):
        report.add(_finding(class_id="empty-roots", kind="roots", tool=tool, mode="roots"))
    report.fold_causes()
    assert len(report.findings) == 1 and report.findings[0].tools == ["list_c", "read_a", "read_b"]


def test_coverage_gaps_decide_the_exit_code() -> None:
    from rootbound.audit.report import ModeRun, ParamStatus, ToolStatus

    report = Report("srv", "/t", False)
    tested = ToolStatus("read_file", "read", tested=True, params=[ParamStatus("path", "tested")])
    report.modes.append(ModeRun("args", tools=[tested]))
    assert report.exit_code("low") == 0 and report.gaps() == []
    blocked = ToolStatus(
        "copy", "write", params=[ParamStatus("source", "tested"), ParamStatus("dest", "blocked", "no")]
    )
    report.modes.append(ModeRun("roots", tools=[tested, blocked]))
    assert report.exit_code("low") == 2
    assert report.gaps() == ["mode roots: copy dest blocked: no"]
    assert report.exit_code("low", accept_partial=True) == 0
    report.modes.append(ModeRun("roots-2026", "not applicable"))  # a mode the server does not offer is no gap
    assert len(report.gaps()) == 1
    text = report.to_text()
    assert text.index("Coverage: INCOMPLETE") < text.index("No escape found")
    assert report.to_sarif()["runs"][0]["properties"]["gaps"] == report.gaps()


def test_shown_escapes_terminal_controls() -> None:
    from rootbound.audit.shown import shown

    assert shown("a\x1b]0;t\x07b\nYOUR") == "a\\x1b]0;t\\x07b\\nYOUR"
    assert shown("x\u202ey") == "x\\u202ey" and shown("ｗｓ") == "ｗｓ"
    assert shown("a" * 10, 4) == "aaaa…(+6 chars)"


@pytest.mark.parametrize(
    ("schema", "probe", "expected"),
    [
        (  # nested object
            {
                "properties": {
                    "params": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
                }
            },
            "params.path",
            {"params": {"path": "OUT"}},
        ),
        (  # array of objects, with a required enum beside the path
            {
                "properties": {
                    "files": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"path": {"type": "string"}, "encoding": {"enum": ["utf-8", "b64"]}},
                            "required": ["path", "encoding"],
                        },
                    }
                },
                "required": ["files"],
            },
            "files[].path",
            {"files": [{"path": "OUT", "encoding": "utf-8"}]},
        ),
        (  # optional alternatives: each alone
            {"properties": {"path": {"type": "string"}, "paths": {"type": "array", "items": {"type": "string"}}}},
            "paths[]",
            {"paths": ["OUT"]},
        ),
        (  # both ends of a copy: the other inside W
            {
                "properties": {"source": {"type": "string"}, "destination": {"type": "string"}},
                "required": ["source", "destination"],
            },
            "destination",
            {"source": "IN", "destination": "OUT"},
        ),
        (  # a glob is not a path; an edit gets W's old text and a new one
            {
                "properties": {
                    "path": {"type": "string"},
                    "file_pattern": {"type": "string"},
                    "old_text": {"type": "string"},
                    "new_text": {"type": "string"},
                },
                "required": ["path", "file_pattern", "old_text", "new_text"],
            },
            "path",
            {"path": "OUT", "file_pattern": "*", "old_text": "rbt", "new_text": "NEW"},
        ),
    ],
)
def test_arguments_from_any_schema_shape(schema: dict[str, object], probe: str, expected: dict[str, object]) -> None:
    from rootbound.audit.tools import plan_shapes

    plan = plan_shapes({"name": "read_x", "inputSchema": {"type": "object", **schema}}, frozenset(), True)[0]
    assert probe in plan.path_params
    assert plan.arguments(probe, "OUT", "IN", "*", "NEW") == expected


def test_one_of_gives_separate_call_shapes() -> None:
    from rootbound.audit.tools import plan_shapes

    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "paths": {"type": "array", "items": {"type": "string"}}},
        "oneOf": [{"required": ["path"]}, {"required": ["paths"]}],
    }
    shapes = plan_shapes({"name": "read_x", "inputSchema": schema}, frozenset(), False)
    assert [(p.shape, p.path_params) for p in shapes] == [("oneOf 1", ["path"]), ("oneOf 2", ["paths[]"])]


def test_snapshot_is_bounded(tmp_path: Path) -> None:
    from rootbound.audit.trap import Snapshot, TrapFlooded

    (tmp_path / "big").write_bytes(b"x" * (1 << 20))
    for i in range(50):
        os.link(tmp_path / "big", tmp_path / f"l{i}")
    snap = Snapshot.take(tmp_path)
    assert all(len(e.data) == 0 for e in snap.entries.values())  # hashes, not bytes, unless it is the baseline
    with pytest.raises(TrapFlooded):
        Snapshot.take(tmp_path, limit=20)


def test_seeded_trap_is_rebuilt_identically(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    first = build_trap(tmp_path / "a", seed="00" * 16)
    again = build_trap(tmp_path / "a", seed="00" * 16)
    assert first.marker.token == again.marker.token and first.marker.name == again.marker.name
    assert {k: (c.name, c.token, c.mtime) for k, c in first.canaries.items()} == {
        k: (c.name, c.token, c.mtime) for k, c in again.canaries.items()
    }
    assert build_trap(tmp_path / "a").marker.token != first.marker.token  # a fresh seed by default


def test_git_index_entries_ignore_stat_data(tmp_path: Path) -> None:
    import subprocess

    from rootbound.audit.git_trap import build_git, index_entries

    (tmp_path / "t").mkdir()
    trap = build_trap(tmp_path / "t")
    build_git(trap)
    index = trap.workspace / ".git" / "index"
    before = index.read_bytes()
    os.utime(trap.workspace / "rbt-tracked.txt", (1, 1))
    subprocess.run(["git", "-C", str(trap.workspace), "status"], capture_output=True, check=True)
    after = index.read_bytes()
    assert index_entries(before) == index_entries(after) and index_entries(before)
    subprocess.run(["git", "-C", str(trap.workspace), "reset", "-q"], capture_output=True, check=True)
    assert index_entries(index.read_bytes()) != index_entries(before)  # unstaging is a real change
    remove(trap.base)


def test_an_escape_is_classed_by_where_it_landed() -> None:
    from rootbound.audit.probes import Probe, landed_class

    uri = Probe("outside-absolute", "file:///t/far/x", "far")
    assert landed_class(uri, "far") == "outside-absolute"
    assert landed_class(uri, "cwd") == "cwd-relative"  # the URI was written as a relative name under the cwd
    assert landed_class(uri, "hardlink") == "hardlink"
    assert landed_class(Probe("cwd-relative", "x", "cwd"), "cwd") == "cwd-relative"


def test_the_shared_escape_table_is_the_audits() -> None:
    """The audit's probes come from rootbound.core.escape_table: every table class is an audit class, and every
    table spelling is among the audit's directory spellings of its style."""
    from rootbound.audit.probes import _dir_spellings
    from rootbound.audit.trap import build_trap, remove
    from rootbound.core.escape_table import SPELLINGS, Layout

    assert {s.class_id for s in SPELLINGS} <= {c.id for c in CLASSES}
    trap = build_trap()
    try:
        layout = Layout(str(trap.base), trap.workspace.name)
        for style in ("absolute", "relative", "uri"):
            spelt = {(c, s) for c, s, _, _ in _dir_spellings(trap, style, False)}
            assert {(s.class_id, s.render(layout)) for s in SPELLINGS if s.style == style} <= spelt
    finally:
        remove(trap.base)


def test_a_diff_rereads_only_what_changed_and_sees_a_reset_mtime(trap: Trap) -> None:
    """The diff after a probe reuses the baseline's hash of an untouched file (same inode, size, mtime, ctime),
    and still sees a same-size rewrite whose mtime was set back (the ctime moved)."""
    baseline = trap.snapshot()
    far = trap.canaries["far"]
    assert baseline.diff(Snapshot.take(trap.base, known=baseline)) == []
    far.path.write_text(far.token.replace("rbt", "RBT") + "\n", encoding="utf-8")  # same size
    os.utime(far.path, (far.mtime, far.mtime))
    changes = baseline.diff(Snapshot.take(trap.base, known=baseline))
    assert [(c.path, c.what) for c in changes] == [(far.path, "modified")]


def test_a_tool_that_runs_free_text_is_a_gap_never_clean() -> None:
    """A command runner skipped as exec-like, and a database's ``query`` (no path parameter), can name any file: the
    report lists each as a gap with its reason, so a server of only such tools is never a clean exit 0."""
    from rootbound.audit.free_text import free_text_reach
    from rootbound.audit.report import ModeRun, Report, ToolStatus

    query = {"name": "query", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}}}
    assert "free-form text" in free_text_reach(query, "", takes_path=False)
    assert free_text_reach(query, "", takes_path=True) == ""  # its path parameters are probed
    named = {
        "name": "list_tables",
        "inputSchema": {"type": "object", "properties": {"schema_name": {"type": "string"}}},
    }
    assert free_text_reach(named, "", takes_path=False) == ""
    run = {"name": "run_command", "inputSchema": {}}
    assert "--allow-tool run_command" in free_text_reach(run, "looks like exec/shell/fetch/send", takes_path=False)
    report = Report("srv", "/trap", False)
    mode = ModeRun("args", status="no path tool")
    mode.tools.append(ToolStatus("query", "read", takes_path=False, reaches=free_text_reach(query, "", False)))
    report.modes.append(mode)
    assert report.gaps() == [f"mode args: query not tested ({free_text_reach(query, '', False)})"]
    assert report.exit_code("low") == 2
    assert report.coverage()[0]["status"] == "not tested"


def test_values_a_refusal_lists_or_a_description_shows() -> None:
    """The values a filler takes: a refusal's list (quoted or bare, after the usual phrasings), the example a
    description gives; the filler it is about must be named (by name, its words or the value sent) and plain."""
    from rootbound.audit.values import allowed_values, example_value, learn_value

    assert allowed_values("Unsupported export format: 'rbt'. Supported: ['python', 'html']") == ["python", "html"]
    assert allowed_values("Invalid cell type: rbt. Must be one of: code, markdown, raw") == ["code", "markdown", "raw"]
    assert allowed_values('mode: expected one of "a" | "b"') == ["a", "b"]
    assert allowed_values("Valid values are fast or slow.") == ["fast", "slow"]
    assert allowed_values("access denied: the path must be inside one of the allowed directories") == []
    assert allowed_values("Must be one of: $(rm -rf x), `y`") == []  # a list that is not plain is not taken
    assert example_value('Range of cells (e.g., "A1:C10")') == "A1:A1"
    assert example_value("Output format, for example 'html'") == "html" and example_value("a name") is None
    Roles = dict[tuple[str, ...], tuple[str, tuple[bool, ...], object]]
    roles: Roles = {("fmt",): ("filler", (True,), "rbt"), ("kind",): ("filler", (True,), "rbt")}
    one: Roles = {("kind",): ("filler", (True,), "a")}
    assert learn_value(roles, "Invalid kind 'rbt'. Must be one of: a, b", set()) == (("kind",), "a")
    assert learn_value(roles, "Invalid value 'rbt'. Must be one of: a, b", set()) is None  # which one: not said
    assert learn_value(roles, "Invalid kind 'rbt'. Must be one of: a, b", {("kind",)}) is None  # learnt once
    assert learn_value(one, "kind: must be one of: a", set()) is None
    cells: Roles = {("range",): ("filler", (True,), "rbt"), ("sheet",): ("filler", (True,), "rbt")}
    assert learn_value(cells, "invalid range format: rbt, e.g. B2:C4", set()) == (("range",), "B2:B2")


def test_a_string_filler_fits_the_pattern_its_schema_gives() -> None:
    """A schema ``pattern`` (a digest, a cell) gets a harmless value it accepts; a pattern RE2 cannot hold, or one no
    shape fits, leaves the plain filler (the server's refusal then says why)."""
    from rootbound.audit.tools import filler
    from rootbound.audit.values import pattern_value

    assert filler("sha256", {"type": "string", "pattern": "^[0-9a-fA-F]{64}$"}) == "0" * 64
    assert filler("digest", {"type": "string", "pattern": "^(sha256:)?[0-9a-f]{64}$"}) == "0" * 64
    assert filler("cell", {"type": "string", "pattern": "^[A-Z]+[0-9]+$"}) == "A1"
    assert filler("name", {"type": "string", "pattern": "^r"}) == "rbt"  # the plain filler fits: kept
    assert pattern_value("(a)\\1", "rbt") is None  # a backreference: RE2 refuses it, so no guess
    assert pattern_value("^[%]{3}$", "rbt") is None
    assert pattern_value("^(a+)+$", "rbt") is None  # no shape fits; RE2 runs it in linear time


def test_statement_families_quote_the_path_and_learn_the_allowed_commands() -> None:
    """SQL doubles a quote, a command line is shlex-quoted; the commands a description or a refusal lists set the
    reader and lister (only read-only ones the audit sends); SQL needs SQL in the words, a search query is not."""
    from rootbound.audit.statements import command_words, learn_command, render_text, sql_dialect, text_kind

    assert render_text("sql:read", "/a/ws'", "") == "SELECT * FROM read_text('/a/ws''')"
    assert render_text("sql:glob", "/a/", "") == "SELECT * FROM glob('/a/*')"
    assert (
        render_text("sql:copy", "/a/n.csv", "rbt-x\nmore") == "COPY (SELECT 'rbt-x' AS rbt) TO '/a/n.csv' (FORMAT csv)"
    )
    assert render_text("cmd:cat", "/a/b c", "") == "cat '/a/b c'"
    assert command_words("Available commands: ls, head, pwd\nflags: -l") == ("head", "ls")
    assert command_words("Run things.") == ("", "")
    assert command_words("allowed commands are [rm, pwd]") == ("-", "-")
    assert learn_command("cmd:cat", ["Command 'cat' is not allowed. Allowed commands: more, dir"]) == "cmd:more"
    assert learn_command("cmd:ls", ["Allowed commands: more, dir"]) == "cmd:dir"
    sql = {"type": "string", "description": "SQL query to execute"}
    assert text_kind("query", sql, {"name": "query"}) == "sql"
    assert text_kind("query", {"type": "string", "description": "words to search for"}, {"name": "search"}) == ""
    assert text_kind("command", {"type": "string"}, {"name": "run"}) == "cmd"
    assert sql_dialect({"name": "query", "description": "Execute a query on the DuckDB database"}, "") == "duckdb"
    assert sql_dialect({"name": "q", "description": "SQL"}, "") == ""


def test_a_command_tool_gets_families_only_where_it_lists_its_commands_or_is_allowed() -> None:
    """A restricted runner ("Available commands: ls, cat") is probed with ``cat`` and ``ls``; a shell that lists
    nothing stays exec-like (skipped) unless ``--allow-tool`` names it; SQLite's list kind is a gap row."""
    from rootbound.audit.text_plans import text_shapes
    from rootbound.audit.tools import plan_shapes

    schema = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
    listed = {"name": "run_command", "description": "Available commands: ls, cat, pwd", "inputSchema": schema}
    shell = {"name": "run_command", "description": "Runs a shell command.", "inputSchema": schema}
    shapes = text_shapes(listed, plan_shapes(listed, frozenset(), False), False, frozenset())
    assert [(p.shape, p.access, p.leaves[0].text) for p in shapes] == [
        ("cmd=cat", "read", "cmd:cat"),
        ("cmd=ls", "read", "cmd:ls"),
        ("cmd=write", "skip", ""),
    ]
    plain = text_shapes(shell, plan_shapes(shell, frozenset(), False), False, frozenset())
    assert [p.access for p in plain] == ["skip"] and plain[0].reason.startswith("looks like exec")
    allowed = text_shapes(shell, plan_shapes(shell, frozenset(), False), False, frozenset({"run_command"}))
    assert [p.shape for p in allowed] == ["cmd=cat", "cmd=ls", "cmd=write"]
    sql = {"type": "object", "properties": {"query": {"type": "string", "description": "SQL"}}}
    lite = {"name": "write_query", "description": "Run it on the SQLite database", "inputSchema": sql}
    rows = text_shapes(lite, plan_shapes(lite, frozenset(), True), True, frozenset())
    assert [p.shape for p in rows] == ["sql=readfile", "sql=vacuum", "sql=attach", "sql=list"]
    assert rows[-1].access == "skip" and "lists no directory" in rows[-1].reason
