"""The workspace tools on a real RootedFS, without a transport: limits, markers, argument errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rootbound import Boundary, RootedFS
from rootbound.workspace import Limits, ToolError, run_tool


@pytest.fixture
def fs(tmp_path: Path) -> RootedFS:
    root = tmp_path.resolve() / "ws"
    for i in range(12):
        project = root / f"p{i:02}"
        project.mkdir(parents=True)
        (project / "go.mod").write_text("module x\n")
        (project / f"m{i}.py").write_text("needle\n")
    (root / "bin.dat").write_bytes(b"\x00\x01binary\x00")
    return RootedFS(Boundary([root]))


def test_list_directory_marks_the_cut_with_the_total_and_a_cursor(fs: RootedFS) -> None:
    text = run_tool("list_directory", fs, {"path": "."}, Limits(max_results=5))
    lines = text.splitlines()
    assert lines[:5] == ["bin.dat", "p00/", "p01/", "p02/", "p03/"]
    marker = re.fullmatch(r'\[entries 1-5 of 13; more: call again with cursor="([A-Za-z0-9_-]+)"\]', lines[5])
    assert marker is not None, lines[5]
    text = run_tool("list_directory", fs, {"path": ".", "cursor": marker.group(1)}, Limits(max_results=5))
    assert text.splitlines()[0] == "p04/"


def test_find_projects_and_search_truncate_instead_of_failing(fs: RootedFS) -> None:
    lines = run_tool("find_projects", fs, {}, Limits(max_results=4)).splitlines()
    assert len(lines) == 5
    assert lines[-1] == "[truncated: the first 4 shown; narrow the request]"
    lines = run_tool("search_files", fs, {"pattern": "*.py"}, Limits(max_results=3)).splitlines()
    assert len(lines) == 4
    assert lines[-1] == "[truncated: the first 3 shown; narrow the request]"
    full = run_tool("search_files", fs, {"pattern": "*.py"}, Limits()).splitlines()
    assert len(full) == 12


def test_output_size_cap(fs: RootedFS) -> None:
    text = run_tool("grep", fs, {"pattern": "needle"}, Limits(max_output=1200))
    assert len(text) <= 1200
    # The cut is marked, and the file grep passed over is said after it (issue 27: nothing silent).
    assert "[truncated: the first " in text
    assert text.endswith("narrow with a deeper path, include, or a lower context]\n[not searched: 1 binary file]")


def test_binary_file_gets_a_binary_answer_not_garbage(fs: RootedFS) -> None:
    text = run_tool("read_file", fs, {"path": "bin.dat"}, Limits())
    assert text == "[binary file: 9 bytes, binary data (application/octet-stream)]"


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("read_file", {}, "argument 'path' must be a non-empty string"),
        ("read_file", {"path": 3}, "argument 'path' must be a non-empty string"),
        ("read_file", {"path": "p00/go.mod", "offset": -1}, "argument 'offset' must be an integer >= 0"),
        ("read_file", {"path": "p00/go.mod", "length": True}, "argument 'length' must be an integer >= 1"),
        ("grep", {"pattern": "x", "regex": "yes"}, "argument 'regex' must be a boolean"),
        ("write_file", {"path": "a", "content": 1}, "argument 'content' must be a string"),
        ("nope", {}, "unknown tool: tools/list names the tools this server offers"),
    ],
)
def test_bad_arguments_are_clear_tool_errors(fs: RootedFS, tool: str, args: dict[str, object], message: str) -> None:
    with pytest.raises(ToolError) as info:
        run_tool(tool, fs, args, Limits())
    assert str(info.value) == message


def test_bad_regex_and_pattern_do_not_echo(fs: RootedFS) -> None:
    with pytest.raises(ToolError) as info:
        run_tool("grep", fs, {"pattern": "(evil[", "regex": True}, Limits())
    assert "evil" not in str(info.value)
    with pytest.raises(ToolError) as info:
        run_tool("search_files", fs, {"pattern": "/evil/**"}, Limits())
    assert "evil" not in str(info.value)


def test_read_only_fs_refuses_writes(fs: RootedFS) -> None:
    read_only = RootedFS(fs.boundary, read_only=True)
    with pytest.raises(ToolError) as info:
        run_tool("write_file", read_only, {"path": "x.txt", "content": "x"}, Limits())
    assert "evil" not in str(info.value)
    assert not (fs.boundary.resolve(".") / "x.txt").exists()


def test_a_cancelled_budget_stops_walks_and_reads(tmp_path: Path) -> None:
    """What notifications/cancelled does on the server: the budget is cancelled and the worker stops at its next
    check (every 64 entries of a walk, every chunk of a long line count)."""
    from rootbound.workspace.tools import Budget

    root = tmp_path.resolve()
    for i in range(200):
        (root / f"f{i:03}.txt").write_text("x\n")
    (root / "big.txt").write_text("line\n" * 300_000)
    fs = RootedFS(Boundary([root]))
    calls: list[tuple[str, dict[str, object]]] = [
        ("grep", {"pattern": "x"}),
        ("search_files", {"pattern": "*.txt"}),
        ("directory_tree", {"path": "."}),
        ("read_file", {"path": "big.txt", "start_line": 299_999}),
    ]
    for tool, args in calls:
        budget = Budget(60)
        budget.cancel()
        with pytest.raises(ToolError) as info:
            run_tool(tool, fs, args, Limits(), {"budget": budget})
        assert str(info.value) == "cancelled"
        assert budget.steps <= 64 or tool == "read_file"
        assert run_tool(tool, fs, args, Limits())  # an uncancelled call completes


def test_no_roots_says_why_and_how_to_fix_it(tmp_path: Path) -> None:
    fs = RootedFS(Boundary([]))
    out = run_tool("list_roots", fs, {}, Limits(), {"source": "client"})
    assert out.splitlines()[0] == "(no roots: every path is denied)"
    assert "the client declared no roots" in out
    assert "rootbound serve DIR" in out
    with pytest.raises(ToolError) as info:
        run_tool("read_file", fs, {"path": str(tmp_path)}, Limits())
    assert str(info.value).startswith("path is outside the allowed roots (outside roots): no roots")
    assert str(tmp_path) not in str(info.value)
