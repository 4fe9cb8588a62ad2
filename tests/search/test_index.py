"""The search index: literals RE2 requires, answers identical to a full scan, never stale after a change made by
another process, confined to the session's start, and released on close."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootbound import Boundary, RootedFS
from rootbound.search import chunk_scan
from rootbound.search.agent_grep import GrepLimits, GrepReport, grep_tree
from rootbound.search.chunk_scan import Lease
from rootbound.search.grep_query import GrepQuery, NamesQuery
from rootbound.search.ignore_rules import PathFilter, name_matcher
from rootbound.search.ignore_walk import WalkLimits, walk
from rootbound.search.index import indexed_search, tree_index
from rootbound.search.index.indexed_search import _to_open, grep_with_index, names_with_index
from rootbound.search.index.literals import fold, required_literals
from rootbound.search.index.registry import IndexRegistry
from rootbound.search.index.tree_index import IndexLimits
from rootbound.search.index.view import View, count_view, patch_view, walk_view
from rootbound.search.safe_regex import compile_bytes
from rootbound.search.scan_helper import ScanHelper
from tests.helpers.grep_reports import summary
from tests.helpers.index_churn import CHURN_QUERIES, NO_LITERAL, build_tree, change_in_another_process
from tests.helpers.swap import exchanging_process

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


@pytest.fixture
def indexed(tmp_path: Path) -> Iterator[tuple[Path, RootedFS, IndexRegistry]]:
    root = tmp_path / "tree"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("getaddrinfo secret outside\n")
    build_tree(root)
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
    batched: bool = True,
    lease: Lease | None = None,
) -> tuple[tuple[object, ...], tuple[object, ...], str]:
    compiled = compile_bytes(pattern, regex=regex, ignore_case=ignore_case)
    required = None if regex or ignore_case else pattern.encode()
    where = where or PathFilter()
    report, status = grep_with_index(
        registry,
        fs,
        start,
        GrepQuery(
            compiled,
            where,
            source=(pattern, regex, ignore_case),
            where_key=key,
            limits=limits,
            files_only=files_only,
            max_files=max_files,
            check=None,
            required=required,
            deadline=None,
            line_local=batched,
        ),
        lease,
    )
    full = grep_tree(
        fs,
        start,
        GrepQuery(
            compiled,
            where,
            limits=limits,
            files_only=files_only,
            max_files=max_files,
            required=required,
            line_local=True,
        ),
    )
    assert report is not None, status
    return summary(report), summary(full), status


def _names(
    registry: IndexRegistry,
    fs: RootedFS,
    start: Path,
    glob: str = "*.py",
    check: Callable[[int], None] | None = None,
) -> tuple[tuple[list[str], bool, int] | None, str, list[str]]:
    """search_files of ``glob`` below ``start`` through the index (``(answer, status)``, the answer ``None`` when
    the caller must walk), and the walk's own answer made next."""
    matches = name_matcher(glob)
    answer, status = names_with_index(
        registry, fs, str(start), NamesQuery(PathFilter(), ((), (), True), matches, glob, 10_000, check)
    )
    return answer, status, [found.display for found in walk(fs, str(start), PathFilter(), keep=matches)]


def _literal(
    registry: IndexRegistry, fs: RootedFS, start: Path, max_files: int = 10_000
) -> tuple[GrepReport | None, str]:
    """A grep of the literal ``getaddrinfo`` below ``start`` through the index (``None``: the caller must scan)."""
    return grep_with_index(
        registry,
        fs,
        str(start),
        GrepQuery(
            compile_bytes("getaddrinfo", regex=False),
            PathFilter(),
            source=("getaddrinfo", False, False),
            where_key=((), (), True),
            limits=WIDE,
            files_only=False,
            max_files=max_files,
            check=None,
            required=b"getaddrinfo",
            deadline=None,
        ),
    )


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
    for batched in (True, False, True):  # the first builds the walk's view and rules out, the others use them
        got, want, status = _both(
            fs, registry, str(root), pattern, regex=regex, ignore_case=ignore_case, batched=batched
        )
        assert status == "index"
        assert got == want


@pytest.fixture(scope="module")
def helper() -> Iterator[ScanHelper]:
    started = ScanHelper()
    try:
        for _ in range(3000):
            with started.take() as lease:
                if lease is not None:
                    break
            assert started.alive
            time.sleep(0.02)
        yield started
    finally:
        started.close()


@pytest.mark.parametrize(("pattern", "regex", "ignore_case"), [*QUERIES, NO_LITERAL])
def test_same_as_a_full_scan_with_the_scan_helper(
    indexed: tuple[Path, RootedFS, IndexRegistry],
    helper: ScanHelper,
    monkeypatch: pytest.MonkeyPatch,
    pattern: str,
    regex: bool,
    ignore_case: bool,
) -> None:
    """Every query that opens files shares them with the helper (SHARE_AT 1, chunks of 3): the first (which
    rules out for the memo), the next (which uses it) and capped ones agree with a full scan."""
    monkeypatch.setattr(indexed_search, "SHARE_AT", 1)
    monkeypatch.setattr(chunk_scan, "CHUNK_FILES", 3)
    root, fs, registry = indexed
    for limits, files_only in (
        (WIDE, False),
        (WIDE, False),
        (GrepLimits(max_matches=9, max_per_file=2, context=1), False),
        (WIDE, True),
    ):
        with helper.take() as lease:
            assert lease is not None
            got, want, status = _both(
                fs,
                registry,
                str(root),
                pattern,
                regex=regex,
                ignore_case=ignore_case,
                limits=limits,
                files_only=files_only,
                max_files=7,
                lease=lease,
            )
        assert status == "index"
        assert got == want


@pytest.mark.parametrize("query", [QUERIES[0], QUERIES[1], NO_LITERAL])
def test_a_repeated_pattern_opens_only_what_can_still_match(
    indexed: tuple[Path, RootedFS, IndexRegistry], query: tuple[str, bool, bool]
) -> None:
    """The second query of a pattern opens the files that matched, the files read by every query (more than one
    link) and nothing else: the first ruled out every candidate it searched without a match."""
    root, fs, registry = indexed
    pattern, regex, ignore_case = query
    got, want, _ = _both(fs, registry, str(root), pattern, regex=regex, ignore_case=ignore_case)
    assert got == want
    index, start_rel, _ = registry.find(str(root.resolve()) + "/")
    assert index is not None
    plan = index.plan(fs, str(root), start_rel, PathFilter(), ((), (), True), WalkLimits(), None, query)
    assert plan is not None and plan.view.counted is not None
    positions, _ = _to_open(plan, plan.view.counted)
    opened = {plan.view.files[at][0] for at in positions}
    matched = {path.removeprefix(str(root.resolve()) + "/") for path, _ in _report(fs, root, query).files}
    assert opened == matched | {"d0/twin.py", "d2/twin-link.py"}


def _report(fs: RootedFS, root: Path, query: tuple[str, bool, bool]) -> GrepReport:
    pattern, regex, ignore_case = query
    compiled = compile_bytes(pattern, regex=regex, ignore_case=ignore_case)
    required = None if regex or ignore_case else pattern.encode()
    return grep_tree(fs, str(root), GrepQuery(compiled, PathFilter(), limits=WIDE, required=required, line_local=True))


def test_recorded_walks_and_memos_stay_within_their_caps(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    build_tree(root, fillers=40)
    limits = IndexLimits(max_view_entries=60, max_memos=2)
    registry = IndexRegistry([root.resolve()], limits=limits, at_start=True)
    try:
        _ready(registry, root)
        with Boundary([root]) as boundary:
            fs = RootedFS(boundary)
            for _ in range(2):
                for start in (root, root / "d0", root / "d2", root / "d3"):
                    for pattern, regex, ignore_case in CHURN_QUERIES:
                        got, want, status = _both(
                            fs, registry, str(start), pattern, regex=regex, ignore_case=ignore_case
                        )
                        assert got == want and status == "index"
        index = registry.find(str(root.resolve()) + "/")[0]
        assert index is not None
        assert sum(len(view.entries) for view in index.views.values()) <= 60
        assert 0 < len(index.views) < 4  # the whole tree's walk alone is over 60 entries: older walks were dropped
        assert list(index.memos) == CHURN_QUERIES[-2:]  # the two most recent patterns
    finally:
        registry.close()


def test_caps_subdirectories_and_filters(indexed: tuple[Path, RootedFS, IndexRegistry]) -> None:
    root, fs, registry = indexed
    got, want, _ = _both(fs, registry, str(root), "getaddrinfo", limits=GrepLimits(max_matches=5, max_per_file=2))
    assert got == want and want[4]  # truncated at the same file
    got, want, _ = _both(fs, registry, str(root), "getaddrinfo", files_only=True, max_files=3)
    assert got == want
    for limits in (WIDE, GrepLimits(max_matches=1_000, max_per_file=1, context=1), GrepLimits(context=2)):
        for _ in range(2):  # lines kept from a wide query, then taken under a per-file cap and with context
            got, want, _ = _both(fs, registry, str(root), r"getaddrinfo|Foo", regex=True, limits=limits)
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
        report, status = _literal(registry, RootedFS(narrow), root / "d0", max_files=100)
        assert report is not None and status == "index"
        assert all(path.startswith(str((root / "d0").resolve()) + "/") for path, _ in report.files)


def test_search_files_same_as_the_walk(indexed: tuple[Path, RootedFS, IndexRegistry]) -> None:
    root, fs, registry = indexed
    for pattern in ("*.py", "e1", "twin*"):
        for _ in range(2):  # the second from the matches kept with the view
            answer, status, walked = _names(registry, fs, root, pattern)
            assert answer is not None and status == "index"
            assert answer[0] == walked


def test_never_stale_after_another_process_changes_the_tree(
    indexed: tuple[Path, RootedFS, IndexRegistry], tmp_path: Path, helper: ScanHelper, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every third step's queries share their files with the scan helper (SHARE_AT 1)."""
    monkeypatch.setattr(indexed_search, "SHARE_AT", 1)
    root, fs, registry = indexed
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    answered_by_index = 0
    for step in range(44):
        change_in_another_process(root, outside, step)
        for pattern, regex, ignore_case in CHURN_QUERIES:
            compiled = compile_bytes(pattern, regex=regex, ignore_case=ignore_case)
            required = None if regex or ignore_case else pattern.encode()
            with helper.take() as lease:
                report, _ = grep_with_index(
                    registry,
                    fs,
                    str(root),
                    GrepQuery(
                        compiled,
                        PathFilter(),
                        source=(pattern, regex, ignore_case),
                        where_key=((), (), True),
                        limits=WIDE,
                        files_only=False,
                        max_files=100_000,
                        check=None,
                        required=required,
                        deadline=None,
                        line_local=step % 2 == 0,
                    ),
                    lease if step % 3 == 0 else None,
                )
            full = grep_tree(
                fs, str(root), GrepQuery(compiled, PathFilter(), limits=WIDE, required=required, line_local=True)
            )
            if report is not None:
                answered_by_index += 1
                assert summary(report) == summary(full), (step, pattern)
        for start in (root, root / "d2"):  # names, from the top and from below it (a recorded walk each)
            answer, _, walked = _names(registry, fs, start)
            if answer is not None:
                answered_by_index += 1
                assert answer[0] == walked, (step, str(start))
    assert answered_by_index >= 88  # most answers came from the index, not a fallback scan


def test_a_change_costs_a_listing_of_its_directory(indexed: tuple[Path, RootedFS, IndexRegistry]) -> None:
    """The recorded walk is patched where the kernel reported the change, not walked again whole: an entry created,
    removed or moved lists its directory alone (a new subdirectory is walked), a subdirectory's mode walks its
    parent, an ignore file edited at the top walks it all. Measured by the entries the query's walk lists (its
    progress); every answer is the walk's."""
    root, fs, registry = indexed

    def listed_by_a_query() -> int:
        progress: list[int] = []
        answer, status, walked = _names(registry, fs, root, check=progress.append)
        assert answer is not None and status == "index" and answer[0] == walked
        return sum(progress)

    whole = listed_by_a_query()
    assert listed_by_a_query() == 0  # unchanged: the recorded walk answers
    (root / "d3" / "e1" / "made.py").write_text("new\n")
    (root / "d0" / "e2" / "f8.py").unlink()
    assert listed_by_a_query() == len(os.listdir(root / "d3" / "e1")) + len(os.listdir(root / "d0" / "e2"))
    (root / "made-at-the-top.py").write_text("new\n")
    (root / "d3" / "made.py").write_text("new\n")  # a file beside the subdirectories, around a change below
    (root / "d3" / "e1" / "made.py").unlink()
    assert listed_by_a_query() == len(os.listdir(root)) + len(os.listdir(root / "d3")) + len(
        os.listdir(root / "d3" / "e1")
    )
    (root / "d2" / "new").mkdir()
    (root / "d2" / "new" / "deeper.py").write_text("new\n")
    assert listed_by_a_query() == len(os.listdir(root / "d2")) + 1  # d2 listed, its new subdirectory walked
    (root / "d2" / "new" / "deeper.py").unlink()
    (root / "d2" / "new").rmdir()
    os.rename(root / "d0" / "e1", root / "d2" / "e1-moved")  # a subdirectory moved from one to another
    assert listed_by_a_query() == len(os.listdir(root / "d0")) + len(os.listdir(root / "d2")) + len(
        os.listdir(root / "d2" / "e1-moved")
    )
    os.chmod(root / "d3" / "e0", 0o700)  # a subdirectory's mode: it and its parent walked whole
    assert listed_by_a_query() == sum(len(files) + len(subdirs) for _, subdirs, files in os.walk(root / "d3"))
    with open(root / ".gitignore", "a") as ignore:
        ignore.write("# edited\n")
    assert listed_by_a_query() >= whole


@pytest.mark.parametrize("resolver", ["openat2", "walk"])
def test_no_escape_while_another_process_swaps_a_walked_directory_for_a_link_out(tmp_path: Path, resolver: str) -> None:
    """``d3/e1`` (inside) and ``d3/e1-link`` (a link to ``outside``) trade names in another process, slowly enough
    that the index keeps up: each query walks ``d3`` again into its recorded walk (or scans), and no path outside
    the root, no line of the outside file, is ever in an answer."""
    root, outside = tmp_path / "tree", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    build_tree(root)
    for n in range(20):
        (outside / f"out{n}.py").write_text("getaddrinfo OUTSIDE-SECRET\n")
    os.symlink(outside, root / "d3" / "e1-link")
    registry = IndexRegistry([root.resolve()], cache=tmp_path / "cache")
    top = str(root.resolve()) + "/"
    patched = 0
    try:
        with Boundary([root], resolver=resolver) as boundary:  # type: ignore[arg-type]
            fs = RootedFS(boundary)
            registry.find(top)
            _ready(registry, root)
            with exchanging_process(str(root / "d3" / "e1"), str(root / "d3" / "e1-link"), pause=0.002):
                for _ in range(60):
                    names, status, _ = _names(registry, fs, root)
                    patched += status == "index"
                    assert names is None or all(path.startswith(top) and "out" not in path for path in names[0])
                    report, _ = _literal(registry, fs, root)
                    for display, hits in report.files if report is not None else []:
                        assert display.startswith(top)
                        assert all("OUTSIDE" not in hit.text for hit in hits), display
    finally:
        registry.close()
    assert patched > 0  # some answers came from the recorded walk, patched while the trades ran


def test_close_releases_threads_and_fds(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    build_tree(root)
    fds_before = len(os.listdir("/proc/self/fd"))
    registry = IndexRegistry([root.resolve()], cache=tmp_path / "cache", at_start=True)
    _ready(registry, root)
    registry.close()
    assert not any(t.name == "rootbound-index" for t in threading.enumerate())
    assert len(os.listdir("/proc/self/fd")) == fds_before
    assert not any((tmp_path / "cache").iterdir())


@settings(max_examples=200, deadline=None)
@given(shapes=st.lists(st.tuples(st.sampled_from(["t", "b", "L", "u", "h", "?", "link"]), st.booleans()), max_size=30))
def test_a_view_s_counts_are_its_files_by_kind(shapes: list[tuple[str, bool]]) -> None:
    """What a query reads of the counts: ``before[kind][i]`` files of the kind at positions below ``i``, ``must``
    the files every query opens (more than one link, or never read: ``?``), ``number``/``position`` the indexed
    text files' numbers (a text file may have none) both ways. Each checked against a count done by hand."""
    view = View("")
    kinds: dict[str, str] = {}
    numbers: dict[str, int] = {}
    for here, (kind, numbered) in enumerate(shapes):
        path = f"f{here}"
        view.files.append((path, path, here, kind == "link"))
        if kind not in ("?", "link"):
            kinds[path] = kind
        if kind == "t" and numbered:
            numbers[path] = len(numbers)
    numbers["not-in-this-view"] = len(numbers)
    counts = count_view(view, kinds, numbers, len(numbers), 7)
    shown = ["l" if kind == "link" else "h" if kind == "?" else kind for kind, _ in shapes]
    for kind in ("t", "b", "L", "u", "l"):
        assert [int(n) for n in counts.before[kind]] == [shown[:i].count(kind) for i in range(len(shown) + 1)]
    assert counts.must == [i for i, kind in enumerate(shown) if kind == "h"]
    assert counts.at == {f"f{i}": i for i in range(len(shapes))}
    for here, (kind, numbered) in enumerate(shapes):
        expected = numbers[f"f{here}"] if kind == "t" and numbered else -1
        assert counts.number[here] == expected
        if expected >= 0:
            assert counts.position[expected] == here
    assert counts.position[numbers["not-in-this-view"]] == -1 and counts.version == 7


def test_a_change_where_the_view_never_walked_keeps_what_it_derived(tmp_path: Path) -> None:
    """Changes only in directories a view did not walk into (an ignored build folder, say) change nothing it holds:
    the view comes back as it was, its counts and glob matches kept (not recomputed for the whole tree), and
    nothing is walked."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x\n")
    with Boundary([tmp_path]) as boundary:
        fs = RootedFS(boundary)
        view = walk_view(fs, str(tmp_path), "", PathFilter(), WalkLimits(), None)
        view.counted = count_view(view, {}, {}, 0, 1)
        view.globs["*.py"] = [1]
        view.stale, view.relisted = frozenset({"build"}), frozenset({"build/out", "src/ignored"})
        progress: list[int] = []
        patched = patch_view(view, fs, str(tmp_path), PathFilter(), WalkLimits(), progress.append)
    assert patched is not None and patched is not view and not patched.stale and not patched.relisted
    assert patched.counted is view.counted and patched.globs == {"*.py": [1]} and patched.entries == view.entries
    assert progress == []


def test_many_changes_while_a_view_is_patched_are_not_lost(
    indexed: tuple[Path, RootedFS, IndexRegistry], monkeypatch: pytest.MonkeyPatch
) -> None:
    """More changes while a query patches a view than the index keeps the places of (64) count as a change there:
    the query scans and the view is not kept, so a change near its start hidden behind them is seen next time."""
    root, fs, registry = indexed
    start = root / "d0"
    assert _names(registry, fs, start)[0] is not None  # the view of d0 recorded
    (start / "e0" / "first.py").write_text("")  # the next query patches d0/e0
    real = patch_view  # the one tree_index calls

    def busy(*args: Any, **kwargs: Any) -> Any:
        for n in range(70):  # elsewhere, each one place
            (root / "d3" / f"busy{n}.py").write_text("")
        (start / "late.py").write_text("")
        return real(*args, **kwargs)

    monkeypatch.setattr(tree_index, "patch_view", busy)
    answer, status, _ = _names(registry, fs, start)
    assert answer is None, status
    monkeypatch.setattr(tree_index, "patch_view", real)
    answer, _, walked = _names(registry, fs, start)
    assert answer is not None and answer[0] == walked and str(start / "late.py") in walked
