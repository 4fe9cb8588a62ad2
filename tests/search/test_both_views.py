"""``both_views.walk_both``: one walk records the two views a first grep makes, each equal to what ``walk_view``
records with its filter alone (entries, directories, files, directories not entered, entries listed), and it tells
of every file and directory as the plain walk does. Trees with ignore files at several depths (of every kind, a
negation, a directory rule), a nested repository with its own ``info/exclude``, ``.git`` folders, links, an
unreadable directory and a depth limit; from the DIR's top and from below it (the ignore files above the start)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rootbound.confine.boundary import Boundary
from rootbound.confine.rooted_files import RootedFiles
from rootbound.search.ignore_rules import PathFilter
from rootbound.search.ignore_walk import WalkLimits
from rootbound.search.index.both_views import Seen, walk_both
from rootbound.search.index.view import View, walk_view


def _write(path: Path, text: str = "x\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _tree(root: Path) -> None:
    for rel in ("a.py", "b.log", "build/out.o", "src/m.py", "src/gen/g.py", "src/gen/keep.py", "docs/x.md"):
        _write(root / rel)
    _write(root / ".gitignore", "*.log\nbuild/\nsrc/gen/*\n!src/gen/keep.py\n")
    _write(root / "src/.ignore", "m.py\n")
    _write(root / "docs/.rgignore", "*.md\n")
    _write(root / "docs/deep/a/b/c/d.txt")
    _write(root / ".git/HEAD", "ref: x\n")
    _write(root / ".git/info/exclude", "secret*\n")
    _write(root / "secret.txt")
    _write(root / "sub/.git/info/exclude", "local*\n")
    _write(root / "sub/local.txt")
    _write(root / "sub/other.txt")
    _write(root / "sub/secret.txt")  # the outer exclude stops at the nested repository
    _write(root / "sub/.gitignore", "other.txt\n")
    (root / "link").symlink_to("src")
    (root / "flink").symlink_to("a.py")
    _write(root / "ign/inner.txt")
    _write(root / "locked/hidden.txt")
    with (root / ".gitignore").open("a") as f:
        f.write("ign/\n")


def _shape(view: View) -> tuple[object, ...]:
    return view.entries, view.dirs, view.files, view.unentered, view.listed


@pytest.mark.parametrize("below", [False, True])
@pytest.mark.parametrize("depth", [64, 3])
def test_both_views_equal_two_walks(tmp_path: Path, below: bool, depth: int) -> None:
    top = tmp_path / "top"
    start = top / "w" if below else top
    _tree(start)
    if below:  # rules above the start apply to its tree
        _write(top / ".ignore", "a.py\n")
    locked = start / "locked"
    locked.chmod(0)
    try:
        with Boundary([top]) as boundary:
            fs = RootedFiles(boundary, read_only=True)
            limits = WalkLimits(max_depth=depth)
            told: list[tuple[str, str]] = []
            told_both: list[tuple[str, str]] = []

            def tell(into: list[tuple[str, str]], kind: str) -> Seen:
                return lambda rel, fd, name: into.append((kind, rel + "|" + name))

            plain = walk_view(
                fs, str(start), "", PathFilter(gitignore=False), limits, None, tell(told, "f"), tell(told, "d")
            )
            ignoring = walk_view(fs, str(start), "", PathFilter(), limits, None)
            both = walk_both(fs, str(start), limits, tell(told_both, "f"), tell(told_both, "d"))
    finally:
        locked.chmod(0o755)
    assert _shape(both[0]) == _shape(plain)
    assert _shape(both[1]) == _shape(ignoring)
    assert told_both == told
    shown = {rel for rel, _, _ in both[1].entries}
    if depth == 64:  # the rules did apply: what each kind of ignore file leaves out is not in the view
        assert {"b.log", "build", "src/m.py", "src/gen/g.py", "docs/x.md", "secret.txt", "ign"}.isdisjoint(shown)
        assert {"src/gen/keep.py", "sub/secret.txt", "link", "docs/deep/a/b/c/d.txt"} <= shown
        assert {"sub/local.txt", "sub/other.txt"}.isdisjoint(shown)
        assert ("a.py" in shown) is not below
    assert not any(rel == ".git" or rel.startswith(".git/") for rel, _, _ in both[0].entries)
    assert len(both[1].entries) < len(both[0].entries)
    if os.geteuid() != 0:
        assert "locked" in both[0].unentered and "locked" in both[1].unentered


def test_both_views_on_a_tree_without_ignore_files(tmp_path: Path) -> None:
    for at in range(40):
        _write(tmp_path / f"d{at % 7}" / f"e{at % 3}" / f"f{at}.txt")
    with Boundary([tmp_path]) as boundary:
        fs = RootedFiles(boundary, read_only=True)
        plain = walk_view(fs, str(tmp_path), "", PathFilter(gitignore=False), WalkLimits(), None)
        ignoring = walk_view(fs, str(tmp_path), "", PathFilter(), WalkLimits(), None)
        both = walk_both(fs, str(tmp_path), WalkLimits(), lambda *_: None, lambda *_: None)
    assert _shape(both[0]) == _shape(plain) == _shape(ignoring) == _shape(both[1])
    assert len(both[0].files) == 40
