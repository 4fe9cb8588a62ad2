"""What issue 47 saw the audit judge wrongly, each reproduced by a small server of our own (``defect_server.py``,
one ``--case`` each) and audited for real over stdio. Every test asserts outcomes (verdict, findings, exit code),
never timing; each fails on the audit before issue 47 (the reason is in its docstring)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rootbound.audit import Report, ServerSpec
from rootbound.audit.sandbox import sandbox_support
from tests.audit.conftest import run_and_check

DEFECT = Path(__file__).parent / "defect_server.py"


def defect(case: str, *flags: str, workspace: bool = True) -> ServerSpec:
    return ServerSpec(
        command=(sys.executable, str(DEFECT), f"--case={case}", *flags, *(["{workspace}"] if workspace else []))
    )


def audit(tmp_path: Path, case: str, *flags: str, workspace: bool = True, **options: object) -> Report:
    options.setdefault("modes", "args")
    return run_and_check(tmp_path / "traps", defect(case, *flags, workspace=workspace), **options)


def claims(report: Report) -> list[str]:
    return [f"{f.severity} {f.class_id} {f.tool} {f.param} {f.kind} {f.evidence}" for f in report.at_or_above("low")]


def test_state_the_server_keeps_in_its_home_is_never_a_finding(tmp_path: Path) -> None:
    """A clean server that writes ``~/.pdf_tools_temp`` at start and ``~/.code-index`` on every call, and lists
    HOME each time. Before, its own files were pinned on whatever call ran (CRITICAL on a tool with only an enum
    parameter), and a listing of HOME on the tilde probe; every report also carried the audit's own baseline reads
    as "outside any call ... the kernel saw the server read"."""
    report = audit(tmp_path, "home-state", write=True, trap_home=True)
    assert claims(report) == []
    assert report.exit_code("low") == 0, report.gaps()
    assert not [n for n in report.notes if n.startswith("outside any call") and "rbt-" in n], report.notes
    assert any(".pdf_tools_temp" in n and "at start" in n for n in report.notes), report.notes


def test_a_reader_of_real_xlsx_workbooks_is_probed_with_them(tmp_path: Path) -> None:
    """The tool refuses anything but a real workbook ("must point to an Excel file (.xlsx)"). Before, no control
    passed (the trap had no .xlsx): the tool was "blocked" and its unbounded reads missed."""
    report = audit(tmp_path, "xlsx")
    reads = {f.class_id for f in report.findings if f.tool == "read_sheet" and f.kind == "read"}
    assert "outside-absolute" in reads, claims(report)
    assert report.exit_code("low") == 1
    clean = audit(tmp_path, "xlsx", "--fixed")
    assert claims(clean) == [] and clean.exit_code("low") == 0, (claims(clean), clean.gaps())


def test_a_refusal_that_asks_for_confirm_true_is_obeyed(tmp_path: Path) -> None:
    """A clean delete tool that refuses "Pass confirm=True to proceed." Before, it stayed "blocked" and the clean
    server could never reach exit 0."""
    report = audit(tmp_path, "confirm", write=True)
    rows = {(t.name, p.param): (p.status, p.probes) for t in report.modes[0].tools for p in t.params}
    assert rows[("delete_file", "path")][0] == "tested" and rows[("delete_file", "path")][1] > 0, rows
    assert claims(report) == [] and report.exit_code("low") == 0, (claims(report), report.gaps())


def test_a_refusal_that_lists_the_values_a_filler_takes_is_obeyed(tmp_path: Path) -> None:
    """A clean server whose tools refuse the audit's fillers and list what they take ("Supported: ['python',
    'html']", "Must be one of: code, markdown, raw"), as cursor-notebook-mcp's export and change_cell_type do.
    Before, both stayed "blocked" and the clean server could never reach exit 0."""
    report = audit(tmp_path, "values", write=True)
    rows = {(t.name, p.param): (p.status, p.probes) for t in report.modes[0].tools for p in t.params}
    for tool in ("export_file", "change_kind"):
        assert rows[(tool, "path")][0] == "tested" and rows[(tool, "path")][1] > 0, rows
    assert claims(report) == [] and report.exit_code("low") == 0, (claims(report), report.gaps())


def test_the_keys_a_refusal_names_for_an_object_are_filled(tmp_path: Path) -> None:
    """A clean server whose ``cells_to_add`` is an array of free-form objects (an empty one changes nothing) and
    whose refusals alone name the keys each needs ("a dictionary with 'cell_type' and 'source' keys") and the
    values ``cell_type`` takes ("Must be 'code' or 'markdown'"); a free-form ``entry`` that needs "'title' is a
    required property", as cursor-notebook-mcp's ``notebook_bulk_add_cells``. Before, the audit sent ``[]`` (a
    no-op that never passed a write control) and never learnt keys: both tools untested, exit 2."""
    report = audit(tmp_path, "keys", write=True)
    rows = {(t.name, p.param): (p.status, p.probes) for t in report.modes[0].tools for p in t.params}
    for tool, param in (("bulk_add_cells", "notebook_path"), ("add_entry", "path")):
        assert rows[(tool, param)][0] == "tested" and rows[(tool, param)][1] > 0, rows
    assert claims(report) == [] and report.exit_code("low") == 0, (claims(report), report.gaps())


def test_a_writer_gets_a_range_and_a_table_of_values_that_fit(tmp_path: Path) -> None:
    """A writer with no bounds whose ``range`` must parse (its description gives "e.g., A1:C10") and whose 2-D
    ``values`` must have as many rows as the range, as negokaz-excel's writers do. Before, the fillers ("rbt", [])
    were refused before the path was used: the write never happened and the escape was not found as a write. A
    second writer's ``range`` is optional in its schema but needed ("parameter is invalid" without it)."""
    report = audit(tmp_path, "cells", write=True)
    for tool in ("write_cells", "make_table"):  # make_table's range is optional, and needed all the same
        writes = [f for f in report.findings if f.tool == tool and f.kind == "write" and f.class_id != "hardlink"]
        assert writes and {f.severity for f in writes} == {"critical"}, claims(report)
    assert report.exit_code("low") == 1
    clean = audit(tmp_path, "cells", "--fixed", write=True)
    assert claims(clean) == [] and clean.exit_code("low") == 0, (claims(clean), clean.gaps())


def test_a_server_that_never_asks_for_roots_is_not_roots_unsupported(tmp_path: Path) -> None:
    """It starts, answers, never asks for roots, and serves only its own project: every control fails. Before,
    the mode was "roots unsupported" (not offered, so no gap); it ignores roots, and its untested tools are gaps
    that --accept-partial does not hide."""
    report = audit(tmp_path, "no-roots", workspace=False, modes="roots", accept_partial=True)
    roots = report.modes[0]
    assert roots.mode == "roots" and roots.status == "ignores roots", (roots.status, roots.detail)
    assert report.gaps(), "a failed control in a mode that ignores roots is a gap"
    assert report.exit_code("low") == 2
    assert "roots unsupported" not in report.to_text().split("Coverage")[1].split("\n")[1]


def _worst_by_tool(report: Report) -> dict[str, str]:
    rank = ["info", "low", "medium", "high", "critical"]
    worst: dict[str, str] = {}
    for f in report.findings:
        if rank.index(f.severity) > rank.index(worst.get(f.tool, "info")):
            worst[f.tool] = f.severity
    return worst


def test_each_tool_of_a_server_that_ignores_roots_is_reported_at_its_own_severity(tmp_path: Path) -> None:
    """A server that never asks for roots and has no bounds: a workbook reader, and a writer into existing
    workbooks only (like excelize: no file is created, and a text file is refused). Before, the writer was never
    tried on a workbook (its write controls used a text file and a new name), so it counted as a reader, and every
    tool's escape was folded into one "ignores roots" finding on the first tool: the writer's critical escape
    showed nowhere."""
    report = audit(tmp_path, "typed-write", workspace=False, modes="roots", write=True)
    worst = _worst_by_tool(report)
    assert worst == {"read_sheet": "high", "write_cell": "critical"}, claims(report)
    writes = [f for f in report.findings if f.tool == "write_cell" and f.kind == "write"]
    assert writes and all(".xlsx" in f.probe for f in writes), claims(report)
    assert report.exit_code("low") == 1


def test_archive_tools_are_probed_with_archives_and_their_outputs_are_caused(tmp_path: Path) -> None:
    """An archive server that never asks for roots, its ``input`` described in Chinese only: a lister that refuses
    anything but ``.zip`` by its name (never opening it), an extractor that writes beside the archive, and a
    compressor that writes ``<input>.zip`` beside its input. Before, the lister and the extractor were "no path
    parameter" (found only by the kernel seeing W's text marker opened, which they never open), and the
    compressor's ``rbt-far-*.zip`` and the extractor's members were "caused by no probe": one finding, high."""
    report = audit(tmp_path, "archive", workspace=False, modes="roots", write=True)
    worst = _worst_by_tool(report)
    assert worst == {"list_archive": "high", "extract": "critical", "compress": "critical"}, claims(report)
    assert report.exit_code("low") == 1


def test_a_widening_tool_is_judged_by_the_worst_it_lets_a_reader_do(tmp_path: Path) -> None:
    """``set_project_path`` widens to any directory; after it, a summary tool reads the outside canary whole (the
    kernel sees it) and answers only with its line count and its siblings' names. Before, the first piece of
    evidence was taken (the names: a listing, medium), not the read the kernel saw (high)."""
    report = audit(tmp_path, "widen-summary")
    widening = [f for f in report.findings if f.class_id == "self-widening"]
    assert [(f.tool, f.severity) for f in widening] == [("set_project_path", "high")], claims(report)
    fixed = audit(tmp_path, "widen-summary", "--fixed")
    assert claims(fixed) == [] and fixed.exit_code("low") == 0, (claims(fixed), fixed.gaps())


def test_a_clean_notebook_server_reaches_exit_0(tmp_path: Path) -> None:
    """A clean notebook server: every path must end with .ipynb; a rename needs an existing notebook and a new
    name that is one; ``source`` beside ``notebook_path`` is a cell's text; an export tool's description mentions
    the nbconvert subprocess it runs. Before, the rename was "blocked" (its controls paired the notebook with a
    text file or a name ending ``.ipynb2``), ``source`` was probed as a path (its control passed through
    ``notebook_path``), and the export tool was "exec-like": exit 2 for a clean server."""
    report = audit(tmp_path, "notebook", write=True)
    rows = {(t.name, p.param): p.status for t in report.modes[0].tools for p in t.params}
    assert rows[("notebook_rename", "old_path")] == "tested" and rows[("notebook_rename", "new_path")] == "tested"
    assert rows[("notebook_edit_cell", "source")] == "no path", rows
    assert rows[("notebook_export", "notebook_path")] == "tested", rows
    assert claims(report) == [] and report.exit_code("low") == 0, (claims(report), report.gaps())


def test_a_parameter_the_server_only_compares_as_a_string_is_no_path(tmp_path: Path) -> None:
    """As cursor-notebook-mcp's notebook_get_server_path_context: ``project_directory`` is compared with the roots
    as a string, never opened; every control answers, none shows W, and the kernel sees no access. Before, it
    stayed "not tested" ("the control never showed W's file"): exit 2 for a clean server. Now it is "no path" with
    its reason said in the row, and the reader beside it is still tested."""
    report = audit(tmp_path, "path-context")
    rows = {(t.name, p.param): p for t in report.modes[0].tools for p in t.params}
    row = rows[("get_server_path_context", "project_directory")]
    assert row.status == "no path" and "the control showed no file access" in row.detail, row
    assert rows[("read_notebook", "notebook_path")].status == "tested", rows
    assert claims(report) == [] and report.exit_code("low") == 0, (claims(report), report.gaps())


def test_a_parameter_refused_in_plain_text_stays_a_gap(tmp_path: Path) -> None:
    """The other side of "no path": a reader that answers every spelling of W with a refusal in plain text (no
    isError) and opens nothing is not "no path" but a gap (its control failed): exit 2."""
    report = audit(tmp_path, "text-refusal")
    row = report.modes[0].tools[0].params[0]
    assert row.status == "not tested" and "no file access" not in row.detail, row
    assert claims(report) == [] and report.exit_code("low") == 2, report.gaps()


def test_a_parameter_whose_share_ran_out_is_resumed_at_the_end_of_its_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parameter whose share of the budget runs out is probed again at the end of its mode, in the time the mode
    may still use, with the probes it missed only (as cursor-notebook-mcp's notebook_export, each call running
    nbconvert). The share is forced to nothing here (no timing is asserted): every parameter's first pass sends
    nothing. Before, each stayed "0 probes: its share of the budget ran out": exit 2 for a clean server."""
    monkeypatch.setattr("rootbound.audit.exercise.fair_share", lambda left_time, left, modes_left: 0.0)
    report = audit(tmp_path, "notebook", write=True)
    rows = {(t.name, p.param): p for t in report.modes[0].tools for p in t.params}
    export = rows[("notebook_export", "notebook_path")]
    assert export.status == "tested" and export.probes > 0, export
    assert all(p.status in ("tested", "no path") for p in rows.values()), rows
    assert claims(report) == [] and report.exit_code("low") == 0, (claims(report), report.gaps())


def test_a_dispatcher_tools_free_form_arguments_are_probed(tmp_path: Path) -> None:
    """``order(action, args: {})``: one tool, an enum of actions and free-form arguments. Before, it was "no path
    tool" (exit 0) while ``order(action="read_file", args={"path": ...})`` read anything."""
    report = audit(tmp_path, "dispatcher", write=True)
    reads = {f.class_id for f in report.findings if f.tool == "order" and f.kind in ("read", "list")}
    assert "outside-absolute" in reads, claims(report)
    assert report.exit_code("low") == 1
    rows = {(t.name, p.param) for t in report.modes[0].tools for p in t.params}
    assert ("order", "args.path (action=read_file)") in rows, rows
    clean = audit(tmp_path, "dispatcher", "--fixed", write=True)
    assert claims(clean) == [] and clean.exit_code("low") == 0, (claims(clean), clean.gaps())
    statuses = {p.param: p.status for t in clean.modes[0].tools for p in t.params}
    assert statuses["args.path (action=status)"] == "no path", statuses  # answers the same without a path


def test_a_case_folded_parent_of_the_workspace_is_probed(tmp_path: Path) -> None:
    """The check compares case-folded whole paths (having matched W's own name exactly, so the trap's ``WS`` and
    ``ｗｓ`` siblings are refused): ``A/ws`` passes for ``a/ws`` on a case-sensitive file system. Before, no probe
    spelt the parent in another case, and the audit exited 0."""
    report = audit(tmp_path, "casefold")
    assert {f.class_id for f in report.at_or_above("high")} == {"normaliser"}, claims(report)
    assert report.exit_code("low") == 1
    clean = audit(tmp_path, "casefold", "--fixed")
    assert claims(clean) == [] and clean.exit_code("low") == 0, (claims(clean), clean.gaps())


def test_a_configure_tool_that_widens_the_bounds_through_a_settings_object(tmp_path: Path) -> None:
    """``configure(settings={"allowed_roots": ...})`` (a string or an array): before, the nested parameter was
    not seen as widening; its control set the server's bounds to W's marker, which blocked every other tool, and
    the escape was missed (exit 2)."""
    report = audit(tmp_path, "widen")
    widened = {(f.tool, f.class_id) for f in report.findings}
    assert ("configure", "self-widening") in widened, claims(report)
    assert report.exit_code("low") == 1
    clean = audit(tmp_path, "widen", "--fixed")
    assert claims(clean) == [] and clean.exit_code("low") == 0, (claims(clean), clean.gaps())


def test_paths_inside_patch_texts_are_probed(tmp_path: Path) -> None:
    """``apply_patch(patch)`` in Codex's format and ``apply_diff(diff)``, a unified diff the server alone names
    (its refusal says "--- a/PATH"), write wherever their patches say. Before, neither had a path parameter: "no
    path parameter", skipped, and the server came out clean (exit 0)."""
    report = audit(tmp_path, "patch", write=True)
    writes = {(f.tool, f.param, f.severity) for f in report.findings if f.kind == "write"}
    for tool, param in (("apply_patch", "patch"), ("apply_diff", "diff")):
        assert (tool, param, "critical") in writes, claims(report)
    assert report.exit_code("low") == 1
    clean = audit(tmp_path, "patch", "--fixed", write=True)
    assert claims(clean) == [] and clean.exit_code("low") == 0, (claims(clean), clean.gaps())
    rows = {(t.name, p.param): (p.status, p.probes) for t in clean.modes[0].tools for p in t.params}
    assert rows[("apply_patch", "patch")][0] == rows[("apply_diff", "diff")][0] == "tested", rows


NPM_404 = """npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/@rbt%2fnope - Not found
npm error 404
npm error 404  '@rbt/nope@*' is not in this registry.
npm error 404
npm error 404 Note that you can also install from a
npm error 404 tarball, folder, http url, or git url.
npm error A complete log of this run can be found in: /tmp/rbt-npm-debug-0.log
"""


def test_a_server_that_does_not_start_is_reported_by_its_error_line(tmp_path: Path) -> None:
    """npm's last line says where its log is; the line that says what went wrong is above it. Before, the report
    named "A complete log of this run can be found in"."""
    code = f"import sys; sys.stderr.write({NPM_404!r}); sys.exit(1)"
    report = run_and_check(
        tmp_path / "traps", ServerSpec(command=(sys.executable, "-c", code, "{workspace}")), modes="args"
    )
    mode = report.modes[0]
    assert mode.status == "did not start", (mode.status, mode.detail)
    assert "is not in this registry" in mode.detail, mode.detail
    assert report.exit_code("low") == 2


def test_input_and_output_named_as_files_are_path_parameters() -> None:
    """A converter's ``input``/``output``: before, neither was a path (no path word in the name), and the tool was
    "no path parameter"; a text tool's ``input`` stays what it is."""
    from rootbound.audit.tools import plan_tool

    convert = {
        "name": "convert",
        "inputSchema": {
            "type": "object",
            "properties": {
                "input": {"type": "string", "description": "The file to convert"},
                "output": {"type": "string", "description": "Where to write the output file"},
            },
            "required": ["input"],
        },
    }
    assert [leaf.name for leaf in plan_tool(convert, frozenset(), True).leaves] == ["input", "output"]
    summarize = {"name": "summarize", "inputSchema": {"type": "object", "properties": {"input": {"type": "string"}}}}
    assert plan_tool(summarize, frozenset(), True).leaves == []


def test_accept_partial_says_which_mode_went_untested() -> None:
    """--accept-partial may turn gaps into exit 0, never silently: the verdict names a mode not tested at all.
    Before, it said only "incomplete (accepted)"."""
    from rootbound.audit.report import ModeRun, ParamStatus, ToolStatus

    report = Report("srv", "/t", False, accept_partial=True)
    tested = ToolStatus("read_file", "read", tested=True, params=[ParamStatus("path", "tested", probes=3)])
    untested = ToolStatus("read_sheet", "read", params=[ParamStatus("file_path", "blocked", "refused")])
    report.modes += [ModeRun("args", tools=[tested]), ModeRun("roots", "ignores roots", tools=[untested])]
    assert report.exit_code("low") == 0
    verdict = report.summary()
    assert "accept-partial" in verdict and "mode roots not tested at all" in verdict, verdict


def test_typed_canaries_are_real_files_of_their_type() -> None:
    """Each generator makes a file its readers open, with the token where they show it; a description, a schema
    pattern or a refusal's example names the type; a refusal names the flag to set."""
    import io
    import json
    import sqlite3
    import tarfile
    import tempfile
    import zipfile

    from rootbound.audit.asks import refusal_flag, wanted_type
    from rootbound.audit.filetypes import REGISTRY, named_type

    token = "rbt-token-0123456789ab"
    with zipfile.ZipFile(io.BytesIO(REGISTRY["xlsx"].make(token))) as book:
        assert "xl/workbook.xml" in book.namelist() and token in book.read("xl/sharedStrings.xml").decode()
        # what a writer of workbooks needs (excelize: a dimension to update, a stylesheet to style, a sheet view
        # to copy a sheet), and a sheet named like the audit's filler, so that ``sheetName`` names one that exists
        sheet = book.read("xl/worksheets/sheet1.xml").decode()
        assert "<dimension " in sheet and "<sheetView " in sheet and "<cellXfs " in book.read("xl/styles.xml").decode()
        assert '<sheet name="rbt" ' in book.read("xl/workbook.xml").decode()
    with zipfile.ZipFile(io.BytesIO(REGISTRY["pptx"].make(token))) as deck:
        assert token in deck.read("ppt/slides/slide1.xml").decode()
    assert token in json.loads(REGISTRY["ipynb"].make(token))["cells"][0]["source"][0]
    with tarfile.open(fileobj=io.BytesIO(REGISTRY["tar"].make(token))) as tar:
        member = tar.extractfile(f"{token}.txt")  # named by the token: a listing of the archive shows it
        assert member is not None and token in member.read().decode()
    with zipfile.ZipFile(io.BytesIO(REGISTRY["zip"].make(token))) as archive:
        assert archive.namelist() == [f"{token}.txt"]
    assert named_type("List an archive: ZIP, 7Z, TAR or TAR.GZ") == "zip"  # several named: the first
    db = REGISTRY["sqlite"].make(token)
    assert db.startswith(b"SQLite format 3\x00")
    with tempfile.TemporaryDirectory() as where:
        (Path(where) / "db.sqlite").write_bytes(db)
        conn = sqlite3.connect(Path(where) / "db.sqlite")
        assert conn.execute("SELECT note FROM rbt").fetchone() == (token,)
        conn.close()
    assert named_type("file_path must point to an Excel file (.xlsx), e.g. 'report.xlsx'") == "xlsx"
    assert named_type("Read the cells of an Excel workbook.") == "xlsx"
    assert named_type("a Jupyter notebook") == "ipynb" and named_type("any text") is None
    schema = {"type": "object", "properties": {"nb": {"type": "string", "pattern": r"\.ipynb$"}}}
    assert wanted_type({"name": "edit_cell", "inputSchema": schema}) == "ipynb"
    assert refusal_flag("Refusing to delete without confirmation. Pass confirm=True to proceed.") == "confirm"
    assert refusal_flag('set "overwrite": true to replace it') == "overwrite"
    assert refusal_flag("access denied") is None


@pytest.mark.parametrize("kernel", ["auto", "inotify"])
def test_kernel_evidence_with_and_without_process_ids(tmp_path: Path, kernel: str) -> None:
    """fanotify (where the kernel allows it: the audit's own reads dropped by pid) or inotify (windows and the
    differential alone): the same kernel-only escape is found, the same clean server is clean, and the report says
    which attribution it used."""
    quirk = Path(__file__).parent / "quirk_server.py"

    def run(*flags: str) -> Report:
        spec = ServerSpec(command=(sys.executable, str(quirk), "--case=pdf-info", *flags, "{workspace}"))
        return run_and_check(tmp_path / "traps", spec, modes="args", kernel=kernel)

    report = run()
    assert {f.class_id for f in report.findings if f.source == "kernel"} >= {"symlink-parent"}, claims(report)
    method = next(n for n in report.notes if n.startswith("kernel evidence:"))
    assert ("inotify" in method) if kernel == "inotify" else ("fanotify" in method or "inotify" in method), method
    clean = run("--fixed")
    assert claims(clean) == [] and clean.exit_code("low") == 0, (claims(clean), clean.gaps())


def test_a_started_http_server_that_exits_is_reported_with_its_status_and_error_line(tmp_path: Path) -> None:
    """--start: the audit started the process, so it has its exit status; the report gives it with the error line.
    Before, only "the server exited with status 1 before listening" (no reason)."""
    code = f"import sys; sys.stderr.write({NPM_404!r}); sys.exit(3)"
    spec = ServerSpec(url="http://127.0.0.1:{port}/mcp", start=(sys.executable, "-c", code, "{port}", "{workspace}"))
    report = run_and_check(tmp_path / "traps", spec, modes="args")
    mode = report.modes[0]
    assert mode.status == "did not start", (mode.status, mode.detail)
    assert "exited with status 3" in mode.detail and "is not in this registry" in mode.detail, mode.detail


@pytest.mark.skipif(sandbox_support() is not None, reason="the sandbox needs a mount namespace here")
def test_a_stdio_server_that_exits_at_start_is_reported_with_its_status_and_error_line(tmp_path: Path) -> None:
    """stdio, sandboxed (the default): the SDK starts and owns the process, so before, the report gave only the
    error line; the sandbox's entry process now runs the server as its child and says how it ended."""
    code = f"import sys; sys.stderr.write({NPM_404!r}); sys.exit(3)"
    spec = ServerSpec(command=(sys.executable, "-c", code, "{workspace}"))
    report = run_and_check(tmp_path / "traps", spec, modes="args")
    mode = report.modes[0]
    assert mode.status == "did not start", (mode.status, mode.detail)
    assert "exited with status 3" in mode.detail and "is not in this registry" in mode.detail, mode.detail
    assert "sandbox:" not in mode.detail, mode.detail  # the status line itself is not the error line
    killed = "import os, signal, sys; sys.stderr.write('fatal: out of luck\\n'); os.kill(os.getpid(), signal.SIGKILL)"
    spec = ServerSpec(command=(sys.executable, "-c", killed, "{workspace}"))
    report = run_and_check(tmp_path / "traps", spec, modes="args")
    assert "was killed by signal 9" in report.modes[0].detail and "out of luck" in report.modes[0].detail


def test_a_finding_on_a_canary_of_an_asked_for_type_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The .xlsx canaries are planted on demand, so the trap the seed rebuilds lacks them: --replay plants the
    ones the request names again (in W or an outside directory of the trap), and the escape reproduces."""
    import json

    from rootbound.cli import main

    out = tmp_path / "report.json"
    command = ["--", sys.executable, str(DEFECT), "--case=xlsx", "{workspace}"]
    capsys.readouterr()
    code = main(
        ["audit", "--trap-dir", str(tmp_path), "--mode", "args", "-q", "--format", "json", "-o", str(out), *command]
    )
    assert code == 1
    data = json.loads(out.read_text())
    number = next(f["number"] for f in data["findings"] if f["tool"] == "read_sheet" and f["probe"].endswith(".xlsx"))
    capsys.readouterr()
    code = main(["audit", "--replay", str(out), str(number), "--use-report-command"])
    stdout = capsys.readouterr().out
    assert code == 1, stdout
    assert list(tmp_path.iterdir()) == [out]


def test_the_sandbox_hides_the_auditor_s_home_from_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that reads the auditor's key at start (an ``~/.ssh`` of a home of the test's own) gets nothing in
    the sandbox, and the report says the sandbox was on; with ``--no-sandbox`` the same server reads it (the control:
    the key was there to take)."""
    reason = sandbox_support()
    if reason is not None:
        pytest.skip(f"no sandbox on this kernel: {reason}")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_ed25519"
    key.write_text("the auditor's key\n")
    said = tmp_path / "peeked.txt"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ROOTBOUND_TEST_PEEK", str(key))
    monkeypatch.setenv("ROOTBOUND_TEST_PEEK_REPORT", str(said))
    report = audit(tmp_path, "peek")
    assert said.read_text().startswith("refused:"), said.read_text()
    assert [n for n in report.notes if n.startswith("sandbox: on (")], report.notes
    assert claims(report) == [] and report.exit_code("low") == 0, (claims(report), report.gaps())
    control = audit(tmp_path, "peek", sandbox=False)
    assert said.read_text() == "got:the auditor's key\n"
    assert "sandbox: off: not requested (--no-sandbox)" in control.notes


def test_replay_runs_the_server_in_the_sandbox_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--replay starts the server a report names (often someone else's): sandboxed like the audit. The replayed
    server reads the auditor's key at start: refused, and the escape still reproduces; with --no-sandbox (the
    control) it reads the key. Before, --replay always ran the server unsandboxed."""
    import json

    from rootbound.cli import main

    reason = sandbox_support()
    if reason is not None:
        pytest.skip(f"no sandbox on this kernel: {reason}")
    out = tmp_path / "report.json"
    command = ["--", sys.executable, str(DEFECT), "--case=xlsx", "{workspace}"]
    code = main(
        ["audit", "--trap-dir", str(tmp_path), "--mode", "args", "-q", "--format", "json", "-o", str(out), *command]
    )
    assert code == 1
    data = json.loads(out.read_text())
    number = next(f["number"] for f in data["findings"] if f["tool"] == "read_sheet" and f["probe"].endswith(".xlsx"))
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_ed25519"
    key.write_text("the auditor's key\n")
    said = tmp_path / "peeked.txt"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ROOTBOUND_TEST_PEEK", str(key))
    monkeypatch.setenv("ROOTBOUND_TEST_PEEK_REPORT", str(said))
    capsys.readouterr()
    code = main(["audit", "--replay", str(out), str(number), "--use-report-command"])
    stdout = capsys.readouterr().out
    assert code == 1, stdout
    assert said.read_text().startswith("refused:"), said.read_text()
    assert "sandbox: on (" in stdout, stdout
    code = main(["audit", "--replay", str(out), str(number), "--use-report-command", "--no-sandbox"])
    stdout = capsys.readouterr().out
    assert code == 1, stdout
    assert said.read_text() == "got:the auditor's key\n"
    assert "sandbox: off: not requested (--no-sandbox)" in stdout, stdout


def test_a_patch_parameter_is_probed_at_the_path_its_patch_names() -> None:
    """A ``patch`` string is a path leaf in a patch format; the digest list's ``if_match[].path`` names the same
    file (sent with the patch's path, never probed alone); ``patch_file`` is a path to a file, not a patch. Before,
    ``patch`` was a filler, and ``if_match[].path`` was probed alone (and blocked by the filler "rbt")."""
    from rootbound.audit.tools import plan_tool

    digest = {"type": "object", "properties": {"path": {"type": "string"}, "sha256": {"type": "string"}}}
    tool = {
        "name": "apply_patch",
        "description": "Apply a patch: '*** Begin Patch', '*** Add File: PATH' ... '*** End Patch'.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "patch": {"type": "string"},
                "if_match": {"type": "array", "items": {**digest, "required": ["path", "sha256"]}},
            },
            "required": ["patch"],
        },
    }
    plan = plan_tool(tool, frozenset(), True)
    assert [(leaf.name, leaf.patch) for leaf in plan.leaves] == [("patch", "codex")]
    args = plan.arguments("patch", "/w/new.txt", "/w/o.txt", "rbt", "rbt-written\n", every_path=True)
    assert args["patch"] == "*** Begin Patch\n*** Add File: /w/new.txt\n+rbt-written\n*** End Patch\n"
    assert args["if_match"][0]["path"] == "/w/new.txt"
    scratch = plan.arguments("patch", "w/rbt-scratch.txt", "", "rbt", "x\n")["patch"]
    assert "*** Update File: w/rbt-scratch.txt\n@@\n-rbt scratch\n+x\n" in scratch
    unified = {"name": "apply", "inputSchema": {"type": "object", "properties": {"diff": {"type": "string"}}}}
    diff = plan_tool({**unified, "description": "Apply a unified diff."}, frozenset(), True)
    assert (
        diff.arguments("diff", "src/a.py", "", "rbt", "y\n")["diff"]
        == "--- /dev/null\n+++ b/src/a.py\n@@ -0,0 +1 @@\n+y\n"
    )
    props = {"patch_file": {"type": "string"}}
    by_file = plan_tool({"name": "apply", "inputSchema": {"type": "object", "properties": props}}, frozenset(), True)
    assert [(leaf.name, leaf.patch) for leaf in by_file.leaves] == [("patch_file", "")]


def test_paths_inside_sql_statements_are_probed(tmp_path: Path) -> None:
    """``run_sql(query)`` on Python's sqlite3 with ``readfile()``: ``ATTACH``/``VACUUM INTO`` create files and
    ``readfile`` reads them anywhere, as mcp-server-sqlite's ``write_query`` does. Before, ``query`` was a
    pattern: "no path parameter", a free-form-text gap, the escape missed. The confined server (``--fixed``: its
    authorizer and ``readfile`` check the path) gets no claim, and SQLite's list kind is a gap with its reason."""
    report = audit(tmp_path, "sql", write=True)
    found = {(f.tool, f.param, f.kind, f.severity) for f in report.findings}
    assert ("run_sql", "query", "write", "critical") in found, claims(report)
    assert ("run_sql", "query", "read", "high") in found, claims(report)
    statements = " ".join(str(f.request) for f in report.findings if f.kind in ("write", "read"))
    assert "SELECT readfile('" in statements, statements
    assert "VACUUM INTO '" in statements or "ATTACH DATABASE '" in statements, statements
    assert report.exit_code("low") == 1
    clean = audit(tmp_path, "sql", "--fixed", write=True)
    assert claims(clean) == [], claims(clean)
    rows = {(t.name, p.param): (p.status, p.probes) for t in clean.modes[0].tools for p in t.params}
    for shape in ("vacuum", "attach", "readfile"):
        assert rows[("run_sql", f"query (sql={shape})")][0] == "tested", rows
    assert any("lists no directory" in g for g in clean.gaps()), clean.gaps()


def test_a_sqlite_write_beyond_the_trap_is_a_write(tmp_path: Path) -> None:
    """``write_sql(query)`` without ``readfile()``, as mcp-server-sqlite's ``write_query``: ``VACUUM INTO`` creates
    its file (and its journal) wherever it is told. Before, the file an absolute probe created in the server's cwd
    stayed there (no snapshot restores the cwd), so the relative probe of the same name met an existing file,
    SQLite refused it after opening it, and the kernel's read was reported (``cwd-relative`` read, high); the
    directory SQLite opens to sync a file it created was an ``outside-absolute`` meta of its own (low). Every
    piece of evidence beyond the trap is now the write it was (folded into the tool's critical write)."""
    report = audit(tmp_path, "sql-write", write=True)
    found = {(f.tool, f.param, f.kind, f.severity) for f in report.findings}
    assert ("write_sql", "query", "write", "critical") in found, claims(report)
    beyond = [f for f in report.findings if f.location in ("cwd", "tmp", "userhome") and f.kind != "write"]
    assert beyond == [], claims(report)
    assert report.exit_code("low") == 1


def test_paths_inside_command_lines_are_probed(tmp_path: Path) -> None:
    """``run_command(command)`` that allows ``ls, head, pwd`` (said in its description) and checks only arguments
    with a ``/`` by prefix, as cli-mcp-server 0.2.5 does: ``head <prefix sibling>/canary`` reads outside and
    ``ls ../ws-evil`` lists it (relative spellings are always probed: a command runs in a directory). Before, the
    tool looked like exec and was skipped (a gap, the escape missed). The fixed server (every argument checked by
    components) gets no claim."""
    report = audit(tmp_path, "cmd")
    found = {(f.tool, f.kind, f.class_id) for f in report.findings}
    assert ("run_command", "read", "prefix-bypass") in found, claims(report)
    assert "ls ../" in " ".join(str(f.request) for f in report.findings if f.kind == "list"), claims(report)
    assert {f.severity for f in report.findings if f.tool == "run_command"} & {"high", "critical"} == {"high"}
    assert report.exit_code("low") == 1
    clean = audit(tmp_path, "cmd", "--fixed")
    assert claims(clean) == [], claims(clean)
    rows = {(t.name, p.param): p.status for t in clean.modes[0].tools for p in t.params}
    assert rows[("run_command", "command (cmd=head)")] == rows[("run_command", "command (cmd=ls)")] == "tested", rows
