"""The agent grep searches a tree's files joined in batches (issue 29): the answer must be exactly the answer of
searching each file alone, whatever the batch size, the pattern, the caps and the file shapes.

One engine call finds the next file with a match in a whole batch of files joined by newlines (a match never spans
a newline); that file alone then goes through the scanner. What could differ is pinned here against
``line_local=False`` (one file per search, the scanner's own per-file path) and against a plain Python oracle:
matches at file starts and ends (``^``, ``$``, ``\\b``), files without a final newline, CRLF, empty files, binary
files, files over the size cap, per-file and total caps that fall in the middle of a batch, files-only, context
lines. Patterns whose matches depend on more than their line (``\\A``, ``\\z``, flag groups) are never joined.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from rootbound import Boundary, RootedFS
from rootbound.search.agent_grep import GrepLimits, GrepReport, grep_tree
from rootbound.search.grep_query import GrepQuery
from rootbound.search.ignore_rules import PathFilter
from rootbound.search.safe_regex import compile_bytes, literal_finder
from rootbound.search.safe_regex import line_local as is_line_local
from rootbound.workspace import Limits, run_tool

WORDS = ("alpha", "needle", "Needle", "NEEDLE", "needles", "beta", "xneedle", "gamma", "", "  ", "foo")


def _tree(base: Path, seed: int = 7) -> Path:
    rng = random.Random(seed)
    root = base.resolve() / "tree"
    for index in range(160):
        directory = root / f"d{index % 7}" / f"s{index % 3}"
        directory.mkdir(parents=True, exist_ok=True)
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4))) for _ in range(rng.randint(0, 30))]
        newline = "\r\n" if index % 11 == 0 else "\n"
        text = newline.join(lines) + ("" if index % 5 == 0 else newline)  # some files end without a newline
        (directory / f"f{index:03}.txt").write_text(text)
    (root / "d0" / "needle.bin").write_bytes(b"needle\n\x00needle\n")  # binary: skipped
    (root / "d1" / "late.bin").write_bytes(b"needle\n" * 2000 + b"\x00")  # NUL after the sniffed 8 KiB: text
    (root / "d2" / "big.txt").write_bytes(b"needle\n" * 1000)  # over the small size cap below: skipped
    (root / "d3" / "empty.txt").write_bytes(b"")
    (root / "d3" / "first.txt").write_bytes(b"needle at the start")
    (root / "d3" / "link.txt").symlink_to("first.txt")  # counted as skipped, not followed
    return root


def _grep(
    fs: RootedFS,
    root: Path,
    pattern: str,
    *,
    regex: bool = False,
    ignore_case: bool = False,
    limits: GrepLimits = GrepLimits(max_file_size=6_000),  # noqa: B008 - frozen
    files_only: bool = False,
    max_files: int = 10_000,
    line_local: bool = True,
    batch_bytes: int = 1 << 20,
    check: Callable[[int], None] | None = None,
) -> GrepReport:
    compiled = compile_bytes(pattern, regex=regex, ignore_case=ignore_case)
    return grep_tree(
        fs,
        root,
        GrepQuery(
            compiled,
            PathFilter(gitignore=False),
            limits=limits,
            files_only=files_only,
            max_files=max_files,
            check=check,
            required=None if regex or ignore_case else pattern.encode(),
            line_local=line_local,
        ),
        batch_bytes=batch_bytes,
    )


CASES = [
    ("needle", {}),
    ("needle", {"ignore_case": True}),
    (r"^needle", {"regex": True}),
    (r"needle$", {"regex": True}),
    (r"\bneedle\b", {"regex": True}),
    (r"ne+dle|foo", {"regex": True}),
    (r"^$", {"regex": True}),
    (r"x*", {"regex": True}),  # matches the empty string: every file, every line
]
LIMITS = [
    GrepLimits(max_file_size=6_000),
    GrepLimits(max_file_size=6_000, max_matches=7),  # the total cap falls inside a batch
    GrepLimits(max_file_size=6_000, max_per_file=2, context=1),
    GrepLimits(max_file_size=6_000, max_matches=1_000, max_per_file=1_000, context=3),
]


@pytest.mark.parametrize(("pattern", "flags"), CASES)
@pytest.mark.parametrize("limits", LIMITS)
@pytest.mark.parametrize("files_only", [False, True])
def test_batches_answer_exactly_what_one_file_at_a_time_answers(
    tmp_path: Path, pattern: str, flags: dict[str, bool], limits: GrepLimits, files_only: bool
) -> None:
    root = _tree(tmp_path)
    fs = RootedFS(Boundary([root]))
    alone = _grep(
        fs,
        root,
        pattern,
        limits=limits,
        files_only=files_only,
        max_files=5,
        line_local=False,
        regex=flags.get("regex", False),
        ignore_case=flags.get("ignore_case", False),
    )
    assert alone.files
    for batch_bytes in (1, 97, 4096, 1 << 20):
        joined = _grep(
            fs,
            root,
            pattern,
            limits=limits,
            files_only=files_only,
            max_files=5,
            line_local=True,
            batch_bytes=batch_bytes,
            regex=flags.get("regex", False),
            ignore_case=flags.get("ignore_case", False),
        )
        assert joined == alone, (pattern, batch_bytes)


def test_a_literal_finds_every_line_a_plain_python_search_finds(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    fs = RootedFS(Boundary([root]))
    limits = GrepLimits(max_file_size=6_000, max_matches=100_000, max_per_file=100_000)
    report = _grep(fs, root, "needle", limits=limits, line_local=True)
    found = {(path, hit.number) for path, hits in report.files for hit in hits}
    expected = set()
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 6_000:
            continue
        data = path.read_bytes()
        if b"\x00" in data[:8192]:
            continue
        expected |= {(str(path), n) for n, line in enumerate(data.split(b"\n"), 1) if b"needle" in line}
    assert found == expected and len(found) > 100
    assert [path for path, _ in report.files] == sorted(path for path, _ in report.files)  # path order


@pytest.mark.parametrize("pattern", [r"\Aneedle", r"needle\z", r"(?-m)^needle", r"(?s)needle"])
def test_patterns_that_see_past_their_line_are_searched_file_by_file(tmp_path: Path, pattern: str) -> None:
    assert not is_line_local(pattern, regex=True)
    root = tmp_path.resolve() / "ws"
    root.mkdir()
    for index in range(40):
        (root / f"f{index:02}.txt").write_text("needle\n" if index % 2 else "x\nneedle")
    fs = RootedFS(Boundary([root]))
    answer = run_tool("grep", fs, {"pattern": pattern, "regex": True, "files_only": True}, Limits())
    if pattern == r"\Aneedle" or pattern == r"(?-m)^needle":
        assert len(answer.splitlines()) == 20  # every file that starts with the needle, not only the first
    elif pattern == r"needle\z":
        assert len(answer.splitlines()) == 20  # every file that ends with it
    else:
        assert len(answer.splitlines()) == 40


def test_plain_patterns_are_line_local() -> None:
    assert is_line_local("needle", regex=False)
    assert is_line_local(r"\Aneedle", regex=False)  # a literal: the backslash is text
    assert is_line_local(r"^class \w+Error\b$", regex=True)


class _Stop(Exception):
    """What a deadline or a cancellation raises from ``check`` (not an ``OSError``)."""


def test_a_check_between_windows_stops_a_batch(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    fs = RootedFS(Boundary([root]))
    calls: list[int] = []

    def check(steps: int) -> None:
        calls.append(steps)
        if steps == 0 and calls.count(0) >= 2:
            raise _Stop()

    with pytest.raises(_Stop):
        _grep(fs, root, r"zzz_absent", regex=True, line_local=True, check=check)
    assert calls.count(0) == 2  # stopped at the second window, not after the batch or the tree


def test_the_literal_finder_matches_bytes_byte_for_byte() -> None:
    finder = literal_finder("é".encode())
    assert finder is not None
    found = finder.search(b"caf\xc3\xa9!", 0)
    assert found is not None and found.start() == 3
    raw = literal_finder(b"\xff\xfe")  # not UTF-8: still a byte literal
    assert raw is not None
    found = raw.search(b"ab\xff\xfe", 0)
    assert found is not None and found.start() == 2
    assert literal_finder(b"a\nb") is None and literal_finder(b"") is None and literal_finder(b"a\x00") is None
