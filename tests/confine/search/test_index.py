"""The search index: literals RE2 requires, answers identical to a full scan, never stale after a change made by
another process, confined to the session's start, and released on close."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootbound import Boundary, RootedFS
from rootbound.confine.search.agent_grep import GrepLimits, GrepReport, grep_tree
from rootbound.confine.search.ignore_rules import PathFilter, name_matcher
from rootbound.confine.search.ignore_walk import walk
from rootbound.confine.search.index.indexed_search import grep_with_index, names_with_index
from rootbound.confine.search.index.literals import fold, required_literals
from rootbound.confine.search.index.registry import IndexRegistry
from rootbound.confine.search.safe_regex import compile_bytes

# -- literals: every one claimed is in every matching line ------------------------------------------------------

ATOMS = [
    "a",
    "b",
    "K",
    "s",
    "ab",
    "xyz",
    "é",
    ".",
    "\\.",
    "[a-c]",
    "[[:alpha:]]",
    "\\d",
    "(",
    ")",
    "|",
    "*",
    "+",
    "?",
    "{2}",
    "{0,3}",
    "(?i)",
    "(?:",
    "\\bq",
    "^",
    "$",
    "\\x41",
    "_",
    "\\(",
    "]",
    "{",
]
TEXT = st.text(alphabet="abcKksSxyzé._(AQq0123 \u212a\u017f]{", max_size=40)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(ATOMS), min_size=1, max_size=8), st.lists(TEXT, min_size=1, max_size=6), st.booleans())
def test_literals_are_in_every_match(atoms: list[str], lines: list[str], ignore_case: bool) -> None:
    pattern = "".join(atoms)
    try:
        compiled = compile_bytes(pattern, regex=True, ignore_case=ignore_case)
    except Exception:
        return  # RE2 refuses it: never searched
    literals = required_literals(pattern, regex=True, ignore_case=ignore_case)
    for line in lines:
        data = line.encode()
        if compiled.search(data) is not None:
            for literal in literals:
                assert literal in fold(data), (pattern, line, literal)


@settings(max_examples=200, deadline=None)
@given(TEXT.filter(bool), st.lists(TEXT, min_size=1, max_size=6), st.booleans())
def test_literal_patterns(pattern: str, lines: list[str], ignore_case: bool) -> None:
    compiled = compile_bytes(pattern, regex=False, ignore_case=ignore_case)
    for line in lines:
        data = line.encode()
        if compiled.search(data) is not None:
            for literal in required_literals(pattern, regex=False, ignore_case=ignore_case):
                assert literal in fold(data)


def test_literals_found_where_sure() -> None:
    assert required_literals(r"class [A-Za-z0-9_]+Error\(", regex=True, ignore_case=False) == [b"class ", b"error("]
    assert required_literals("getaddrinfo", regex=False, ignore_case=False) == [b"getaddrinfo"]
    assert required_literals("a|getaddrinfo", regex=True, ignore_case=False) == []
    assert required_literals("[[:alpha:]]foo", regex=True, ignore_case=False) == [b"foo"]
    assert required_literals("(?i)task", regex=True, ignore_case=False) == []  # k: the Kelvin sign folds to it
    assert required_literals("TASK", regex=False, ignore_case=True) == []  # a run of two: no trigram
    assert required_literals("TABLE", regex=False, ignore_case=True) == [b"table"]


# -- a tree, its index, a full scan beside it -------------------------------------------------------------------


def _tree(root: Path) -> None:
    for i in range(60):
        d = root / f"d{i % 4}" / f"e{i % 3}"
        d.mkdir(parents=True, exist_ok=True)
        body = f"def getaddrinfo_{i}(): pass\nclass Foo{i}Error(Exception):\n" if i % 5 == 0 else "nothing\n" * i
        (d / f"f{i}.py").write_text(body)
    (root / ".gitignore").write_text("d1/\n*.log\n")
    (root / "x.log").write_text("getaddrinfo in a log\n")
    (root / "bin.dat").write_bytes(b"\0getaddrinfo")
    (root / "big.txt").write_bytes(b"getaddrinfo\n" * (5 * 1024 * 1024 // 12))
    (root / "d0" / "twin.py").write_text("getaddrinfo twin\n")
    os.link(root / "d0" / "twin.py", root / "d2" / "twin-link.py")


@pytest.fixture
def indexed(tmp_path: Path) -> Iterator[tuple[Path, RootedFS, IndexRegistry]]:
    root = tmp_path / "tree"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("getaddrinfo secret outside\n")
    _tree(root)
    (root / "d3" / "escape").symlink_to(outside)
    (root / "d3" / "leaf.py").symlink_to(outside / "secret.py")
    registry = IndexRegistry([root.resolve()], cache=tmp_path / "cache")
    with Boundary([root]) as boundary:
        fs = RootedFS(boundary)
        registry.find(str(root.resolve()) + "/")
        _ready(registry, root)
        yield root, fs, registry
    registry.close()


def _ready(registry: IndexRegistry, root: Path) -> None:
    for _ in range(600):
        index, _, status = registry.find(str(root.resolve()) + "/")
        if index is not None:
            return
        assert status.startswith("building") or status == "index new", status
        time.sleep(0.05)
    raise AssertionError("the index was not built in 30 s")


WIDE = GrepLimits(max_matches=100_000, max_per_file=100_000)


def _summary(report: GrepReport) -> tuple[object, ...]:
    return (
        [(path, [(h.number, h.text, h.match) for h in hits]) for path, hits in report.files],
        report.matches,
        report.searched,
        report.skipped,
        report.truncated,
        report.capped_files,
        report.too_large,
        report.binary,
        report.links,
        report.unreadable,
        report.dirs_not_entered,
    )


def _both(
    fs: RootedFS,
    registry: IndexRegistry,
    start: str,
    pattern: str,
    *,
    regex: bool = False,
    ignore_case: bool = False,
    where: PathFilter | None = None,
    key: tuple[object, ...] = ((), (), True),
    limits: GrepLimits = WIDE,
    files_only: bool = False,
    max_files: int = 100_000,
) -> tuple[tuple[object, ...], tuple[object, ...], str]:
    compiled = compile_bytes(pattern, regex=regex, ignore_case=ignore_case)
    required = None if regex or ignore_case else pattern.encode()
    where = where or PathFilter()
    report, status = grep_with_index(
        registry,
        fs,
        start,
        compiled,
        where,
        key,
        (pattern, regex, ignore_case),
        limits=limits,
        files_only=files_only,
        max_files=max_files,
        check=None,
        required=required,
        deadline=None,
    )
    full = grep_tree(
        fs,
        start,
        compiled,
        where,
        limits=limits,
        files_only=files_only,
        max_files=max_files,
        required=required,
        line_local=True,
    )
    assert report is not None, status
    return _summary(report), _summary(full), status


QUERIES = [
    ("getaddrinfo", False, False),
    (r"class [A-Za-z0-9_]+Error\(", True, False),
    ("GETADDRINFO", False, True),
    ("nothing", False, False),
    ("zz-absent-zz", False, False),
    ("ge", False, False),  # shorter than a trigram: every file
]


@pytest.mark.parametrize(("pattern", "regex", "ignore_case"), QUERIES)
def test_same_as_a_full_scan(
    indexed: tuple[Path, RootedFS, IndexRegistry], pattern: str, regex: bool, ignore_case: bool
) -> None:
    root, fs, registry = indexed
    for _ in range(2):  # the first builds the walk's view, the second uses it
        got, want, status = _both(fs, registry, str(root), pattern, regex=regex, ignore_case=ignore_case)
        assert status == "index"
        assert got == want


def test_caps_subdirectories_and_filters(indexed: tuple[Path, RootedFS, IndexRegistry]) -> None:
    root, fs, registry = indexed
    got, want, _ = _both(fs, registry, str(root), "getaddrinfo", limits=GrepLimits(max_matches=5, max_per_file=2))
    assert got == want and want[4]  # truncated at the same file
    got, want, _ = _both(fs, registry, str(root), "getaddrinfo", files_only=True, max_files=3)
    assert got == want
    got, want, _ = _both(fs, registry, str(root / "d0"), "getaddrinfo")
    assert got == want
    got, want, _ = _both(fs, registry, str(root), "getaddrinfo", where=PathFilter(gitignore=False), key=((), (), False))
    assert got == want
    got, want, _ = _both(
        fs, registry, str(root), "getaddrinfo", where=PathFilter(include=["*.py"]), key=((), ("*.py",), True)
    )
    assert got == want


def test_never_outside_the_start(indexed: tuple[Path, RootedFS, IndexRegistry]) -> None:
    root, fs, registry = indexed
    got, _, _ = _both(fs, registry, str(root), "secret")
    assert got[0] == []  # the links to the outside are not followed
    with Boundary([root / "d0"]) as narrow:  # a session whose roots are a subdirectory: nothing beyond it
        report, status = grep_with_index(
            registry,
            RootedFS(narrow),
            str(root / "d0"),
            compile_bytes("getaddrinfo", regex=False),
            PathFilter(),
            ((), (), True),
            ("getaddrinfo", False, False),
            limits=WIDE,
            files_only=False,
            max_files=100,
            check=None,
            required=b"getaddrinfo",
            deadline=None,
        )
        assert report is not None and status == "index"
        assert all(path.startswith(str((root / "d0").resolve()) + "/") for path, _ in report.files)


def test_search_files_same_as_the_walk(indexed: tuple[Path, RootedFS, IndexRegistry]) -> None:
    root, fs, registry = indexed
    for pattern in ("*.py", "e1", "twin*"):
        matches = name_matcher(pattern)
        answer, status = names_with_index(registry, fs, str(root), PathFilter(), ((), (), True), matches, 10_000, None)
        assert answer is not None and status == "index"
        walked = [found.display for found in walk(fs, str(root), PathFilter(), keep=matches)]
        assert answer[0] == walked


CHANGER = r"""
import os, sys, shutil
root, outside, step = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = lambda *a: os.path.join(root, *a)
kind = step % 9
if kind == 0: open(p("d0", "e0", "f0.py"), "w").write("changed getaddrinfo %d\n" % step)
elif kind == 1: open(p("d2", "e2", "f2.py"), "a").write("getaddrinfo appended\n")  # was no candidate
elif kind == 2: open(p("d0", "e0", "f0.py"), "w").close()
elif kind == 3: open(p("d3", "new%d.py" % step), "w").write("getaddrinfo new\n")
elif kind == 4:
    for name in os.listdir(p("d3")):
        if name.startswith("new"): os.unlink(p("d3", name))
elif kind == 5:
    os.replace(p("d2", "e2", "f2.py"), p("d2", "e1", "moved%d.py" % step))
    open(p("d2", "e2", "f2.py"), "w").write("x\n")
elif kind == 6:
    new = os.path.join(outside, "in%d" % step)
    os.makedirs(os.path.join(new, "deep"))
    open(os.path.join(new, "deep", "g.py"), "w").write("getaddrinfo moved in\n")
    os.rename(os.path.join(outside, "in%d" % step), p("d0", "in%d" % step))
elif kind == 7:
    for name in os.listdir(p("d0")):
        if name.startswith("in"): os.rename(p("d0", name), os.path.join(outside, "out-" + name + "-%d" % step))
elif kind == 8:
    open(p("d0", "twin.py"), "w").write("getaddrinfo through the other link %d\n" % step)
    open(p(".gitignore"), "a").write("# edit %d\n" % step)
"""


def test_never_stale_after_another_process_changes_the_tree(
    indexed: tuple[Path, RootedFS, IndexRegistry], tmp_path: Path
) -> None:
    root, fs, registry = indexed
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    answered_by_index = 0
    for step in range(36):
        subprocess.run([sys.executable, "-c", CHANGER, str(root), str(outside), str(step)], check=True)
        for pattern, regex, ignore_case in QUERIES[:3]:
            compiled = compile_bytes(pattern, regex=regex, ignore_case=ignore_case)
            required = None if regex or ignore_case else pattern.encode()
            report, _ = grep_with_index(
                registry,
                fs,
                str(root),
                compiled,
                PathFilter(),
                ((), (), True),
                (pattern, regex, ignore_case),
                limits=WIDE,
                files_only=False,
                max_files=100_000,
                check=None,
                required=required,
                deadline=None,
            )
            full = grep_tree(fs, str(root), compiled, PathFilter(), limits=WIDE, required=required, line_local=True)
            if report is not None:
                answered_by_index += 1
                assert _summary(report) == _summary(full), (step, pattern)
    assert answered_by_index >= 36  # most answers came from the index, not a fallback scan


def test_close_releases_threads_and_fds(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    _tree(root)
    fds_before = len(os.listdir("/proc/self/fd"))
    registry = IndexRegistry([root.resolve()], cache=tmp_path / "cache", at_start=True)
    _ready(registry, root)
    registry.close()
    assert not any(t.name == "rootbound-index" for t in threading.enumerate())
    assert len(os.listdir("/proc/self/fd")) == fds_before
    assert not any((tmp_path / "cache").iterdir())
