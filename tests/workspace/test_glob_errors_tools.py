"""Bad ``[...]`` sets in a tool's glob: a clear, typed error that says how to fix the glob, without the glob in
it, never "internal error" or a silent "(no matches)" (issue 24 item 5, issue 27). Covers ``search_files``' pattern
and the ``include``/``exclude`` globs of the tree tools (gitignore syntax). An ignore file in the tree is content,
not a call: a bad line in it is left out and the rest of the file still applies (it used to fail every search).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootbound import Boundary, RootedFS
from rootbound.search.glob_match import BACKWARDS_RANGE, UNCLOSED_SET
from rootbound.workspace import Limits, ToolError, run_tool
from tests.helpers.trees import bracket_workspace


@pytest.fixture
def fs(tmp_path: Path) -> RootedFS:
    return RootedFS(Boundary([bracket_workspace(tmp_path)]))


@pytest.mark.parametrize(
    ("tool", "args", "problem"),
    [
        ("search_files", {"pattern": "secretname["}, UNCLOSED_SET),
        ("search_files", {"pattern": "secretname[z-a]"}, BACKWARDS_RANGE),
        ("search_files", {"pattern": "src/secretname[z-a]*.py"}, BACKWARDS_RANGE),
        ("search_files", {"pattern": "*.py", "exclude": ["secretname[z-a]"]}, BACKWARDS_RANGE),
        ("search_files", {"pattern": "*.py", "exclude": ["secretname["]}, UNCLOSED_SET),
        ("grep", {"pattern": "needle", "include": ["secretname[z-a]"]}, BACKWARDS_RANGE),
        ("grep", {"pattern": "needle", "include": ["secretname["]}, UNCLOSED_SET),
        ("directory_tree", {"path": ".", "exclude": ["secretname[z-a]"]}, BACKWARDS_RANGE),
    ],
)
def test_tools_answer_a_typed_error_that_does_not_echo(
    fs: RootedFS, tool: str, args: dict[str, object], problem: str
) -> None:
    with pytest.raises(ToolError) as info:
        run_tool(tool, fs, args, Limits())
    text = str(info.value)
    assert problem in text
    assert "secretname" not in text
    assert "internal" not in text


def test_a_literal_bracket_is_still_found_with_a_set(fs: RootedFS) -> None:
    assert run_tool("search_files", fs, {"pattern": "[[]"}, Limits()).endswith("/[")


def test_a_bad_line_in_an_ignore_file_leaves_the_other_lines_in_force(tmp_path: Path) -> None:
    root = tmp_path.resolve() / "repo"
    (root / "sub").mkdir(parents=True)
    (root / ".gitignore").write_text("[z-a]\n*.log\n[\n")
    (root / "sub" / "kept.py").write_text("needle\n")
    (root / "sub" / "dropped.log").write_text("needle\n")
    fs = RootedFS(Boundary([root]))
    found = run_tool("search_files", fs, {"pattern": "*"}, Limits())
    assert "kept.py" in found and "dropped.log" not in found
    grepped = run_tool("grep", fs, {"pattern": "needle"}, Limits())
    assert grepped == f"{root}/sub/kept.py:1:needle"
