"""Conditional writes (issue 49): ``if_match`` on ``write_file`` and ``edit_file`` (``expected_sha256`` still
works), ``if_none_match: "*"``; a mismatch is refused with the current digest and changes nothing; and a separate
process changing the file between our read and our write never has its change lost."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rootbound import Boundary, RootedFS
from rootbound.workspace.tools import Limits, ToolError
from rootbound.workspace.tools.writing import delete_file, edit_file, write_file

DIGEST = re.compile(r"its sha256 is now sha256:[0-9a-f]{64}")


@pytest.fixture
def fs(tmp_path: Path) -> Iterator[RootedFS]:
    root = tmp_path.resolve() / "work"
    root.mkdir()
    (root / "f.txt").write_text("one\n")
    with Boundary([root]) as boundary:
        yield RootedFS(boundary)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def call(tool: Any, fs: RootedFS, **args: Any) -> dict[str, Any]:
    output = tool(fs, args, Limits(), {})
    return dict(output.structured or {})


def test_if_match_writes_only_over_the_named_content(fs: RootedFS) -> None:
    path = str(next(iter(fs.boundary)).path / "f.txt")
    with pytest.raises(ToolError) as refused:
        call(write_file, fs, path=path, content="two\n", if_match="0" * 64)
    assert DIGEST.search(str(refused.value)) and sha(b"one\n") in str(refused.value)
    assert Path(path).read_text() == "one\n"  # nothing changed
    done = call(write_file, fs, path=path, content="two\n", if_match="sha256:" + sha(b"one\n"))
    assert done["sha256"] == sha(b"two\n") and Path(path).read_text() == "two\n"


def test_if_none_match_creates_only(fs: RootedFS) -> None:
    root = next(iter(fs.boundary)).path
    call(write_file, fs, path=str(root / "new.txt"), content="n\n", if_none_match="*")
    with pytest.raises(Exception, match="exists"):
        call(write_file, fs, path=str(root / "new.txt"), content="again\n", if_none_match="*")
    assert (root / "new.txt").read_text() == "n\n"
    with pytest.raises(ToolError, match="exclude each other"):
        call(write_file, fs, path=str(root / "x"), content="", if_none_match="*", if_match=sha(b""))


def test_edit_file_takes_if_match_and_keeps_expected_sha256(fs: RootedFS) -> None:
    path = str(next(iter(fs.boundary)).path / "f.txt")
    edit = {"old_string": "one", "new_string": "uno"}
    with pytest.raises(ToolError) as refused:
        call(edit_file, fs, path=path, **edit, if_match=sha(b"other"))
    assert DIGEST.search(str(refused.value))
    with pytest.raises(ToolError) as older:
        call(edit_file, fs, path=path, **edit, expected_sha256=sha(b"other"))
    assert DIGEST.search(str(older.value))
    assert Path(path).read_text() == "one\n"
    call(edit_file, fs, path=path, **edit, expected_sha256=sha(b"one\n"))
    call(edit_file, fs, path=path, old_string="uno", new_string="eins", if_match="sha256:" + sha(b"uno\n"))
    assert Path(path).read_text() == "eins\n"
    with pytest.raises(ToolError, match="differ"):
        call(edit_file, fs, path=path, **edit, if_match=sha(b"a"), expected_sha256=sha(b"b"))


def test_delete_file_if_match_removes_only_the_named_content(fs: RootedFS) -> None:
    root = next(iter(fs.boundary)).path
    with pytest.raises(ToolError) as refused:
        call(delete_file, fs, path=str(root / "f.txt"), if_match=sha(b"other"))
    assert DIGEST.search(str(refused.value)) and (root / "f.txt").read_text() == "one\n"
    assert sorted(p.name for p in root.iterdir()) == ["f.txt"]  # put back under its name, no hidden copy left
    call(delete_file, fs, path=str(root / "f.txt"), if_match="sha256:" + sha(b"one\n"))
    assert not (root / "f.txt").exists() and list(root.iterdir()) == []


# The other writer, a separate process: on each line it reads, it replaces the file (a new inode, by rename) with
# "child-K" and answers K: the change falls exactly between our read and our write.
_CHILD = """
import os, sys
path = sys.argv[1]
for k, _ in enumerate(sys.stdin, 1):
    with open(path + ".child", "w") as out:
        out.write(f"child-{k}")
    os.rename(path + ".child", path)
    print(k, flush=True)
"""


def test_another_writer_between_read_and_write_never_loses_an_update(fs: RootedFS) -> None:
    target = next(iter(fs.boundary)).path / "f.txt"
    target.write_text("start")
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdin is not None and child.stdout is not None
    written = refused = lost = 0
    try:
        for round_ in range(1000):
            data = fs.read_bytes(str(target))
            raced = round_ % 2 == 0
            if raced:  # the other writer changes the file after our read, before our write
                child.stdin.write("change\n")
                child.stdin.flush()
                k = int(child.stdout.readline())
            tool = (write_file, edit_file, delete_file)[round_ % 6 // 2]
            args: dict[str, Any] = {"path": str(target), "if_match": sha(data)}
            if tool is write_file:
                args["content"] = f"ours-{round_}"
            elif tool is edit_file:
                args |= {"old_string": data.decode(), "new_string": f"ours-{round_}"}
            try:
                call(tool, fs, **args)
                written += 1
                lost += raced  # written over (or deleted) the other writer's change: its update is lost
                if tool is delete_file:
                    target.write_text(f"ours-{round_}")  # the file back for the next round
            except ToolError as error:
                refused += 1
                now = target.read_bytes()
                assert now == f"child-{k}".encode() if raced else False, (round_, str(error))  # nothing changed
                assert f"its sha256 is now sha256:{sha(now)}" in str(error)  # the refusal says what it is now
    finally:
        child.stdin.close()
        child.wait(60)
        child.stdout.close()
    assert (written, refused, lost) == (500, 500, 0)
