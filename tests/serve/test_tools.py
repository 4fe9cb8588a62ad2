"""The workspace tools on a real RootedFS, without a transport: limits, markers, argument errors."""

from __future__ import annotations

import json
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


def test_list_directory_marks_the_cut_with_the_total(fs: RootedFS) -> None:
    text = run_tool("list_directory", fs, {"path": "."}, Limits(max_results=5))
    lines = text.splitlines()
    assert lines[:5] == ["bin.dat", "p00/", "p01/", "p02/", "p03/"]
    assert lines[5] == "[truncated: 5 of 13 shown; narrow the request]"


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
    text = run_tool("grep", fs, {"pattern": "needle"}, Limits(max_output=200))
    assert len(text) < 300
    assert text.endswith("[truncated: the first 2 shown; narrow the request]")


def test_binary_file_is_not_text(fs: RootedFS) -> None:
    with pytest.raises(ToolError) as info:
        run_tool("read_file", fs, {"path": "bin.dat"}, Limits())
    assert str(info.value).endswith("(not text)")


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("read_file", {}, "argument 'path' must be a non-empty string"),
        ("read_file", {"path": 3}, "argument 'path' must be a non-empty string"),
        ("read_file", {"path": "p00/go.mod", "offset": -1}, "argument 'offset' must be an integer >= 0"),
        ("read_file", {"path": "p00/go.mod", "length": True}, "argument 'length' must be an integer >= 1"),
        ("grep", {"pattern": "x", "regex": "yes"}, "argument 'regex' must be a boolean"),
        ("write_file", {"path": "a", "content": 1}, "argument 'content' must be a string"),
        ("nope", {}, "unknown tool"),
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


def test_stat_is_indented_json_with_the_canonical_path(fs: RootedFS, tmp_path: Path) -> None:
    """The hand-written encoding of ``stat`` stays byte-identical to ``json.dumps(indent=1)``."""
    odd = tmp_path.resolve() / "ws" / 'quote " and ü.txt'
    odd.write_text("x")
    for path in (odd.name, "p00"):
        text = run_tool("stat", fs, {"path": path}, Limits())
        info = json.loads(text)
        assert text == json.dumps(info, indent=1)
        assert info["path"] == str(odd if path == odd.name else odd.parent / "p00")
