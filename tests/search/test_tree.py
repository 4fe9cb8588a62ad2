"""The one tree walk (``tree_walk.scan``) and the one grep scanner (``grep_scan.LineScanner``).

Every tree operation (``RootedFS.walk/glob/search/grep`` and the serve tools' sorted, ignore-aware walks) runs on
``scan``; both greps run on ``LineScanner``. Here their hooks are pinned directly: name order, pre-order, the
per-directory scope (left-out directories are not entered), the check hook (progress adds up, raising stops the
walk and releases every fd), and that the literal fast path finds the same lines as the regex path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from rootbound import Boundary
from rootbound.confine.intents import LIST
from rootbound.search.grep_scan import BINARY_SNIFF, SNIFF_FIRST, LineScanner
from rootbound.search.tree_walk import WalkHooks, scan

RESOLVERS = ["openat2", "walk", "portable"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for rel in ("b/z.txt", "b/a.txt", "a/deep/x.txt", "c.txt", "skip/hidden.txt", "a/keep.log"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret")
    (root / "link").symlink_to(tmp_path / "outside")
    return root


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


HOOKS = ("descend", "scope", "check", "at_limit", "not_entered")


def _walked(root: Path, resolver: str, **options: object) -> Iterator[str]:
    with Boundary([root], resolver=resolver) as boundary, boundary.open(".", LIST) as handle:  # type: ignore[arg-type]
        hooks = WalkHooks(**{name: options.pop(name) for name in HOOKS if name in options})  # type: ignore[arg-type]
        for prefix, entry, _, _ in scan(handle, handle.detach(), hooks=hooks, **options):  # type: ignore[arg-type]
            yield prefix + entry.name


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_sorted_scan_is_pre_order_in_name_order(tree: Path, resolver: str) -> None:
    sorted_walk = list(_walked(tree, resolver, sort=True))
    assert sorted_walk == [
        "a", "a/deep", "a/deep/x.txt", "a/keep.log", "b", "b/a.txt", "b/z.txt", "c.txt", "link", "skip",
        "skip/hidden.txt",
    ]  # fmt: skip
    assert sorted(_walked(tree, resolver)) == sorted(sorted_walk)  # unsorted: the same entries; the link not entered


class _NoSkipDirNoLogs:
    """A scope: ``skip`` directories are left out, ``*.log`` files too; records every directory entered."""

    def __init__(self, entered: list[tuple[str, list[str]]]) -> None:
        self.files = True
        self.entered = entered

    def enter(self, fd: int, prefix: str, listing: list[os.DirEntry[str]]) -> _NoSkipDirNoLogs:
        assert os.fstat(fd).st_ino == os.stat(".", dir_fd=fd).st_ino  # the held fd of the listed directory
        self.entered.append((prefix, sorted(entry.name for entry in listing)))
        return self

    def skip_dir(self, rel: str, name: str) -> bool:
        return name == "skip"

    def skip_file(self, rel: str, name: str) -> bool:
        return rel.endswith(".log")


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_scope_leaves_out_and_does_not_enter(tree: Path, resolver: str) -> None:
    entered: list[tuple[str, list[str]]] = []
    seen = list(_walked(tree, resolver, sort=True, scope=_NoSkipDirNoLogs(entered)))
    assert "skip" not in seen and "skip/hidden.txt" not in seen and "a/keep.log" not in seen
    assert "a/deep/x.txt" in seen
    assert [prefix for prefix, _ in entered] == ["", "a/", "a/deep/", "b/"]  # never skip/ nor the link
    assert entered[0][1] == ["a", "b", "c.txt", "link", "skip"]


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_descend_and_depth_limit_prune_entering_not_listing(tree: Path, resolver: str) -> None:
    seen = list(_walked(tree, resolver, sort=True, descend=lambda level, name: name != "a"))
    assert "a" in seen and not any(rel.startswith("a/") for rel in seen)
    shallow = list(_walked(tree, resolver, sort=True, max_depth=1))
    assert shallow == ["a", "b", "c.txt", "link", "skip"]


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_check_hook_counts_every_entry_and_can_stop_the_walk(tmp_path: Path, resolver: str) -> None:
    for i in range(150):
        (tmp_path / f"d{i % 3}").mkdir(exist_ok=True)
        (tmp_path / f"d{i % 3}" / f"f{i}").write_text("")
    progress: list[int] = []
    walked = list(_walked(tmp_path, resolver, check=progress.append))
    assert sum(progress) == len(walked) == 153 and progress[0] == 64

    class Stop(Exception):
        pass

    def stop(count: int) -> None:
        raise Stop()

    before = _open_fds()
    with pytest.raises(Stop):
        list(_walked(tmp_path, resolver, check=stop))
    assert _open_fds() == before  # every held directory fd released


@settings(max_examples=100, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"ab", b"a", b"b", b"\n", b"x", b"\r\n", b"aab"]), max_size=40).map(b"".join),
    needle=st.sampled_from([b"a", b"ab", b"b\n", b"x", b"ba"]),
    max_hits=st.integers(0, 5),
    context=st.integers(0, 2),
)
def test_literal_fast_path_finds_what_the_regex_path_finds(
    data: bytes, needle: bytes, max_hits: int, context: int
) -> None:
    literal = LineScanner(search=None, required=needle, max_file_size=1 << 20)
    regex = LineScanner(search=re.compile(re.escape(needle), re.MULTILINE), required=None, max_file_size=1 << 20)
    assert literal.lines(data, max_hits, context) == regex.lines(data, max_hits, context)
    spans, _ = literal.lines(data, max_hits, context)
    lines = data.split(b"\n")
    for number, start, end, matched, _ in spans:
        assert data[start:end] == lines[number - 1]  # the span is that line, numbered from 1
        assert not matched or needle in data[start : end + len(needle)]


@settings(max_examples=200, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"ab", b"a", b"b", b"\n", b"x", b"\r\n", b"aab"]), max_size=40).map(b"".join),
    pattern=st.sampled_from([b"ab", b"^a", b"b$", b"a+b", b"x|^b", b"(?:ab)+x?"]),
    max_hits=st.integers(0, 5),
    context=st.integers(0, 2),
    back=st.integers(0, 3),
)
def test_lines_from_the_first_match_find_what_lines_from_the_start_find(
    data: bytes, pattern: bytes, max_hits: int, context: int, back: int
) -> None:
    """``first`` is an offset no match lies before (on an earlier line): the batches pass where their search found
    the file's first match. Anywhere from there back to the file's start gives the same lines, numbers and
    context."""
    engine = re2.compile(pattern)
    found = engine.search(data)
    scanner = LineScanner(search=engine, required=None, max_file_size=1 << 20)
    whole = scanner.lines(data, max_hits, context)
    end = len(data) if found is None else found.start()
    for first in range(max(0, end - back), end + 1):
        assert scanner.lines(data, max_hits, context, first) == whole


def test_scanner_skips_big_and_binary_files(tmp_path: Path) -> None:
    scanner = LineScanner(search=None, required=b"x", max_file_size=8)
    cases = {"small": b"x\n", "big": b"x" * 9, "binary": b"x\x00"}
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
    with_binary = LineScanner(search=None, required=b"x", binary=True, max_file_size=8)
    got, got_binary = {}, {}
    for name in cases:
        fd = os.open(tmp_path / name, os.O_RDONLY)
        try:
            got[name] = scanner.file(fd, os.fstat(fd).st_size, 1)
            os.lseek(fd, 0, os.SEEK_SET)
            got_binary[name] = with_binary.file(fd, os.fstat(fd).st_size, 1)
        finally:
            os.close(fd)
    small = (b"x\n", [(1, 0, 1, True, False)], False)
    assert got == {"small": small, "big": None, "binary": None}
    assert got_binary == {"small": small, "big": None, "binary": (b"x\x00", [(1, 0, 2, True, False)], False)}


def _rchar() -> int:
    """Bytes this process has read so far (the kernel's count)."""
    with open("/proc/self/io", "rb") as io:
        for line in io:
            if line.startswith(b"rchar:"):
                return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def _read(scanner: LineScanner, path: Path, size: int | None = None) -> tuple[bytes | None, list[str]]:
    skipped: list[str] = []
    fd = os.open(path, os.O_RDONLY)
    try:
        return scanner.read(fd, os.fstat(fd).st_size if size is None else size, skipped.append), skipped
    finally:
        os.close(fd)


def test_a_large_binary_file_is_skipped_on_its_first_bytes(tmp_path: Path) -> None:
    """A binary over SNIFF_FIRST costs the sniff, not the whole file; a NUL after the sniff is text, as before."""
    scanner = LineScanner(search=None, required=b"x", max_file_size=4 << 20)
    binary = tmp_path / "lib.so"
    binary.write_bytes(b"\x7fELF\x00" + b"x" * (2 << 20))
    late_nul = tmp_path / "late.txt"
    late_nul.write_bytes(b"x\n" * (BINARY_SNIFF // 2) + b"\x00" + b"y\n" * (SNIFF_FIRST // 2))
    before = _rchar()
    assert _read(scanner, binary) == (None, ["binary"])
    assert _rchar() - before < 2 * BINARY_SNIFF  # the sniff (and /proc/self/io itself); reading it whole: 2 MiB
    assert _read(scanner, late_nul) == (late_nul.read_bytes(), [])
    whole = LineScanner(search=None, required=b"x", binary=True, max_file_size=4 << 20)
    assert _read(whole, binary) == (binary.read_bytes(), [])


@pytest.mark.parametrize("told", [SNIFF_FIRST + 1, 3 * SNIFF_FIRST, 10 * SNIFF_FIRST])
def test_a_large_text_file_is_read_whole_whatever_size_fstat_told(tmp_path: Path, told: int) -> None:
    """The size passed in is the fstat's; the file may have changed since: the content read is the file's now,
    and a file grown past the cap is too large (the sniff's read must not shift what follows)."""
    content = b"".join(b"%d x\n" % n for n in range(15_000))  # ~100 KB
    path = tmp_path / "text.txt"
    path.write_bytes(content)
    scanner = LineScanner(search=None, required=b"x", max_file_size=4 << 20)
    assert _read(scanner, path, told) == (content, [])
    capped = LineScanner(search=None, required=b"x", max_file_size=len(content) - 1)
    assert _read(capped, path, told) == (None, ["too_large"])
