"""Conditional writes on ``apply_patch`` (per file) and ``move_file`` (issue 49): ``if_match`` names the digest a
file must still have, ``if_none_match: "*"`` refuses to replace; a mismatch is refused with the current digest and
changes nothing, and a separate process changing a file between our read and our write never has its change
lost."""

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
from rootbound.core.errors import NotAFile
from rootbound.workspace.tools import Limits, ToolError
from rootbound.workspace.tools.writing import apply_patch, move_file

DIGEST = re.compile(r"its sha256 is now sha256:[0-9a-f]{64}")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path.resolve() / "work"
    work.mkdir()
    (work / "a.txt").write_text("alpha\n")
    (work / "b.txt").write_text("beta\n")
    return work


@pytest.fixture
def fs(root: Path) -> Iterator[RootedFS]:
    with Boundary([root]) as boundary:
        yield RootedFS(boundary)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def call(tool: Any, fs: RootedFS, **args: Any) -> dict[str, Any]:
    return dict(tool(fs, args, Limits(), {}).structured or {})


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


def update(path: str, old: str, new: str) -> tuple[str, ...]:
    return (f"*** Update File: {path}", "@@", f"-{old}", f"+{new}")


def test_apply_patch_with_one_stale_file_changes_nothing(fs: RootedFS, root: Path) -> None:
    before = tree(root)
    text = patch(*update("a.txt", "alpha", "ALPHA"), *update("b.txt", "beta", "BETA"))
    stale = [{"path": "a.txt", "sha256": sha(b"alpha\n")}, {"path": "b.txt", "sha256": "sha256:" + sha(b"old\n")}]
    with pytest.raises(ToolError) as refused:
        call(apply_patch, fs, patch=text, if_match=stale)
    assert str(refused.value).startswith("nothing changed:")
    assert "its sha256 is now sha256:" + sha(b"beta\n") in str(refused.value)
    assert tree(root) == before  # a.txt, whose digest matched, is not changed either
    call(
        apply_patch,
        fs,
        patch=text,
        if_match=[{"path": "a.txt", "sha256": sha(b"alpha\n")}, {"path": "b.txt", "sha256": sha(b"beta\n")}],
    )
    assert tree(root) == {"a.txt": b"ALPHA\n", "b.txt": b"BETA\n"}


def test_apply_patch_if_match_on_delete_and_move(fs: RootedFS, root: Path) -> None:
    with pytest.raises(ToolError) as refused:
        call(
            apply_patch,
            fs,
            patch=patch("*** Delete File: a.txt"),
            if_match=[{"path": "a.txt", "sha256": sha(b"other")}],
        )
    assert DIGEST.search(str(refused.value)) and tree(root)["a.txt"] == b"alpha\n"
    moving = patch("*** Update File: b.txt", "*** Move to: c.txt", "@@", "-beta", "+gamma")
    with pytest.raises(ToolError) as stale_move:
        call(apply_patch, fs, patch=moving, if_match=[{"path": "b.txt", "sha256": sha(b"other")}])
    assert DIGEST.search(str(stale_move.value)) and sorted(tree(root)) == ["a.txt", "b.txt"]
    call(apply_patch, fs, patch=moving, if_match=[{"path": "b.txt", "sha256": sha(b"beta\n")}])
    call(
        apply_patch, fs, patch=patch("*** Delete File: a.txt"), if_match=[{"path": "a.txt", "sha256": sha(b"alpha\n")}]
    )
    assert tree(root) == {"c.txt": b"gamma\n"}


def test_apply_patch_if_none_match_never_replaces(fs: RootedFS, root: Path) -> None:
    before = tree(root)
    for body in (
        ("*** Add File: a.txt", "+new"),
        ("*** Update File: b.txt", "*** Move to: a.txt", "@@", "-beta", "+x"),
    ):
        with pytest.raises(ToolError, match="nothing changed"):
            call(apply_patch, fs, patch=patch(*body), if_none_match="*")
        assert tree(root) == before
    call(apply_patch, fs, patch=patch("*** Add File: n.txt", "+new"), if_none_match="*")
    assert tree(root)["n.txt"] == b"new\n"


def test_apply_patch_if_match_keys_must_name_the_patch_files(fs: RootedFS) -> None:
    text = patch(*update("a.txt", "alpha", "ALPHA"))
    with pytest.raises(ToolError) as unknown:
        call(apply_patch, fs, patch=text, if_match=[{"path": "secret-name.txt", "sha256": sha(b"x")}])
    assert "names no file the patch updates" in str(unknown.value) and "secret-name" not in str(unknown.value)
    with pytest.raises(ToolError, match="SHA-256 digest"):
        call(apply_patch, fs, patch=text, if_match=[{"path": "a.txt", "sha256": "not-a-digest"}])
    with pytest.raises(ToolError, match="names no file"):
        call(apply_patch, fs, patch=text, if_match=[{"path": "a.txt", "sha256": sha(b"a")}] * 2)
    with pytest.raises(ToolError, match="needs sha256"):
        call(apply_patch, fs, patch=text, if_match=[{"path": "a.txt"}])
    with pytest.raises(ToolError, match="must be a list"):
        call(apply_patch, fs, patch=text, if_match=sha(b"alpha\n"))


def test_move_file_if_match_moves_only_the_named_content(fs: RootedFS, root: Path) -> None:
    with pytest.raises(ToolError) as refused:
        call(move_file, fs, source="a.txt", destination="moved.txt", if_match=sha(b"other"))
    assert DIGEST.search(str(refused.value)) and sha(b"alpha\n") in str(refused.value)
    assert sorted(p.name for p in root.iterdir()) == ["a.txt", "b.txt"]  # put back, no hidden copy left
    call(move_file, fs, source="a.txt", destination="moved.txt", if_match="sha256:" + sha(b"alpha\n"))
    assert tree(root) == {"b.txt": b"beta\n", "moved.txt": b"alpha\n"}
    (root / "d").mkdir()
    with pytest.raises(NotAFile):  # a directory has no digest: refused, not moved
        call(move_file, fs, source="d", destination="e", if_match=sha(b""))
    assert (root / "d").is_dir()


def test_move_file_if_none_match_refuses_an_existing_destination(fs: RootedFS, root: Path) -> None:
    before = tree(root)
    with pytest.raises(Exception, match="exists"):
        call(move_file, fs, source="a.txt", destination="b.txt", overwrite=True, if_none_match="*")
    assert tree(root) == before
    with pytest.raises(Exception, match="exists"):  # the source's if_match and the destination's if_none_match
        call(move_file, fs, source="a.txt", destination="b.txt", if_match=sha(b"alpha\n"), if_none_match="*")
    assert tree(root) == before
    call(move_file, fs, source="a.txt", destination="c.txt", if_match=sha(b"alpha\n"), if_none_match="*")
    assert tree(root) == {"b.txt": b"beta\n", "c.txt": b"alpha\n"}


# The other writer, a separate process: on each line it reads, it replaces the file (a new inode, by rename) with
# "child-K" and answers K, or (every other time) rewrites it in place: the change falls between our read and write.
_CHILD = """
import os, sys
path = sys.argv[1]
for k, _ in enumerate(sys.stdin, 1):
    if k % 2:
        with open(path + ".child", "w") as out:
            out.write(f"child-{k}\\n")
        os.rename(path + ".child", path)
    else:
        with open(path, "r+") as out:
            out.truncate(0)
            out.write(f"child-{k}\\n")
    print(k, flush=True)
"""


def test_another_writer_between_read_and_patch_or_move_never_loses_an_update(fs: RootedFS, root: Path) -> None:
    target = root / "f.txt"
    target.write_text("start\n")
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdin is not None and child.stdout is not None
    written = refused = lost = 0
    try:
        for round_ in range(1000):
            data = target.read_bytes()
            raced = round_ % 2 == 0
            if raced:  # the other writer changes the file after our read, before our write
                child.stdin.write("change\n")
                child.stdin.flush()
                k = int(child.stdout.readline())
            kind = round_ % 6 // 2
            args: dict[str, Any]
            if kind == 0:
                tool, args = apply_patch, {"patch": patch("*** Update File: f.txt", "@@", f"+ours-{round_}")}
            elif kind == 1:
                tool, args = apply_patch, {"patch": patch("*** Delete File: f.txt")}
            else:
                tool, args = move_file, {"source": "f.txt", "destination": "g.txt"}
            args["if_match"] = [{"path": "f.txt", "sha256": sha(data)}] if tool is apply_patch else sha(data)
            try:
                call(tool, fs, **args)
                written += 1
                lost += raced  # written over, deleted or moved away the other writer's change: its update is lost
                if kind:
                    (root / "g.txt").unlink(missing_ok=True)
                    target.write_text(f"ours-{round_}\n")  # the file back for the next round
            except ToolError as error:
                refused += 1
                now = target.read_bytes()
                assert now == f"child-{k}\n".encode() if raced else False, (round_, str(error))  # nothing changed
                assert f"its sha256 is now sha256:{sha(now)}" in str(error)  # the refusal says what it is now
                assert sorted(p.name for p in root.iterdir()) == ["a.txt", "b.txt", "f.txt"]
    finally:
        child.stdin.close()
        child.wait(60)
        child.stdout.close()
    assert (written, refused, lost) == (500, 500, 0)
