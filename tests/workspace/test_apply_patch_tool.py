"""``apply_patch`` as a tool: the Codex scenario list (our own files and patches, written from the documented
grammar), each as a test through ``call_tool``, and all of them through ``rootbound serve --writable`` over stdio in
one session. Where we deliberately differ (all or nothing: Codex leaves the files a failing patch already changed)
the scenario says so. Also: the answer's lines and the dry run's diff, and ``edit_file``'s other dialects."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from rootbound import Boundary, Root, RootedFS
from rootbound.mcp import RootsProvider
from rootbound.workspace.tools import Limits, ToolError, call_tool, tool_specs
from rootbound.workspace.tools.arguments import InvalidArguments, checker
from tests.helpers.serve_process import serve


def wrap(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


@dataclass(frozen=True)
class Scenario:
    name: str
    files: dict[str, str]
    patch: str
    expected: dict[str, str] | None = None  # the whole tree after; None: refused and unchanged
    error: str = ""
    dirs: tuple[str, ...] = field(default=())


SCENARIOS = [
    Scenario("add_file", {}, wrap("*** Add File: notes.md", "+# Notes", "+first"), {"notes.md": "# Notes\nfirst\n"}),
    Scenario(
        "multiple_operations",
        {"drop.txt": "bye\n", "edit.txt": "one\ntwo\n"},
        wrap(
            "*** Add File: deep/er/new.txt",
            "+new",
            "*** Delete File: drop.txt",
            "*** Update File: edit.txt",
            "@@",
            " one",
            "-two",
            "+TWO",
        ),
        {"deep/er/new.txt": "new\n", "edit.txt": "one\nTWO\n"},
    ),
    Scenario(
        "multiple_chunks",
        {"m.txt": "a\nb\nc\nd\ne\n"},
        wrap("*** Update File: m.txt", "@@", "-b", "+B", "@@", "-d", "+D"),
        {"m.txt": "a\nB\nc\nD\ne\n"},
    ),
    Scenario(
        "move_to_new_directory",
        {"src/name.txt": "old\n", "src/other.txt": "stay\n"},
        wrap("*** Update File: src/name.txt", "*** Move to: moved/into/name.txt", "@@", "-old", "+new"),
        {"moved/into/name.txt": "new\n", "src/other.txt": "stay\n"},
    ),
    Scenario("rejects_empty_patch", {"f.txt": "x\n"}, wrap(), error="the patch has no file operations"),
    Scenario(
        "rejects_missing_context",
        {"f.txt": "alpha\nbeta\n"},
        wrap("*** Update File: f.txt", "@@", "-gamma", "+delta"),
        error="nothing changed: Update File at patch line 2 (",
    ),
    Scenario(
        "rejects_missing_file_delete",
        {"f.txt": "x\n"},
        wrap("*** Delete File: absent.txt"),
        error="no such file or directory",
    ),
    Scenario(
        "rejects_empty_update_hunk",
        {"f.txt": "x\n"},
        wrap("*** Update File: f.txt"),
        error="the Update File has no hunks",
    ),
    Scenario(
        "requires_existing_file_for_update",
        {"f.txt": "x\n"},
        wrap("*** Update File: absent.txt", "@@", "-x", "+y"),
        error="no such file or directory",
    ),
    Scenario(
        "move_overwrites_existing_destination",
        {"a/name.txt": "from\n", "b/name.txt": "was here\n"},
        wrap("*** Update File: a/name.txt", "*** Move to: b/name.txt", "@@", "-from", "+to"),
        {"b/name.txt": "to\n"},
        dirs=("a",),
    ),
    Scenario(
        "add_overwrites_existing_file",
        {"dup.txt": "old\n"},
        wrap("*** Add File: dup.txt", "+replaced"),
        {"dup.txt": "replaced\n"},
    ),
    Scenario(
        "delete_directory_fails",
        {"dir/f.txt": "x\n"},
        wrap("*** Delete File: dir"),
        error="is a directory",
    ),
    Scenario(
        "rejects_invalid_hunk_header",
        {"f.txt": "x\n"},
        wrap("*** Frobnicate File: f.txt"),
        error="patch line 2: expected '*** Add File: PATH'",
    ),
    Scenario(
        "update_appends_trailing_newline",
        {"f.txt": "no newline at the end"},
        wrap("*** Update File: f.txt", "@@", "-no newline at the end", "+one", "+two"),
        {"f.txt": "one\ntwo\n"},
    ),
    Scenario(  # Codex leaves created.txt behind; we change nothing
        "failure_after_partial_success_changes_nothing",
        {"f.txt": "x\n"},
        wrap("*** Add File: created.txt", "+made", "*** Update File: f.txt", "@@", "-missing", "+y"),
        error="nothing changed: Update File at patch line 4",
    ),
    Scenario(
        "pure_addition_chunk",
        {"f.txt": "one\n"},
        wrap("*** Update File: f.txt", "@@", "+two", "+three"),
        {"f.txt": "one\ntwo\nthree\n"},
    ),
    Scenario(
        "whitespace_padded_hunk_header",
        {"f.txt": "old\n"},
        wrap("   *** Update File: f.txt", "@@", "-old", "+new"),
        {"f.txt": "new\n"},
    ),
    Scenario(
        "whitespace_padded_patch_markers",
        {"f.txt": "one\n"},
        "  *** Begin Patch\n*** Update File: f.txt\n@@\n-one\n+two\n*** End Patch   \n",
        {"f.txt": "two\n"},
    ),
    Scenario(
        "whitespace_padded_marker_lines",
        {"f.txt": "one\n"},
        "*** Begin Patch  \n*** Update File: f.txt\n@@\n-one\n+two\n  *** End Patch\n",
        {"f.txt": "two\n"},
    ),
    Scenario(
        "unicode",
        {"f.txt": "début\nnaïve café\n"},
        wrap("*** Update File: f.txt", "@@", " début", "-naïve café", "+naïve café ✅"),
        {"f.txt": "début\nnaïve café ✅\n"},
    ),
    Scenario(
        "delete_file",
        {"keep.txt": "k\n", "obsolete.txt": "o\n"},
        wrap("*** Delete File: obsolete.txt"),
        {"keep.txt": "k\n"},
    ),
    Scenario(
        "deletion_only",
        {"f.txt": "a\nb\nc\n"},
        wrap("*** Update File: f.txt", "@@", " a", "-b", " c"),
        {"f.txt": "a\nc\n"},
    ),
    Scenario(
        "end_of_file_marker",
        {"f.txt": "first\nsecond\n"},
        wrap("*** Update File: f.txt", "@@", " first", "-second", "+second, updated", "*** End of File"),
        {"f.txt": "first\nsecond, updated\n"},
    ),
]


def lay_out(base: Path, scenario: Scenario) -> None:
    base.mkdir(parents=True)
    for name, text in scenario.files.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_bytes(text.encode())


def tree(base: Path) -> dict[str, str]:
    return {
        str(path.relative_to(base)): path.read_bytes().decode() for path in sorted(base.rglob("*")) if path.is_file()
    }


def dirs_of(base: Path) -> set[str]:
    return {str(path.relative_to(base)) for path in base.rglob("*") if path.is_dir()}


def outcome_ok(base: Path, scenario: Scenario, error: bool, text: str, before: dict[str, str]) -> None:
    if scenario.expected is None:
        assert error, text
        assert scenario.error in text, text
        assert tree(base) == before, "a refused patch changed files"
    else:
        assert not error, text
        assert tree(base) == scenario.expected
        assert set(scenario.dirs) <= dirs_of(base)
        assert not list(base.rglob(".rootbound-*"))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_codex_scenario(tmp_path: Path, scenario: Scenario) -> None:
    base = Path(os.path.realpath(tmp_path)) / "ws"
    lay_out(base, scenario)
    before = tree(base)
    before_dirs = dirs_of(base)
    with Boundary([base]) as boundary:
        fs = RootedFS(boundary)
        try:
            text = call_tool("apply_patch", fs, {"patch": scenario.patch}, Limits()).text
            error = False
        except ToolError as failure:
            text, error = str(failure), True
    outcome_ok(base, scenario, error, text, before)
    if error:
        assert dirs_of(base) == before_dirs, "a refused patch left directories behind"


@pytest.mark.anyio
async def test_every_scenario_through_serve_over_stdio(tmp_path: Path) -> None:
    work = Path(os.path.realpath(tmp_path)) / "work"
    work.mkdir()
    for scenario in SCENARIOS:
        lay_out(work / scenario.name, scenario)
    with anyio.fail_after(120):
        async with serve(
            "stdio", ["--writable", str(work)], mode="legacy", provider=RootsProvider([Root.from_path(work)])
        ) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            hints = listed["apply_patch"].annotations
            assert hints is not None
            assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (False, True, False)
            for scenario in SCENARIOS:
                base = work / scenario.name
                before = tree(base)
                patch = scenario.patch.replace("File: ", f"File: {scenario.name}/").replace(
                    "Move to: ", f"Move to: {scenario.name}/"
                )
                result = await client.call_tool("apply_patch", {"patch": patch})
                content = result.content[0]
                assert isinstance(content, types.TextContent)
                outcome_ok(base, scenario, bool(result.is_error), content.text, before)


# -- the answer --------------------------------------------------------------------------------------------------


def run(fs: RootedFS, tool: str, **args: Any) -> tuple[str, dict[str, Any]]:
    output = call_tool(tool, fs, args, Limits())
    assert output.structured is not None
    return output.text, output.structured


def test_answer_lines_dry_run_diff_and_tolerances(tmp_path: Path) -> None:
    base = Path(os.path.realpath(tmp_path))
    (base / "a.py").write_text("class K:\n    def f():\n        return 1\n")
    (base / "b.txt").write_text("bye\n")
    # The hunk quotes the method at another indentation (one consistent shift): matched, and said so.
    patch = wrap("*** Update File: a.py", "@@", " def f():", "-    return 1", "+    return 2", "*** Delete File: b.txt")
    with Boundary([base]) as boundary:
        fs = RootedFS(boundary)
        text, data = run(fs, "apply_patch", patch=patch, dry_run=True)
        assert (base / "a.py").read_text() == "class K:\n    def f():\n        return 1\n" and (base / "b.txt").exists()
        assert text.splitlines()[:4] == [
            "dry run: the patch would change 2 files as below (nothing written)",
            f"updated {base / 'a.py'} (+1 -1; matched tolerantly: indentation)",
            f"deleted {base / 'b.txt'} (-1)",
            "matched tolerantly (indentation): check the diff",
        ]
        assert "-        return 1\n+        return 2\n" in data["diff"] and "-bye\n" in data["diff"]
        assert (data["written"], data["dry_run"], data["diff_truncated"]) == (False, True, False)
        text, data = run(fs, "apply_patch", patch=patch)
        assert text.splitlines()[0] == "applied the patch: 2 files changed"
        assert (base / "a.py").read_text() == "class K:\n    def f():\n        return 2\n"
        assert not (base / "b.txt").exists()
        assert data["files"][0] == {
            "action": "updated",
            "path": str(base / "a.py"),
            "added": 1,
            "removed": 1,
            "replaced": False,
            "tolerances": ["indentation"],
        }
        assert "diff" not in data


def test_the_same_file_twice_is_refused(tmp_path: Path) -> None:
    base = Path(os.path.realpath(tmp_path))
    (base / "a.txt").write_text("a\n")
    patch = wrap("*** Update File: a.txt", "@@", "-a", "+b", "*** Delete File: a.txt")
    with Boundary([base]) as boundary, pytest.raises(ToolError, match="a file appears twice in the patch"):
        call_tool("apply_patch", RootedFS(boundary), {"patch": patch}, Limits())
    assert (base / "a.txt").read_text() == "a\n"


def test_a_file_changed_between_plan_and_publish_changes_nothing(tmp_path: Path, monkeypatch: Any) -> None:
    """The check after staging sees a file replaced meanwhile: the other file of the patch is not touched."""
    from rootbound.confine import patch_ops

    base = Path(os.path.realpath(tmp_path))
    (base / "one.txt").write_text("1\n")
    (base / "two.txt").write_text("2\n")
    real = patch_ops.PatchOps._check

    def meddle(self: Any, plan: Any) -> None:
        (base / "two.txt").write_text("2 changed\n")
        real(self, plan)

    monkeypatch.setattr(patch_ops.PatchOps, "_check", meddle)
    patch = wrap("*** Update File: one.txt", "@@", "-1", "+one", "*** Update File: two.txt", "@@", "-2", "+two")
    with Boundary([base]) as boundary, pytest.raises(ToolError, match="nothing changed: Update File at patch line"):
        call_tool("apply_patch", RootedFS(boundary), {"patch": patch}, Limits())
    assert (base / "one.txt").read_text() == "1\n"
    assert not list(base.glob(".rootbound-*"))


def test_a_failed_publication_is_undone(tmp_path: Path, monkeypatch: Any) -> None:
    """The second file's name is taken between the check and its rename: the first file's rename is undone."""
    from rootbound.confine import patch_ops

    base = Path(os.path.realpath(tmp_path))
    (base / "one.txt").write_text("1\n")
    (base / "gone.txt").write_text("g\n")
    real = patch_ops.PatchOps._create

    def squat(self: Any, plan: Any, handle: Any, undo: Any) -> None:
        (base / "new.txt").write_text("squatter\n")
        real(self, plan, handle, undo)

    monkeypatch.setattr(patch_ops.PatchOps, "_create", squat)
    patch = wrap(
        "*** Update File: one.txt", "@@", "-1", "+one", "*** Delete File: gone.txt", "*** Add File: new.txt", "+n"
    )
    with Boundary([base]) as boundary, pytest.raises(ToolError, match="nothing changed: Add File at patch line"):
        call_tool("apply_patch", RootedFS(boundary), {"patch": patch}, Limits())
    assert tree(base) == {"one.txt": "1\n", "gone.txt": "g\n", "new.txt": "squatter\n"}


# -- edit_file's dialects ------------------------------------------------------------------------------------------


def test_old_string_new_string_replace_all_and_expected_replacements(tmp_path: Path) -> None:
    base = Path(os.path.realpath(tmp_path))
    target = base / "f.txt"
    target.write_text("a = 1\nb = 1\nc = 1\n")
    with Boundary([base]) as boundary:
        fs = RootedFS(boundary)
        run(fs, "edit_file", path="f.txt", old_string="a = 1", new_string="a = 2")
        assert target.read_text() == "a = 2\nb = 1\nc = 1\n"
        with pytest.raises(ToolError, match=r"old text matched 2 times.*or set replace_all"):
            call_tool("edit_file", fs, {"path": "f.txt", "old_string": "= 1", "new_string": "= 3"}, Limits())
        with pytest.raises(ToolError) as info:
            call_tool(
                "edit_file",
                fs,
                {"path": "f.txt", "old_string": "= 1", "new_string": "= 3", "expected_replacements": 3},
                Limits(),
            )
        assert str(info.value).startswith("edits[0]: old text found 2 times, at lines 2, 3, but expected_replacements")
        assert target.read_text() == "a = 2\nb = 1\nc = 1\n"
        run(fs, "edit_file", path="f.txt", old_string="= 1", new_string="= 3", expected_replacements=2)
        assert target.read_text() == "a = 2\nb = 3\nc = 3\n"
        run(fs, "edit_file", path="f.txt", old_string="= 3", new_string="= 4", replace_all=True)
        assert target.read_text() == "a = 2\nb = 4\nc = 4\n"
        edits = [{"old_string": "a = 2", "new_string": "a = 5"}, {"old_text": "b = 4", "new_text": "b = 5"}]
        run(fs, "edit_file", path="f.txt", edits=edits)
        assert target.read_text() == "a = 5\nb = 5\nc = 4\n"
        refusals: list[tuple[dict[str, Any], str]] = [
            ({"old_string": "a", "new_string": "b", "edits": edits}, "send either old_string and new_string or edits"),
            ({"edits": edits, "replace_all": True}, "top-level replace_all and expected_replacements go with"),
            ({"edits": [{"old_text": "a", "old_string": "a", "new_text": "b"}]}, "edits[0]: use old_text/new_text or"),
            ({"old_string": "a"}, "arguments: the old text must be a non-empty string and the new text a string"),
            ({"old_string": "a", "new_string": "b", "replace_all": True, "expected_replacements": 2}, "exclude each"),
            ({}, "argument 'edits' must be a list of 1 to 100 edits, or send old_string and new_string"),
        ]
        for arguments, message in refusals:
            with pytest.raises(ToolError, match=message.replace("[", r"\[").replace("(", r"\(")):
                call_tool("edit_file", fs, {"path": "f.txt", **arguments}, Limits())
        assert target.read_text() == "a = 5\nb = 5\nc = 4\n"


def test_the_reference_servers_spelling_old_text_new_text_and_dry_run(tmp_path: Path) -> None:
    """The reference filesystem server's ``edit_file`` arguments, ``edits: [{oldText, newText}]`` and ``dryRun``,
    mean what rootbound's own names mean; two spellings of one thing in one call are refused."""
    base = Path(os.path.realpath(tmp_path))
    target = base / "f.txt"
    target.write_text("a = 1\nb = 2\n")
    with Boundary([base]) as boundary:
        fs = RootedFS(boundary)
        edits = [{"oldText": "a = 1", "newText": "a = 3"}, {"oldText": "b = 2", "newText": "b = 4"}]
        _, data = run(fs, "edit_file", path="f.txt", edits=edits, dryRun=True)
        assert data is not None and (data["written"], data["dry_run"]) == (False, True)
        assert "+a = 3" in data["diff"] and target.read_text() == "a = 1\nb = 2\n"
        _, data = run(fs, "edit_file", path="f.txt", edits=edits, dryRun=False)
        assert data is not None and data["written"] and target.read_text() == "a = 3\nb = 4\n"
        refusals: list[tuple[dict[str, Any], str]] = [
            ({"edits": [{"oldText": "a", "new_text": "b"}]}, "edits[0]: use old_text/new_text or"),
            ({"edits": [{"oldText": "a = 3", "newText": "x"}], "dryRun": True, "dry_run": False}, "dry_run or dryRun"),
            ({"edits": [{"oldText": "a = 3", "newText": "x"}], "dryRun": "yes"}, "'dryRun' must be a boolean"),
        ]
        for arguments, message in refusals:
            with pytest.raises(ToolError, match=message.replace("[", r"\[")):
                call_tool("edit_file", fs, {"path": "f.txt", **arguments}, Limits())
        assert target.read_text() == "a = 3\nb = 4\n"
    (spec,) = [spec for spec in tool_specs(writable=True) if spec.name == "edit_file"]
    check = checker(spec.input_schema)  # what the server checks every call against, every object closed
    check({"path": "f.txt", "edits": edits, "dryRun": True})
    # The name sent is not repeated; the declared one nearest to it is (issue 50 item 8).
    named = r"unexpected argument in argument .edits.0. \(did you mean 'new_string'\?\); the accepted .*oldText"
    with pytest.raises(InvalidArguments, match=named):
        check({"path": "f.txt", "edits": [{"oldText": "a", "newString": "b"}]})
