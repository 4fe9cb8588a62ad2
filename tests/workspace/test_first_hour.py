"""Issue 27 (the first hour) and issue 26 #2: the defects a new user hit, errors that say how to fix the call,
nothing skipped or withheld without saying so, and no empty success when nothing is accessible.

Each test here failed before its fix. The same messages over a real transport are in ``test_serve.py`` and
``test_writing.py``; the table of every error and its fix is checked in ``test_error_table.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rootbound import Boundary, RootedFS
from rootbound.errors import RootsError
from rootbound.workspace.tools import Limits, ToolError, call_tool, unknown_tool
from rootbound.workspace.tools.arguments import InvalidArguments, checker
from rootbound.workspace.tools.error_fixes import FIXES, fix_for
from rootbound.workspace.tools.specs import TOOLS
from rootbound.workspace.tools.walk_scope import NO_DIRECTORY_ROOT, NO_ROOTS_HELP
from rootbound.workspace.tools.writing import WRITE_TOOLS


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    return root


@pytest.fixture
def fs(root: Path) -> Iterator[RootedFS]:
    with Boundary([root]) as boundary:
        yield RootedFS(boundary, read_only=False)


def run(fs: RootedFS, tool: str, **args: Any) -> tuple[str, dict[str, Any] | None]:
    output = call_tool(tool, fs, args, Limits())
    return output.text, output.structured


def error_of(fs: RootedFS, tool: str, **args: Any) -> str:
    with pytest.raises(ToolError) as info:
        call_tool(tool, fs, args, Limits())
    return str(info.value)


# --- defects ---------------------------------------------------------------------------------------------------------


def test_edit_of_a_crlf_file_keeps_the_cr_and_is_not_truncated(fs: RootedFS, root: Path) -> None:
    (root / "crlf.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    text, data = run(fs, "edit_file", path="crlf.txt", edits=[{"old_text": "b", "new_text": "B"}])
    assert data is not None
    assert data["diff_truncated"] is False
    assert "-b\r\n+B\r\n" in text  # the diff shows the line endings the file has
    assert data["diff"].endswith(" a\r\n-b\r\n+B\r\n c\r\n")
    assert (root / "crlf.txt").read_bytes() == b"a\r\nB\r\nc\r\n"


def test_a_long_diff_is_marked_truncated_in_text_and_structure(fs: RootedFS, root: Path) -> None:
    (root / "long.txt").write_text("".join(f"line {i}\n" for i in range(5000)))
    edits = [{"old_text": "line", "new_text": "LINE", "replace_all": True}]
    output = call_tool("edit_file", fs, {"path": "long.txt", "edits": edits}, Limits(max_output=4000))
    assert output.structured is not None and output.structured["diff_truncated"] is True
    assert "[truncated: the first" in output.text


def test_diff_headers_name_an_absolute_path_as_it_is(fs: RootedFS, root: Path) -> None:
    (root / "a.txt").write_text("x\n")
    text, _ = run(fs, "edit_file", path="a.txt", edits=[{"old_text": "x", "new_text": "y"}], dry_run=True)
    target = root / "a.txt"
    assert f"\n--- {target}\n+++ {target}\n@@ -1 +1 @@\n" in text
    assert "a//" not in text and f"a/{str(target).lstrip('/')}" not in text


def test_grep_says_which_files_it_did_not_search(fs: RootedFS, root: Path) -> None:
    (root / "big.log").write_bytes(b"needle\n" + b"x" * (5 * 1024 * 1024))
    (root / "blob.bin").write_bytes(b"needle\x00\x01")
    (root / "small.txt").write_text("no match here\n")
    (root / "link.txt").symlink_to(root / "small.txt")
    text, data = run(fs, "grep", pattern="needle")
    assert text == (
        "(no matches in 1 file searched)\n[not searched: 1 file over 4 MiB (grep reads files up to 4 MiB; read_file "
        "reads parts), 1 binary file, 1 symlink (not followed; grep its target's path)]"
    )
    assert data is not None and data["files_skipped"] == 3
    (root / "small.txt").write_text("needle\n")
    text, _ = run(fs, "grep", pattern="needle")
    assert text.splitlines()[0] == f"{root / 'small.txt'}:1:needle"
    assert text.splitlines()[-1].startswith("[not searched: 1 file over 4 MiB")


def test_grep_description_says_it_skips_large_files() -> None:
    (grep,) = [spec for spec in TOOLS if spec.name == "grep"]
    assert "files over 4 MiB" in grep.description and "says how many" in grep.description


def test_find_projects_says_how_far_it_looked(fs: RootedFS, root: Path) -> None:
    deep = root.joinpath(*[f"d{i}" for i in range(9)])
    deep.mkdir(parents=True)
    (deep / "pyproject.toml").write_text("")
    (root / "node_modules" / "dep").mkdir(parents=True)
    (root / "node_modules" / "dep" / "package.json").write_text("{}")
    text, data = run(fs, "find_projects")
    assert data == {"projects": [], "truncated": False}
    assert text == (
        "(no projects found: looked 8 levels deep, not entering .git, node_modules, .venv, __pycache__; "
        "search_files finds a marker at any depth)"
    )


# --- errors that say how to fix the call -----------------------------------------------------------------------------


def test_create_directory_says_whether_it_created(fs: RootedFS, root: Path) -> None:
    assert run(fs, "create_directory", path="new/level")[0] == f"created directory {root / 'new' / 'level'}"
    again = run(fs, "create_directory", path="new/level")[0]
    assert again == f"directory {root / 'new' / 'level'} already exists: nothing created"


def test_write_into_a_missing_directory_names_create_parents(fs: RootedFS, root: Path) -> None:
    message = error_of(fs, "write_file", path="missing/dir/x.txt", content="x")
    assert message.endswith("pass create_parents=true to create it (not found)")
    assert "missing" not in message
    assert run(fs, "write_file", path="missing/dir/x.txt", content="x", create_parents=True)[0].startswith("wrote")


def test_write_over_an_existing_file_names_overwrite(fs: RootedFS, root: Path) -> None:
    (root / "x.txt").write_text("x")
    assert "overwrite=true" in error_of(fs, "write_file", path="x.txt", content="y", overwrite=False)


def test_read_media_file_on_an_unknown_binary_says_what_can_be_done(fs: RootedFS, root: Path) -> None:
    (root / "data.bin").write_bytes(b"\x00\x01\x02" * 100)
    message = error_of(fs, "read_media_file", path="data.bin")
    assert "use read_file for text" not in message
    assert message == (
        "not an image or audio file: binary data (application/octet-stream), 300 bytes; read_media_file returns "
        "images and audio only, and no tool returns other binary content (stat describes the file)"
    )


def test_a_misplaced_edit_argument_says_where_it_belongs() -> None:
    (edit,) = [spec for spec in WRITE_TOOLS if spec.name == "edit_file"]
    check = checker(edit.input_schema)
    with pytest.raises(InvalidArguments) as info:
        check({"path": "a", "edits": [{"old_text": "a", "new_text": "b"}], "old_text": "a"})
    assert str(info.value) == (
        "invalid arguments: unexpected argument 'old_text' in arguments: it belongs in each item of 'edits'"
    )
    with pytest.raises(InvalidArguments) as info:
        check({"path": "a", "edits": [{"old_text": "a", "new_text": "b", "sneaky": 1}]})
    assert str(info.value) == (
        "invalid arguments: unexpected argument in argument 'edits.0'; the accepted ones are: old_text, new_text, "
        "old_string, new_string, oldText, newText, replace_all, expected_replacements"
    )


def test_a_writing_tool_on_a_read_only_server_names_the_flag() -> None:
    assert "rootbound serve --writable" in unknown_tool("edit_file")
    assert unknown_tool("edit_file").startswith("edit_file is a writing tool")
    assert unknown_tool("no_such_tool\n") == "unknown tool: tools/list names the tools this server offers"


def test_every_denial_class_has_a_next_step() -> None:
    """Every RootsError a tool can meet says what to do next (the first matching class in FIXES)."""

    def classes(base: type[RootsError]) -> Iterator[type[RootsError]]:
        for sub in base.__subclasses__():
            yield sub
            yield from classes(sub)

    import rootbound.core.errors as errors

    denials = [kind for kind in classes(RootsError) if kind.__module__ == errors.__name__ and kind.__name__[0] != "_"]
    protocol = {"InvalidRootURI", "InvalidRootsAnswer", "InvalidRootsRequest", "RootsUnavailable", "MissingCapability"}
    missing = [kind.__name__ for kind in denials if kind.__name__ not in protocol and not fix_for("read_file", kind())]
    assert len(denials) > 20  # the classes were found
    assert missing == ["PatternTooSlow"]  # its own message says: simplify it
    assert all(fix == "" or not fix.endswith(".") for fix in FIXES.values())


# --- issue 26 #2: nothing accessible is an error, never an empty success ------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args"), [("search_files", {"pattern": "*"}), ("grep", {"pattern": "x"}), ("find_projects", {})]
)
def test_no_roots_is_an_error_not_an_empty_answer(tmp_path: Path, tool: str, args: dict[str, Any]) -> None:
    with Boundary([]) as boundary:
        message = error_of(RootedFS(boundary), tool, **args)
    assert message == NO_ROOTS_HELP


@pytest.mark.parametrize(("tool", "args"), [("search_files", {"pattern": "*"}), ("grep", {"pattern": "x"})])
def test_a_path_outside_the_roots_is_an_error(fs: RootedFS, root: Path, tool: str, args: dict[str, Any]) -> None:
    message = error_of(fs, tool, path=str(root.parent), **args)
    assert (
        message == "path is outside the allowed roots: use a path within a root; list_roots shows them (outside roots)"
    )


@pytest.mark.parametrize(("tool", "args"), [("search_files", {"pattern": "*"}), ("find_projects", {})])
def test_only_file_roots_is_an_error_for_a_search(root: Path, tool: str, args: dict[str, Any]) -> None:
    (root / "only.txt").write_text("x")
    with Boundary([root / "only.txt"]) as boundary:
        assert error_of(RootedFS(boundary), tool, **args) == NO_DIRECTORY_ROOT


# --- start-up: what a stdio server loads before answering initialize ------------------------------------------------


def test_stdio_serve_loads_no_http_client_or_audit_side(tmp_path: Path) -> None:
    """``rootbound serve`` over stdio answers ``initialize`` without importing the HTTP side, the client side or
    the audit (``-X importtime`` lists every module the process imported until stdin closed)."""
    import json
    import subprocess
    import sys

    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "rootbound", "serve", "--no-sandbox", str(tmp_path)],
        input=json.dumps(hello) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert '"id":1' in done.stdout.replace(" ", "")
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "rootbound.workspace.server" in imported  # the listing is real
    unneeded = (
        "rootbound.workspace.transport.http",
        "rootbound.workspace.sessions",
        "rootbound.mcp.client",
        "rootbound.audit",
    )
    assert sorted(name for name in imported if name.startswith(unneeded)) == []


def test_a_glob_error_that_says_its_fix_gets_no_second_one() -> None:
    from rootbound.core.errors import InvalidPattern

    own = InvalidPattern(message="a '[' in the glob has no closing ']': close the set")
    assert fix_for("search_files", own) == ""
    assert fix_for("search_files", InvalidPattern()) == "a glob takes *, ?, ** and [...] with a closing ]"
    assert fix_for("grep", own).startswith("regex=true takes RE2 syntax")
