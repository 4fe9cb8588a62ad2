"""Ignore files beyond ``.gitignore``: ``.ignore``, ``.rgignore`` and ``.git/info/exclude``, and the depth-limit mark.

The matcher's precedence (ripgrep's: ``.rgignore`` > ``.ignore`` > ``.gitignore`` > ``info/exclude``, a nested
repository starting afresh for the git kinds) as pure rules; then the walks of ``search_files``, ``grep`` and
``directory_tree`` on a real tree, with both resolvers, against ignore files, ``.git``, ``.git/info`` and
``info/exclude`` that are links out of the root (or a ``gitdir:`` file): what lies outside never hides, reveals or
leaks anything, also while the links are swapped in and out during walks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootbound import Boundary, RootedFS
from rootbound.confine import syscalls as o2
from rootbound.search.ignore_rules import EXCLUDE, IgnoreRules
from rootbound.workspace.tools import Limits, ToolError, call_tool
from rootbound.workspace.tools.calls import Budget, Cancelled
from tests.helpers.swap import DirSwapperProcess, SwapArena

RESOLVERS = [
    pytest.param("openat2", marks=pytest.mark.skipif(not o2.available(), reason="openat2 unavailable")),
    "walk",
]
SECRET = "SECRET-51c9"


# -- the matcher ------------------------------------------------------------------------------------------------


def test_a_negation_in_ignore_reincludes_what_gitignore_ignores() -> None:
    rules = IgnoreRules().child("", b"*.log\n").child("", b"!keep.log\n", kind=".ignore")
    assert rules.ignored("a.log", False)
    assert not rules.ignored("keep.log", False)
    # .ignore wins at any depth: a deeper .gitignore cannot take keep.log away again (ripgrep: kind first).
    deeper = rules.child("sub/", b"keep.log\n")
    assert not deeper.ignored("sub/keep.log", False)


def test_a_negation_in_gitignore_cannot_reinclude_what_ignore_ignores() -> None:
    rules = IgnoreRules().child("", b"*.tmp\n", kind=".ignore").child("", b"!x.tmp\n")
    assert rules.ignored("x.tmp", False)
    assert rules.child("sub/", b"!*.tmp\n").ignored("sub/a.tmp", False)  # nor a deeper one
    # A deeper .ignore does: within a kind, the deepest file with a matching rule decides.
    assert not rules.child("sub/", b"!*.tmp\n", kind=".ignore").ignored("sub/a.tmp", False)


def test_rgignore_wins_over_ignore() -> None:
    rules = IgnoreRules().child("", b"!b.tmp\n", kind=".rgignore").child("", b"*.tmp\n", kind=".ignore")
    assert not rules.ignored("b.tmp", False)
    assert rules.ignored("a.tmp", False)
    assert (
        IgnoreRules()
        .child("", b"b.tmp\n", kind=".rgignore")
        .child("", b"!b.tmp\n", kind=".ignore")
        .ignored("b.tmp", False)
    )


def test_info_exclude_is_the_lowest_and_rooted_at_its_repository() -> None:
    rules = IgnoreRules().repository("", b"*.bak\nsecret/\n/top.txt\n")
    assert rules.ignored("a.bak", False) and rules.ignored("x/secret", True) and rules.ignored("top.txt", False)
    assert not rules.ignored("x/top.txt", False)  # anchored at the repository's top
    assert not rules.child("", b"!keep.bak\n").ignored("keep.bak", False)  # any .gitignore match wins
    assert not rules.child("sub/", b"!*.bak\n").ignored("sub/a.bak", False)
    # Above the walk's start (the start is repo/src): rules see paths from the repository's top.
    above = IgnoreRules().repository("", b"/src/gen/\n", lead="src/")
    assert above.ignored("gen", True) and not above.ignored("x/gen", True)


def test_a_nested_repository_starts_afresh_for_the_git_kinds() -> None:
    outer = IgnoreRules().repository("", b"*.bak\n").child("", b"*.log\n").child("", b"*.tmp\n", kind=".ignore")
    inner = outer.repository("inner/", b"*.inner\n")
    assert outer.ignored("inner/a.bak", False) and outer.ignored("inner/a.log", False)
    assert not inner.ignored("inner/a.bak", False)  # the outer repository's info/exclude stops at inner/.git
    assert not inner.ignored("inner/a.log", False)  # so do its .gitignore files
    assert inner.ignored("inner/a.tmp", False)  # .ignore is not git's: it still applies
    assert inner.ignored("inner/y.inner", False)
    # A .git that is not read (a gitdir: file, a link) still marks a repository: the outer rules stop there too.
    assert not outer.repository("inner/", None).ignored("inner/a.bak", False)


def test_an_exclude_kind_is_known() -> None:
    assert not IgnoreRules()
    assert IgnoreRules().child("", b"x\n", kind=EXCLUDE).ignored("x", False)
    assert not IgnoreRules().child("", b"# only a comment\n\n", kind=".ignore")


# -- the walks, with links out of the root ------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``root`` with ignore files that are links to ``outside`` (each would hide every .txt, or re-include
    ``hidden.txt``, if followed), a ``.git`` whose ``info`` is a link, and a nested repository whose ``.git`` is
    a ``gitdir:`` file pointing outside."""
    base = tmp_path.resolve()
    outside, root = base / "outside", base / "root"
    hide_all = f"*.txt\n# {SECRET}\n"
    (outside / "gitdir" / "info").mkdir(parents=True)
    (outside / "gitdir" / "info" / "exclude").write_text(hide_all)
    (outside / "info").mkdir()
    (outside / "info" / "exclude").write_text(hide_all)
    (outside / "hide").write_text(hide_all)
    (outside / "reveal").write_text(f"!hidden.txt\n# {SECRET}\n")
    for directory in ("a", "b", "c/.git", "d/.git/info", "e", "f"):
        (root / directory).mkdir(parents=True)
    (root / ".ignore").write_text("hidden.txt\n")  # not .gitignore: c/, d/, e/, f/ are repositories of their own
    for directory in ("a", "b", "c", "d", "e", "f"):
        (root / directory / "ok.txt").write_text("inside\n")
        (root / directory / "hidden.txt").write_text("hidden\n")
    (root / "a" / ".ignore").symlink_to(outside / "hide")
    (root / "b" / ".rgignore").symlink_to(outside / "reveal")
    (root / "c" / ".git" / "info").symlink_to(outside / "info")  # a real .git, its info a link
    (root / "d" / ".git" / "info" / "exclude").symlink_to(outside / "hide")
    (root / "e" / ".git").symlink_to(outside / "gitdir")
    (root / "f" / ".git").write_text(f"gitdir: {outside / 'gitdir'}\n")
    return root


def fs_for(root: Path, resolver: str) -> RootedFS:
    return RootedFS(Boundary([root]), resolver=resolver)  # type: ignore[arg-type]


def names(root: Path, out: list[str]) -> list[str]:
    return [str(Path(path).relative_to(root)) for path in out]


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_linked_ignore_files_and_git_dirs_are_not_followed(tree: Path, resolver: str) -> None:
    fs = fs_for(tree, resolver)
    expected = ["a/ok.txt", "b/ok.txt", "c/ok.txt", "d/ok.txt", "e/ok.txt", "f/ok.txt"]
    for path in (None, "a", "b", "c", "d", "e", "f"):
        args = {"pattern": "*.txt"} if path is None else {"pattern": "*.txt", "path": path}
        found = call_tool("search_files", fs, args, Limits())
        assert found.structured is not None
        want = expected if path is None else [f"{path}/ok.txt"]
        assert names(tree, found.structured["matches"]) == want, path
        grep = call_tool("grep", fs, {**args, "pattern": "i", "include": ["*.txt"], "files_only": True}, Limits())
        assert grep.structured is not None
        assert names(tree, grep.structured["files"]) == want, path
        assert SECRET not in found.text + grep.text
    shown = call_tool("directory_tree", fs, {"path": ".", "max_depth": 3}, Limits())
    assert SECRET not in shown.text
    assert shown.text.splitlines()[1:] == [
        ".ignore",
        "a/", "  .ignore@", "  ok.txt",
        "b/", "  .rgignore@", "  ok.txt",
        "c/", "  ok.txt",
        "d/", "  ok.txt",
        "e/", "  .git@", "  ok.txt",
        "f/", "  .git", "  ok.txt",
    ]  # fmt: skip
    everything = call_tool("search_files", fs, {"pattern": "hidden.txt", "include_ignored": True}, Limits())
    assert everything.structured is not None and len(everything.structured["matches"]) == 6


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_linked_files_above_the_start_are_not_followed(tree: Path, resolver: str) -> None:
    """The same links, read from above a walk's start (each directory opened through the boundary, its files
    looked up by name): still not followed; the root's own .ignore (a real file) still hides hidden.txt."""
    for directory in ("a", "b", "c", "d", "e", "f"):
        (tree / directory / "below").mkdir()
        (tree / directory / "below" / "ok.txt").write_text("inside\n")
        (tree / directory / "below" / "hidden.txt").write_text("hidden\n")
    fs = fs_for(tree, resolver)
    for directory in ("a", "b", "c", "d", "e", "f"):
        path = f"{directory}/below"
        found = call_tool("search_files", fs, {"pattern": "*.txt", "path": path}, Limits())
        assert found.structured is not None
        assert names(tree, found.structured["matches"]) == [f"{path}/ok.txt"], path
        grep = call_tool("grep", fs, {"pattern": "i", "path": path, "files_only": True}, Limits())
        assert grep.structured is not None
        assert names(tree, grep.structured["files"]) == [f"{path}/ok.txt"], path
        assert SECRET not in found.text + grep.text


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_info_exclude_and_ignore_files_apply_when_they_are_inside(tmp_path: Path, resolver: str) -> None:
    """The same tree with the files in place (not links): each hides what it names, include_ignored undoes all."""
    root = tmp_path.resolve() / "root"
    (root / "repo" / ".git" / "info").mkdir(parents=True)
    (root / "repo" / ".git" / "info" / "exclude").write_text("*.bak\n")
    (root / "repo" / "src").mkdir()
    for name in ("a.bak", "keep.bak", "src/b.bak", "a.tmp", "b.tmp", "x.log", "main.py"):
        (root / "repo" / name).write_text("x\n")
    (root / "repo" / ".gitignore").write_text("!keep.bak\n*.log\n")
    (root / "repo" / ".ignore").write_text("*.tmp\n!x.log\n")
    (root / "repo" / ".rgignore").write_text("!b.tmp\n")
    fs = fs_for(root, resolver)
    for path in ("repo", "repo/src"):
        found = call_tool("search_files", fs, {"pattern": "*.*", "path": path}, Limits())
        assert found.structured is not None
        shown = names(root / "repo", found.structured["matches"])
        if path == "repo":  # .gitignore beats exclude; .ignore beats .gitignore; .rgignore beats .ignore
            assert shown == [".gitignore", ".ignore", ".rgignore", "b.tmp", "keep.bak", "main.py", "x.log"]
        else:  # a walk below the repository's top still reads its info/exclude
            assert shown == []
    found = call_tool("search_files", fs, {"pattern": "*.*", "path": "repo", "include_ignored": True}, Limits())
    assert found.structured is not None and len(found.structured["matches"]) == 10


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_links_swapped_in_during_walks_never_apply(tree: Path, resolver: str) -> None:
    """``c/.git/info`` and ``a/.ignore`` trade names with links out (hiding every .txt) in other processes
    (``renameat2(RENAME_EXCHANGE)``, atomic) while walks run: ok.txt is always found, nothing outside is shown."""
    fs = fs_for(tree, resolver)
    git, a = tree / "c" / ".git", tree / "a"
    (git / "info").rename(git / "info-link")
    (git / "info").mkdir()
    (git / "info" / "exclude").write_text("nothing-here\n")
    (a / ".ignore").rename(a / "ignore-link")
    (a / ".ignore").write_text("nothing-here\n")
    outside = tree.parent / "outside"
    swappers = [
        DirSwapperProcess(SwapArena(git / "info", git / "info-link", outside)),
        DirSwapperProcess(SwapArena(a / ".ignore", a / "ignore-link", outside)),
    ]
    for swapper in swappers:
        swapper.start()
    try:
        for _ in range(150):
            for path in ("a", "c"):
                for tool, args in (
                    ("search_files", {"pattern": "ok.txt", "path": path}),
                    ("grep", {"pattern": "inside", "path": path, "files_only": True}),
                    ("directory_tree", {"path": path, "max_depth": 1}),
                ):
                    try:
                        out = call_tool(tool, fs, args, Limits())
                    except ToolError:
                        continue
                    assert SECRET not in out.text
                    assert "ok.txt" in out.text, (tool, out.text)
    finally:
        for swapper in swappers:
            swapper.stop()
    assert all(swapper.swaps for swapper in swappers)


# -- directory_tree at max_depth ------------------------------------------------------------------------------


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_only_a_directory_with_something_to_show_is_marked_at_max_depth(tmp_path: Path, resolver: str) -> None:
    root = tmp_path.resolve() / "root"
    for directory in ("empty", "full", "logs", "self-ignoring", "only-git/.git", "linked-exclude/.git/info"):
        (root / directory).mkdir(parents=True)
    (root / ".gitignore").write_text("*.log\n")
    (root / "full" / "a.txt").write_text("x\n")
    (root / "logs" / "a.log").write_text("x\n")
    (root / "self-ignoring" / ".ignore").write_text("*\n")  # ignores itself too (ripgrep)
    (root / "self-ignoring" / "b.txt").write_text("x\n")
    (tmp_path / "hide").write_text("*\n")
    (root / "linked-exclude" / ".git" / "info" / "exclude").symlink_to(tmp_path / "hide")
    (root / "linked-exclude" / "c.txt").write_text("x\n")
    for crowd in ("crowd-hidden", "crowd-shown"):  # more entries than are listed whole: the look stops early
        (root / crowd).mkdir()
        for n in range(300):
            (root / crowd / f"{n}.txt").write_text("x\n")
    (root / "crowd-hidden" / ".ignore").write_text("*\n")
    (root / "crowd-shown" / ".ignore").write_text("*\n!150.txt\n")
    fs = fs_for(root, resolver)
    tree = call_tool("directory_tree", fs, {"path": ".", "max_depth": 1}, Limits())
    assert tree.text.splitlines()[1:] == [
        ".gitignore",
        "crowd-hidden/",
        "crowd-shown/…",
        "empty/",
        "full/…",
        "linked-exclude/…",  # the linked exclude is not read: c.txt would be shown
        "logs/",  # everything in it is ignored
        "only-git/",  # .git is never shown
        "self-ignoring/",
    ]
    assert tree.structured is not None and tree.structured["depth_limited"] is True
    assert [entry["path"] for entry in tree.structured["entries"]][3:5] == ["empty", "full"]
    marked = [entry["path"] for entry in tree.structured["entries"] if entry.get("more")]
    assert marked == ["crowd-shown", "full", "linked-exclude"]  # the structured twin of the '/…' marks
    quiet = call_tool(
        "directory_tree",
        fs,
        {"path": ".", "max_depth": 1, "exclude": ["full", "linked-exclude", "crowd-shown"]},
        Limits(),
    )
    assert quiet.structured is not None and quiet.structured["depth_limited"] is False
    assert "…" not in quiet.text
    shown = call_tool("directory_tree", fs, {"path": ".", "max_depth": 1, "include_ignored": True}, Limits())
    assert "logs/…" in shown.text.splitlines() and "self-ignoring/…" in shown.text.splitlines()
    assert "only-git/" in shown.text.splitlines()


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_the_look_into_a_directory_at_max_depth_counts_in_the_budget(tmp_path: Path, resolver: str) -> None:
    """Peeking counts its entries like walked ones (progress, deadline, cancellation): a directory of ignored files
    at the limit is read to its end, and every entry read is counted; a cancellation stops it midway."""

    root = tmp_path.resolve() / "root"
    (root / "logs").mkdir(parents=True)
    (root / ".gitignore").write_text("*.log\n")
    for n in range(300):
        (root / "logs" / f"{n}.log").write_text("x\n")
    fs = fs_for(root, resolver)
    budget = Budget(60)
    tree = call_tool("directory_tree", fs, {"path": ".", "max_depth": 1}, Limits(), {"budget": budget})
    assert tree.text.splitlines()[1:] == [".gitignore", "logs/"]
    assert budget.steps == 2 + 300

    class CancelledMidway(Budget):
        def check(self, steps: int = 1) -> None:
            super().check(steps)
            if self.steps > 100:  # only the look into logs/ gets this far: the walk itself reads 2 entries
                self.cancel()

    with pytest.raises(Cancelled):
        call_tool("directory_tree", fs, {"path": ".", "max_depth": 1}, Limits(), {"budget": CancelledMidway(60)})


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_a_directory_at_max_depth_swapped_for_a_link_is_not_looked_into(tmp_path: Path, resolver: str) -> None:
    """An empty ``leaf`` and a link to a full directory outside trade names (``renameat2(RENAME_EXCHANGE)``, in
    another process) while trees are drawn: the look opens the listed directory by name, no link followed, so a
    ``/…`` (outside content) never shows."""
    root, outside = tmp_path.resolve() / "root", tmp_path.resolve() / "outside"
    (root / "leaf").mkdir(parents=True)
    outside.mkdir()
    (outside / f"{SECRET}.txt").write_text("x\n")
    (root / "link").symlink_to(outside)
    swapper = DirSwapperProcess(SwapArena(root / "leaf", root / "link", outside))
    fs = fs_for(root, resolver)
    seen: set[str] = set()
    swapper.start()
    try:
        for _ in range(2000):
            out = call_tool("directory_tree", fs, {"path": ".", "max_depth": 1}, Limits())
            assert "…" not in out.text and SECRET not in out.text, out.text
            assert out.structured is not None and out.structured["depth_limited"] is False
            seen.add(" ".join(out.text.splitlines()[1:]))
    finally:
        swapper.stop()
    assert swapper.swaps > 0 and {"leaf/ link@", "leaf@ link/"} <= seen  # both sides of the swap were drawn


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_walk_keep_filters_what_is_yielded_not_what_is_entered(tmp_path: Path, resolver: str) -> None:
    """``walk(keep=...)`` (the name search's filter) yields only accepted entries, still enters rejected
    directories and still applies the ignore files below them, and keeps each yielded directory's ``more`` mark
    its own when rejected entries around it were peeked at too."""
    from rootbound.search.ignore_rules import PathFilter
    from rootbound.search.ignore_walk import WalkLimits, walk

    root = tmp_path.resolve()
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x\n")
    (root / "src" / "deep" / "b.py").write_text("x\n")
    (root / "src" / "deep" / "skip.py").write_text("x\n")
    (root / "src" / ".gitignore").write_text("skip.py\n")
    for name in ("full.d", "empty.d", "other"):
        (root / "top" / name).mkdir(parents=True)
    (root / "top" / "full.d" / "f.txt").write_text("x\n")
    (root / "top" / "other" / "g.txt").write_text("x\n")
    fs = fs_for(root, resolver)
    where = PathFilter()
    found = [item.rel for item in walk(fs, ".", where, keep=lambda rel, name, is_dir: name.endswith(".py"))]
    assert found == ["src/a.py", "src/deep/b.py"]  # src and deep entered though rejected; skip.py ignored
    marks = {
        item.rel: item.more
        for item in walk(
            fs, "top", where, limits=WalkLimits(max_depth=1), peek=True, keep=lambda rel, name, is_dir: "." in name
        )
    }
    assert marks == {"empty.d": False, "full.d": True}  # 'other' (peeked, full) rejected: its mark went nowhere
