"""The writing tools without a transport: argument checks, rendering, structured results, annotations, limits.

The same tools over real stdio and HTTP, with the refusals, are in ``test_writing.py``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rootbound import Boundary, RootedFS
from rootbound.workspace.tools import Limits, ToolError, call_tool, tool_specs
from rootbound.workspace.tools.writing import WRITE_IMPLEMENTATIONS, WRITE_TOOLS


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x = 1\ny = 2\n")
    return root


@pytest.fixture
def fs(root: Path) -> Iterator[RootedFS]:
    with Boundary([root]) as boundary:
        yield RootedFS(boundary)


def run(fs: RootedFS, tool: str, limits: Limits | None = None, **args: Any) -> tuple[str, dict[str, Any] | None]:
    output = call_tool(tool, fs, args, limits or Limits())
    return output.text, output.structured


def test_specs_and_annotations() -> None:
    assert {spec.name for spec in WRITE_TOOLS} == set(WRITE_IMPLEMENTATIONS)
    hints = {spec.name: spec.annotations for spec in WRITE_TOOLS}
    assert {name: (h["readOnlyHint"], h["destructiveHint"], h["idempotentHint"]) for name, h in hints.items()} == {
        "edit_file": (False, True, False),
        "apply_patch": (False, True, False),
        "write_file": (False, True, True),
        "create_directory": (False, False, True),
        "move_file": (False, True, False),
        "delete_file": (False, True, True),
    }
    assert not {spec.name for spec in tool_specs(False)} & set(WRITE_IMPLEMENTATIONS)
    assert {spec.name for spec in tool_specs(True)} >= set(WRITE_IMPLEMENTATIONS)
    assert all(spec.output_schema is not None for spec in WRITE_TOOLS)
    assert all(not spec.annotations["readOnlyHint"] for spec in tool_specs(True) if spec.writes)


def test_edit_file_text_and_structure(fs: RootedFS, root: Path) -> None:
    edits = [{"old_text": "y = 2", "new_text": "y = 3"}]
    text, data = run(fs, "edit_file", path="src/a.py", edits=edits, dry_run=True)
    before = hashlib.sha256(b"x = 1\ny = 2\n").hexdigest()
    assert text.splitlines()[0] == f"dry run: {root / 'src' / 'a.py'} would change as below (nothing written)"
    assert text.endswith(f"current sha256 {before} (pass it as expected_sha256 to apply exactly this diff)")
    assert data is not None
    assert (data["written"], data["dry_run"], data["sha256"], data["diff_truncated"]) == (False, True, before, False)
    assert data["edits"] == [{"lines": [2], "tolerances": []}]
    text, data = run(fs, "edit_file", path="src/a.py", edits=edits, expected_sha256=before.upper())
    after = hashlib.sha256(b"x = 1\ny = 3\n").hexdigest()
    assert text.splitlines()[0] == f"edited {root / 'src' / 'a.py'}"
    assert "-y = 2\n+y = 3" in text
    assert text.endswith(f"new sha256 {after}")
    assert data is not None and data["written"] and data["sha256"] == after
    assert data["mtime_ns"] == (root / "src" / "a.py").stat().st_mtime_ns
    text, _ = run(fs, "edit_file", path="src/a.py", edits=[{"old_text": "x = 1  \n", "new_text": "x = 9\n"}])
    assert "matched tolerantly (trailing-whitespace): check the diff" in text
    text, data = run(fs, "edit_file", path="src/a.py", edits=[{"old_text": "x", "new_text": "x"}])
    assert text.splitlines()[0].endswith("unchanged: the edits replace text with the same text")
    assert "(no changes)" in text
    assert data is not None and not data["written"]


def test_large_diff_is_cut_with_a_marker(fs: RootedFS, root: Path) -> None:
    (root / "big.txt").write_text("".join(f"line {n}\n" for n in range(5000)))
    edits = [{"old_text": "line", "new_text": "LINE", "replace_all": True}]
    text, data = run(fs, "edit_file", Limits(max_output=4096), path="big.txt", edits=edits)
    assert len(text) <= 4096 + 200
    assert "[truncated: the first" in text
    assert data is not None and data["diff_truncated"] and data["written"]
    assert (root / "big.txt").read_text().count("LINE") == 5000  # the cut is in the answer, never the file


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("edit_file", {"path": "src/a.py"}, "argument 'edits' must be a list of 1 to 100 edits"),
        ("edit_file", {"path": "src/a.py", "edits": []}, "argument 'edits' must be a list of 1 to 100 edits"),
        ("edit_file", {"path": "src/a.py", "edits": [{"old_text": "x"}] * 101}, "list of 1 to 100 edits"),
        ("edit_file", {"path": "src/a.py", "edits": ["x"]}, "edits[0] must be an object with old_text and new_text"),
        (
            "edit_file",
            {"path": "src/a.py", "edits": [{"old_text": "", "new_text": "y"}]},
            "edits[0]: the old text must be",
        ),
        ("edit_file", {"path": "src/a.py", "edits": [{"old": "x", "new": "y"}]}, "edits[0]: the old text must be"),
        (
            "edit_file",
            {"path": "src/a.py", "edits": [{"old_text": "x", "new_text": "y", "replace_all": "yes"}]},
            "edits[0]: replace_all must be a boolean",
        ),
        (
            "edit_file",
            {"path": "src/a.py", "edits": [{"old_text": "x", "new_text": "y"}], "expected_sha256": "abc"},
            "argument 'expected_sha256' must be 64 hex digits",
        ),
        (
            "edit_file",
            {"path": "src/a.py", "edits": [{"old_text": "x", "new_text": "y"}], "expected_mtime_ns": "1"},
            "argument 'expected_mtime_ns' must be an integer",
        ),
        (
            "edit_file",
            {"path": "src/a.py", "edits": [{"old_text": "x", "new_text": "y"}], "dry_run": "no"},
            "argument 'dry_run' must be a boolean",
        ),
        ("edit_file", {"path": "src/a.py", "edits": [{"old_text": "q", "new_text": "y"}]}, "edits[0]: old text not"),
        ("edit_file", {"path": "src/a.py", "edits": [{"old_text": " = ", "new_text": "="}]}, "matched 2 times"),
        ("write_file", {"path": "a", "content": 1}, "argument 'content' must be a string"),
        ("write_file", {"path": "a", "content": "x", "overwrite": "no"}, "argument 'overwrite' must be a boolean"),
        ("write_file", {"path": "src/a.py", "content": "x", "overwrite": False}, "pass overwrite=true to replace it"),
        (
            "write_file",
            {"path": "n/m.py", "content": "x"},
            "no such file or directory: the parent directory does not exist: pass create_parents=true to create it "
            "(not found)",
        ),
        ("create_directory", {}, "argument 'path' must be a non-empty string"),
        ("create_directory", {"path": "src/a.py/sub"}, "not a directory"),
        ("move_file", {"source": "src/a.py"}, "argument 'destination' must be a non-empty string"),
        ("move_file", {"source": "src/a.py", "destination": "."}, "a root cannot be moved or replaced"),
        ("move_file", {"source": "src", "destination": "src/x"}, "a directory cannot be moved into itself"),
        ("delete_file", {"path": "src"}, "is a directory"),
        ("delete_file", {"path": 7}, "argument 'path' must be a non-empty string"),
    ],
)
def test_argument_and_refusal_messages(fs: RootedFS, root: Path, tool: str, args: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolError) as caught:
        call_tool(tool, fs, args, Limits())
    assert message in str(caught.value)
    assert (root / "src" / "a.py").read_text() == "x = 1\ny = 2\n"


def test_messages_never_echo_the_input(fs: RootedFS) -> None:
    secret = "TOP-SECRET-INPUT"
    cases: list[tuple[str, dict[str, Any]]] = [
        ("edit_file", {"path": secret, "edits": [{"old_text": secret, "new_text": secret}]}),
        ("edit_file", {"path": "src/a.py", "edits": [{"old_text": secret, "new_text": "x"}]}),
        ("write_file", {"path": f"/{secret}/x", "content": secret}),
        ("move_file", {"source": secret, "destination": secret}),
        ("delete_file", {"path": secret}),
        ("create_directory", {"path": f"/{secret}"}),
    ]
    for tool, args in cases:
        with pytest.raises(ToolError) as caught:
            call_tool(tool, fs, args, Limits())
        assert secret not in str(caught.value)


def test_read_only_fs_refuses_every_writing_tool(root: Path) -> None:
    with Boundary([root]) as boundary:
        read_only = RootedFS(boundary, read_only=True)
        cases: list[tuple[str, dict[str, Any]]] = [
            ("edit_file", {"path": "src/a.py", "edits": [{"old_text": "x", "new_text": "z"}]}),
            ("write_file", {"path": "new.txt", "content": "x"}),
            ("create_directory", {"path": "d"}),
            ("move_file", {"source": "src/a.py", "destination": "b.py"}),
            ("delete_file", {"path": "src/a.py"}),
        ]
        for tool, args in cases:
            with pytest.raises(ToolError, match=r"read-only"):
                call_tool(tool, read_only, args, Limits())
    assert sorted(os.listdir(root)) == ["src"]


def test_write_move_create_delete_round_trip(fs: RootedFS, root: Path) -> None:
    text, data = run(fs, "write_file", path="pkg/new.py", content="é\n", create_parents=True)
    assert text == f"wrote 3 bytes to {root / 'pkg' / 'new.py'}"
    assert data == {
        "path": str(root / "pkg" / "new.py"),
        "bytes": 3,
        "sha256": hashlib.sha256("é\n".encode()).hexdigest(),
    }
    assert run(fs, "create_directory", path="pkg/sub") == (
        f"created directory {root / 'pkg' / 'sub'}",
        {"path": str(root / "pkg" / "sub")},
    )
    assert run(fs, "move_file", source="pkg/new.py", destination="pkg/sub/moved.py") == (
        f"moved to {root / 'pkg' / 'sub' / 'moved.py'}",
        {"destination": str(root / "pkg" / "sub" / "moved.py")},
    )
    assert run(fs, "delete_file", path="pkg/sub/moved.py")[1] == {"path": str(root / "pkg" / "sub" / "moved.py")}
    assert os.listdir(root / "pkg" / "sub") == []


def test_control_characters_in_paths_are_refused(fs: RootedFS, root: Path) -> None:
    with pytest.raises(ToolError, match=r"invalid path: .* \(control character\)$"):
        call_tool("write_file", fs, {"path": "evil\nname.txt", "content": "x"}, Limits())
    assert sorted(os.listdir(root)) == ["src"]
