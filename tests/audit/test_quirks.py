"""What issue 34 saw the audit get wrong on published servers, each reproduced by a small server of our own
(``quirk_server.py``, one ``--case`` each) and audited for real over stdio, args mode only (to stay quick)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootbound.audit import AuditOptions, Report, ServerSpec, run_audit
from rootbound.audit.tool_errors import extra_required, learn_params, validation_error
from rootbound.audit.tools import plan_shapes
from rootbound.audit.trap import build_trap
from rootbound.cli import main
from tests.audit.conftest import FLAWED, run_and_check

QUIRK = Path(__file__).parent / "quirk_server.py"


def quirk(case: str, *flags: str) -> ServerSpec:
    return ServerSpec(command=(sys.executable, str(QUIRK), f"--case={case}", *flags, "{workspace}"))


def audit(tmp_path: Path, case: str, *flags: str, **options: object) -> Report:
    options.setdefault("modes", "args")
    return run_and_check(tmp_path / "traps", quirk(case, *flags), **options)


def params(report: Report) -> dict[tuple[str, str], str]:
    return {(t.name, p.param): p.status for t in report.modes[0].tools for p in t.params}


def found(report: Report, tool: str, param: str, kind: str) -> list[str]:
    return [f.class_id for f in report.findings if (f.tool, f.param, f.kind) == (tool, param, kind)]


def test_a_refusal_that_quotes_a_tool_name_does_not_crash_the_mode(tmp_path: Path) -> None:
    report = audit(tmp_path, "refuse-hint")
    mode = report.modes[0]
    assert mode.status != "failed" and "KeyError" not in mode.detail, (mode.status, mode.detail)
    assert params(report) == {("read_file", "path"): "blocked"}  # "set_working_dir" is a tool, not a parameter
    assert report.exit_code("low") == 2


def test_a_working_directory_sibling_gets_w(tmp_path: Path) -> None:
    report = audit(tmp_path, "sibling")
    rows = params(report)
    assert rows[("read_in", "path")] == "tested" and rows[("read_in", "workingDirectory")] == "tested"
    assert "outside-absolute" in found(report, "read_in", "path", "read")
    assert report.exit_code("low") == 1


def test_a_repository_named_path_beside_file_path_gets_w(tmp_path: Path) -> None:
    """``path`` (the repository, optional) beside ``filePath`` (a file in it): no name says which one is the
    directory, so the control tries each path parameter in turn as the working directory. Before, ``path`` got a
    file of W (or nothing) on every call, both parameters were "blocked", and the unchecked ``filePath`` hid."""
    report = audit(tmp_path, "repo-file")
    rows = params(report)
    assert rows == {("blame", "path"): "tested", ("blame", "filePath"): "tested"}, rows
    assert "outside-absolute" in found(report, "blame", "filePath", "read")
    assert report.exit_code("low") == 1
    clean = audit(tmp_path, "repo-file", "--fixed")
    assert clean.gaps() == [] and clean.at_or_above("low") == [], (clean.gaps(), clean.at_or_above("low"))
    assert clean.exit_code("low") == 0


def test_a_write_by_a_read_tool_names_the_request_that_did_it(tmp_path: Path) -> None:
    """Read probes run four at a time, so a write one of them made is found only in the snapshot after the batch.
    Before, that finding carried no request (``{}``) and could not be replayed; now the probes run again alone
    until the write repeats, and the finding names that call."""
    report = audit(tmp_path, "read-touches")
    writes = [f for f in report.findings if f.kind == "write"]
    assert writes and {f.severity for f in writes} == {"critical"}, [(f.class_id, f.severity) for f in writes]
    for f in writes:
        request = json.loads(f.request)
        assert request["params"]["name"] == "read_doc" and request["params"]["arguments"]["path"] == f.probe, f
    clean = audit(tmp_path, "read-touches", "--fixed")
    assert clean.gaps() == [] and clean.at_or_above("low") == [] and clean.exit_code("low") == 0


def test_a_boolean_named_allow_something_does_not_make_a_widening_tool(tmp_path: Path) -> None:
    """@cyanheads/git-mcp-server's git_commit has ``allowEmpty`` (a boolean): the rule for parameters that set the
    server's allowed set (``allowed_roots``) took it for one, so the tool was "probed last" as self-widening and
    never probed as what it is. Here a reader with that flag: its unchecked path must be found."""
    report = audit(tmp_path, "allow-flag")
    assert params(report) == {("read_file", "path"): "tested"}, params(report)
    assert "outside-absolute" in found(report, "read_file", "path", "read")
    clean = audit(tmp_path, "allow-flag", "--fixed")
    assert clean.gaps() == [] and clean.at_or_above("low") == [] and clean.exit_code("low") == 0


def test_path_names_by_words_and_tools_without_a_path(tmp_path: Path) -> None:
    report = audit(tmp_path, "names", write=True)
    rows = params(report)
    assert rows == {
        ("move_item", "src"): "tested",
        ("move_item", "dst"): "tested",
        ("read_typed", "path"): "tested",
    }, rows
    assert [f.severity for f in report.findings if f.tool == "move_item" and f.param == "dst"][:1] == ["critical"]
    assert not [g for g in report.gaps() if "get_time" in g or "clear_cache" in g]
    clean = audit(tmp_path, "names", "--fixed", write=True)
    assert clean.gaps() == [] and clean.at_or_above("low") == [], (clean.gaps(), clean.at_or_above("low"))
    assert clean.exit_code("low") == 0
    # probes that proved nothing still leave a trace: the classes each parameter was probed with
    typed = next(p for t in clean.modes[0].tools if t.name == "read_typed" for p in t.params)
    assert {"outside-absolute", "dot-dot", "symlink-leaf", "percent-encoding"} <= set(typed.classes)


def test_a_ref_enum_and_a_required_array_of_objects_are_filled(tmp_path: Path) -> None:
    report = audit(tmp_path, "ref-enum")
    assert params(report) == {("read_mode", "path"): "tested"}
    assert "outside-absolute" in found(report, "read_mode", "path", "read")


def test_an_editor_is_probed_on_existing_files(tmp_path: Path) -> None:
    report = audit(tmp_path, "edit-existing", write=True)
    assert params(report) == {("edit_note", "path"): "tested"}
    assert "outside-absolute" in found(report, "edit_note", "path", "write")
    clean = audit(tmp_path, "edit-existing", "--fixed", write=True)
    assert clean.at_or_above("low") == [] and clean.exit_code("low") == 0, clean.gaps()


def test_a_path_check_that_answers_only_resolved_paths_is_tested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A metadata-only tool (an optional path; it names where the path resolves, opening nothing the kernel
    sees): the control is W's marker named by its resolved path, and an outside canary named as served is an
    escape of kind metadata, low like every metadata finding."""
    report = audit(tmp_path, "path-check")
    assert params(report) == {("check_path", "path"): "tested"}, report.gaps()
    assert report.modes[0].tools[0].params[0].evidence == "path"
    named = [f for f in report.findings if (f.tool, f.kind) == ("check_path", "meta")]
    assert {f.class_id for f in named} >= {"symlink-leaf"}, [(f.class_id, f.kind) for f in report.findings]
    assert {f.severity for f in named} == {"low"}
    out = tmp_path / "report.json"
    command = ["--", sys.executable, str(QUIRK), "--case=path-check", "{workspace}"]
    code, _, _ = cli(
        capsys, "--trap-dir", str(tmp_path), "--mode", "args", "-q", "--format", "json", "-o", str(out), *command
    )
    assert code == 1
    number = 1 + next(i for i, f in enumerate(json.loads(out.read_text())["findings"]) if f["tool"] == "check_path")
    code, stdout, _ = cli(capsys, "--replay", str(out), str(number), *command)
    assert code == 1 and "as resolved/served" in stdout, stdout  # the replay judges it as a named path too
    clean = audit(tmp_path, "path-check", "--fixed")
    assert clean.at_or_above("low") == [] and clean.exit_code("low") == 0, (clean.gaps(), clean.at_or_above("low"))


def test_an_editor_whose_edits_are_optional_still_gets_one(tmp_path: Path) -> None:
    report = audit(tmp_path, "edit-optional", write=True)
    assert params(report) == {("edit_text", "path"): "tested"}, report.gaps()
    assert "outside-absolute" in found(report, "edit_text", "path", "write")
    clean = audit(tmp_path, "edit-optional", "--fixed", write=True)
    assert clean.at_or_above("low") == [] and clean.exit_code("low") == 0, clean.gaps()


def test_a_listing_that_refuses_ws_own_links_is_probed_from_a_clean_subdirectory(tmp_path: Path) -> None:
    report = audit(tmp_path, "dangling-list")
    assert params(report) == {("list_tree", "path"): "tested"}
    assert "outside-absolute" in found(report, "list_tree", "path", "list")


def test_read_only_shell_tools_and_network_git_tools_are_never_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv("QUIRK_CALL_LOG", str(log))
    report = audit(tmp_path, "readonly-shell", write=True)
    called = set(log.read_text().split())
    assert called == {"read_file"}, called
    skipped = {t.name: t.note for t in report.modes[0].tools if t.access == "skip"}
    assert set(skipped) == {"inspect", "git_clone", "git_pull", "git_remote_add"}
    assert all("exec" in note for note in skipped.values())


@pytest.mark.parametrize("http", [False, True])
def test_the_servers_error_log_is_plain_unless_the_auditor_chose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, http: bool
) -> None:
    """fastmcp draws each refused call's traceback in rich boxes, ~20 times the CPU of the refusal itself: the
    audit asks for plain ones (stdio and ``--start`` alike); a value in the auditor's own environment is kept."""
    log = tmp_path / "env.log"
    monkeypatch.setenv("QUIRK_ENV_LOG", str(log))
    monkeypatch.delenv("FASTMCP_ENABLE_RICH_TRACEBACKS", raising=False)
    if http:
        start = (sys.executable, str(QUIRK), "--case=pathless", "--http={port}", "{workspace}")
        spec = ServerSpec(url="http://127.0.0.1:{port}/mcp", start=start)
    else:
        spec = quirk("pathless")
    run_and_check(tmp_path / "plain", spec, modes="args")
    assert log.read_text().split() == ["false"]
    monkeypatch.setenv("FASTMCP_ENABLE_RICH_TRACEBACKS", "true")
    run_and_check(tmp_path / "chosen", spec, modes="args")
    assert log.read_text().split() == ["false", "true"]


def test_did_not_start_quotes_the_last_error_line(tmp_path: Path) -> None:
    report = audit(tmp_path, "start-errors")
    assert report.modes[0].status == "did not start"
    assert "RuntimeError: the real reason it stopped" in report.modes[0].detail


def test_a_command_that_cannot_be_executed_is_not_roots_unsupported(tmp_path: Path) -> None:
    spec = ServerSpec(command=(str(tmp_path / "no-such-server"), "{workspace}"))
    report = run_and_check(tmp_path / "traps", spec)
    assert [m.status for m in report.modes[:2]] == ["did not start", "did not start"]
    assert report.exit_code("low") == 2


# -- the learning step and the planner never crash on what a server sends ----------------------------------------

_NAMES = st.sampled_from(["path", "set_working_dir", "paths", "file", "dst", "x", "read_file", "content", "loc"])
_ERROR_TEXT = st.one_of(
    st.text(max_size=300),
    st.lists(
        st.one_of(
            _NAMES.map(lambda n: f"'{n}'"),
            _NAMES.map(lambda n: f'{{"expected": "array", "path": ["{n}"], "message": "Required"}}'),
            _NAMES.map(lambda n: f"loc=['{n}'] Field required"),
            st.sampled_from(["missing required", "Error: not a file.", "Call", "first.", "{", "}", "[", ":", "="]),
        ),
        max_size=12,
    ).map(" ".join),
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | _NAMES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8) | _NAMES, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(text=_ERROR_TEXT, tools=st.frozensets(_NAMES, max_size=3))
def test_learning_from_any_error_text_never_crashes(text: str, tools: frozenset[str]) -> None:
    plan = plan_shapes(
        {"name": "read_file", "inputSchema": {"properties": {"path": {"type": "string"}}}}, frozenset(), False
    )[0]
    names = learn_params(text)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in names.items())
    before = {leaf.name for leaf in plan.leaves}
    if validation_error(text):
        extra_required(plan, names, tools)
    learnt = {leaf.name for leaf in plan.leaves} - before
    assert not learnt & tools, "a tool name the error quotes became a parameter"
    assert len(plan.leaves) + len(plan.roles) <= 64
    plan.arguments("path", "OUT", "IN", "*", "NEW", others_dir="W")  # every learnt leaf can be filled


@settings(max_examples=300, deadline=None)
@given(schema=_JSON, name=st.text(max_size=20) | _NAMES)
def test_planning_any_schema_never_crashes(schema: object, name: str) -> None:
    for plan in plan_shapes({"name": name, "inputSchema": schema}, frozenset(), True):
        for leaf in plan.leaves:
            plan.arguments(leaf.name, "OUT", "IN", "*", "NEW", every_path=True, others_dir="W")


def test_ref_cycles_and_enums_in_arrays_are_bounded() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}, "path": {"type": "string"}}}
        },
        "properties": {
            "tree": {"$ref": "#/$defs/Node"},
            "kinds": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 2},
        },
        "required": ["tree", "kinds"],
    }
    plan = plan_shapes({"name": "read_tree", "inputSchema": schema}, frozenset(), False)[0]
    assert "tree.path" in plan.path_params
    assert plan.arguments("tree.path", "OUT", "IN", "*", "")["kinds"] == ["a", "a"]


# -- the command line: -q -o, --replay numbering, a replayed hang ------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["audit", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_quiet_report_to_a_file_still_prints_the_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    code, stdout, stderr = cli(
        capsys, "--trap-dir", str(tmp_path), "--mode", "args", "-q", "--format", "json", "-o", str(out),
        "--", sys.executable, str(QUIRK), "--case=sibling", "{workspace}",
    )  # fmt: skip
    assert code == 1 and stdout == ""
    assert "rootbound audit: findings:" in stderr and "root cause(s) (" in stderr and str(out) in stderr


def test_replay_numbers_are_the_texts_and_counts_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A server with findings of several severities in two modes: the text numbers its root causes 1..N without
    gaps, #N is the JSON's root cause N (its first finding named when that is not the JSON's finding N), and both
    count the same root causes."""
    out = tmp_path / "report.json"
    command = ["--", sys.executable, str(FLAWED), "--tools=read_prefix,stat_lexical,list_lexical", "{workspace}"]
    code, _, _ = cli(capsys, "--trap-dir", str(tmp_path), "-q", "--format", "json", "-o", str(out), *command)
    assert code == 1
    data = json.loads(out.read_text())
    report_text = cli(capsys, "--trap-dir", str(tmp_path), "-q", *command)[1]
    numbered = re.findall(r"^  #(\d+) \[([A-Z]+)\] .*?: (\S+) .*$", report_text, re.MULTILINE)
    assert numbered, report_text
    assert len(numbered) == data["rootCauses"] and f"{data['rootCauses']} root cause(s)" in report_text
    assert [int(n) for n, _, _ in numbered] == list(range(1, len(numbered) + 1))
    for number, severity, tool in numbered:
        finding = next(f for f in data["findings"] if f["rootCause"] == int(number))
        assert (finding["severity"].upper(), finding["tool"]) == (severity, tool)
        if finding["number"] != int(number):
            assert f"--replay REPORT.json {finding['number']})" in report_text
    severities = [f["severity"] for f in data["findings"]]
    assert severities == sorted(severities, key=["critical", "high", "medium", "low", "info"].index)


def test_a_replayed_hang_is_reproduced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    code, _, _ = cli(
        capsys, "--trap-dir", str(tmp_path), "--mode", "args", "-q", "--format", "json", "-o", str(out),
        "--timeout", "3", "--", sys.executable, str(QUIRK), "--case=fifo", "{workspace}",
    )  # fmt: skip
    data = json.loads(out.read_text())
    hang = next(f for f in data["findings"] if f["class_id"] == "fifo-block")
    assert hang["severity"] == "info" and code == 0, data["gaps"]
    code, stdout, _ = cli(capsys, "--replay", str(out), str(hang["number"]), "--use-report-command")
    assert code == 1, stdout
    assert "evidence the call blocked" in stdout


def _report(tmp_path: Path, trap: Path) -> Path:
    """A hand-written report (data from elsewhere): a seed, a trap path, a command, one finding."""
    out = tmp_path / "their-report.json"
    request = {"params": {"name": "read_file", "arguments": {"path": str(trap / "ws" / "x")}}}
    command = [sys.executable, "-c", "import sys; sys.exit(3)"]  # never started unless asked
    body = {"seed": "ab" * 16, "trap": str(trap), "command": command, "findings": [{"request": request}]}
    out.write_text(json.dumps(body), encoding="utf-8")
    return out


def test_replay_runs_the_reports_command_only_when_told(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _report(tmp_path, tmp_path / "no-such-trap")
    code, _, stderr = cli(capsys, "--replay", str(out), "1")
    assert code == 64 and "give the server command after --" in stderr and "sys.exit(3)" in stderr, stderr
    assert not (tmp_path / "no-such-trap").exists()  # nothing built, nothing run
    code, stdout, _ = cli(capsys, "--replay", str(out), "1", "--use-report-command")
    assert code == 2 and "did not start" in stdout, stdout  # told to: the report's command ran (and failed)
    assert not (tmp_path / "no-such-trap").exists()


def test_replay_never_takes_a_directory_it_did_not_make_for_a_trap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    theirs = tmp_path / "project"
    (theirs / "ws").mkdir(parents=True)
    (theirs / "ws" / "notes.txt").write_text("keep me", encoding="utf-8")
    out = _report(tmp_path, theirs)
    command = ["--", sys.executable, "-c", "import sys; sys.exit(3)"]
    code, _, stderr = cli(capsys, "--replay", str(out), "1", *command)
    assert code == 64 and "is not a trap this audit made" in stderr, stderr
    assert sorted(p.name for p in theirs.rglob("*")) == ["notes.txt", "ws"]  # untouched
    # a trap the audit did make from that seed (kept with --keep-trap) is used as it is
    (tmp_path / "traps").mkdir()
    kept = build_trap(tmp_path / "traps", seed="ab" * 16)
    code, stdout, stderr = cli(capsys, "--replay", str(_report(tmp_path, kept.base)), "1", *command)
    assert code == 2 and "did not start" in stdout, stdout + stderr
    assert kept.marker.token in kept.marker.path.read_text(encoding="utf-8")  # the kept trap is still there


def test_an_http_session_that_breaks_after_every_probe_keeps_its_results(tmp_path: Path) -> None:
    """Over HTTP a FIFO read answers after its timeout, as the session closes (the SDK's stream is gone:
    BrokenResourceError); the server also answers HTTP 500 to ``server/discover``. Every probe had run: the mode
    is ok, and the report notes the error."""
    start = (sys.executable, str(QUIRK), "--case=fifo", "--http={port}", "{workspace}")
    spec = ServerSpec(url="http://127.0.0.1:{port}/mcp", start=start)
    report = run_and_check(tmp_path / "traps", spec, modes="args", timeout=3.0)
    assert report.modes[0].status == "ok", report.modes[0].detail
    assert params(report) == {("read_file", "path"): "tested"}
    assert any(f.class_id == "fifo-block" for f in report.findings)


# -- evidence from the kernel, canaries beyond the trap ---------------------------------------------------------


@pytest.mark.parametrize("where", ["tmp", "userhome", "cwd"])
def test_a_grant_beyond_the_trap_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """A server that always allows the system temp dir, the user's home or its own working directory reads the
    canary planted there (and the planted files are gone afterwards)."""
    dirs = {name: tmp_path / name for name in ("tmp", "userhome", "cwd")}
    for d in dirs.values():
        d.mkdir()
    monkeypatch.setenv("QUIRK_GRANTS", str(dirs[where]))
    report = audit(tmp_path, "grants", far_temp=dirs["tmp"], far_home=dirs["userhome"], server_cwd=dirs["cwd"])
    hits = [f for f in report.findings if f.location == where and f.kind == "read"]
    assert hits and hits[0].severity == "high", [(f.class_id, f.location) for f in report.findings]
    assert all(list(d.iterdir()) == [] for d in dirs.values()), "a canary beyond the trap was left behind"


def test_a_metadata_only_pdf_reader_is_tested_and_caught_by_the_kernel(tmp_path: Path) -> None:
    """It takes only PDFs and answers only a page count: the typed canary passes its check, the kernel sees the
    marker opened (the control) and an outside PDF opened through W's symlinked directory (the escape)."""
    report = audit(tmp_path, "pdf-info")
    tool = report.modes[0].tools[0]
    assert params(report) == {("pdf_info", "path"): "tested"} and tool.evidence == "open"
    kernel = [f for f in report.findings if f.source == "kernel" and f.severity == "high"]
    assert {f.class_id for f in kernel} >= {"symlink-parent"}, [(f.class_id, f.kind) for f in report.findings]
    assert "seen by  the kernel" in report.to_text()
    clean = audit(tmp_path, "pdf-info", "--fixed")
    assert clean.at_or_above("low") == [] and clean.exit_code("low") == 0, (clean.gaps(), clean.at_or_above("low"))


def test_a_tool_that_widens_the_servers_bounds_is_probed(tmp_path: Path) -> None:
    report = audit(tmp_path, "widen")
    rows = params(report)
    assert rows == {
        ("configure", "allowed_roots[]"): "tested",
        ("set_working_dir", "path"): "tested",
        ("read_file", "path"): "tested",
    }, rows
    widened = {(f.tool, f.severity) for f in report.findings if f.class_id == "self-widening"}
    assert widened == {("configure", "high"), ("set_working_dir", "high")}, widened
    clean = audit(tmp_path, "widen", "--fixed")
    assert clean.at_or_above("low") == [] and clean.exit_code("low") == 0, (clean.gaps(), clean.at_or_above("low"))


def test_a_kernel_finding_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    code, _, _ = cli(
        capsys, "--trap-dir", str(tmp_path), "--mode", "args", "-q", "--format", "json", "-o", str(out),
        "--", sys.executable, str(QUIRK), "--case=pdf-info", "{workspace}",
    )  # fmt: skip
    assert code == 1
    data = json.loads(out.read_text())
    first = data["findings"][0]
    assert first["source"] == "kernel" and first["severity"] == "high", first
    code, stdout, _ = cli(capsys, "--replay", str(out), "1", "--use-report-command")
    assert code == 1, stdout
    assert "evidence the kernel saw the server" in stdout
    assert list(tmp_path.iterdir()) == [out]


def test_a_path_behind_another_name_is_found_by_behaviour(tmp_path: Path) -> None:
    report = audit(tmp_path, "hidden-param")
    assert params(report) == {("get_summary", "source_text"): "tested"}, report.coverage()
    kernel = [f for f in report.findings if f.source == "kernel" and f.class_id == "outside-absolute"]
    assert kernel and kernel[0].severity == "high" and kernel[0].param == "source_text"
    assert report.exit_code("low") == 1
    clean = audit(tmp_path, "hidden-param", "--fixed")
    assert clean.at_or_above("low") == [] and clean.exit_code("low") == 0, (clean.gaps(), clean.at_or_above("low"))


def test_a_server_without_a_path_tool_is_clean(tmp_path: Path) -> None:
    """Only tools without a path parameter (a clock, a writer by name that takes nothing): nothing to test, and
    nothing missed, in either mode: exit 0, not "incomplete"."""
    spec = ServerSpec(command=(sys.executable, str(QUIRK), "--case=pathless", "--any-root"))
    report = run_and_check(tmp_path / "traps", spec)
    assert [m.status for m in report.modes[:1]] == ["no path tool"], [(m.status, m.detail) for m in report.modes]
    assert report.gaps() == [] and report.exit_code("low") == 0


def test_the_readme_form_finds_a_script_in_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``rootbound audit -- python my_server.py {workspace}``, typed in the script's folder: the server runs there
    (not inside the trap), so it starts; the canary planted there is gone afterwards."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "my_server.py").write_text(QUIRK.read_text(encoding="utf-8"), encoding="utf-8")
    traps = tmp_path / "traps"
    traps.mkdir()
    monkeypatch.chdir(project)
    code, stdout, _ = cli(
        capsys, "--trap-dir", str(traps), "--mode", "args", "-q",
        "--", sys.executable, "my_server.py", "--case=sibling", "{workspace}",
    )  # fmt: skip
    assert code == 1 and "mode args: ok" in stdout, stdout
    assert sorted(p.name for p in project.iterdir()) == ["my_server.py"]


def test_a_tree_a_file_uri_made_in_the_cwd_is_removed(tmp_path: Path) -> None:
    """``Path("file:///…/rbt-new-X.md").resolve()`` is ``<cwd>/file:/…/rbt-new-X.md`` and the converter makes its
    parents there (pymupdf4llm-mcp does). Before, that tree was left in the server's cwd after the audit (the
    audit removed only files it named directly in the cwd); ``run_and_check`` fails if the cwd changed."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    report = audit(tmp_path, "uri-tree", write=True, server_cwd=cwd)
    assert report.findings, "the converter writes anywhere: it must be found"
    assert list(cwd.iterdir()) == [], sorted(p.name for p in cwd.iterdir())
    assert not [n for n in report.notes if n.startswith("could not remove")], report.notes


def test_a_tree_with_a_file_the_audit_did_not_make_is_left_and_said(tmp_path: Path) -> None:
    """The same converter also writes a file of its own into the ``file:`` tree: the tree is left whole (the
    audit removes only what it named) and the report says so."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    options = AuditOptions(
        spec=quirk("uri-tree", "--foreign"), trap_dir=tmp_path, modes="args", write=True, server_cwd=cwd
    )
    report = anyio.run(run_audit, options)
    tree = cwd / "file:"
    assert (tree / "server-notes.txt").read_text() == "kept\n"
    assert [p.name for p in tree.rglob("rbt-new-*")], "the probe's own file goes with the tree it is in"
    notes = [n for n in report.notes if n.startswith("could not remove") and "file:" in n]
    assert notes and "did not make" in notes[0] and "server-notes.txt" in notes[0], report.notes
    assert [p.name for p in cwd.iterdir()] == ["file:"], "the planted canaries are still removed"


def test_an_id_another_tool_returns_for_a_path_is_a_gap(tmp_path: Path) -> None:
    """``open_doc(path)`` (checked) answers ``doc-1``; ``read_doc(doc_id)`` reads that file. The audit does not
    probe through the chain, so ``read_doc`` must be a gap with its reason (issue 47: "probed, or listed as gaps,
    never 'not a path tool'"). Before, its row said "not a path tool" and the audit exited 0 (clean)."""
    report = audit(tmp_path, "doc-ids")
    assert params(report) == {("open_doc", "path"): "tested"}
    rows = {(row["tool"], row["status"]): row["detail"] for row in report.coverage()}
    assert "an id another tool returns ('open_doc' takes a path)" in rows.get(("read_doc", "not tested"), ""), rows
    assert any("read_doc not tested" in g and "doc_id" in g for g in report.gaps()), report.gaps()
    assert report.at_or_above("low") == [] and report.exit_code("low") == 2
