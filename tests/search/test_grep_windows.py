"""The grep scanner's search windows (issue 16 #1 and #3: timed-out or cancelled grep work really stops).

``LineScanner`` searches a pattern a window of whole lines at a time and calls ``check(0)`` between windows, so
a deadline stops a slow pattern within one window instead of after a whole file. Here windows are made tiny (the
module's window constants, patched) so that every case crosses many of them, and the results are compared with
one search over the whole text (the scanner before windows): the same lines, ``^``/``$``/``\\b`` anchors, context
lines and caps, for RE2 (pace-sized windows, doubling prefixes of long lines) and Python's ``re`` (fixed windows).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootbound import Boundary, PatternTooSlow, RootedFS
from rootbound.confine.boundary import Resolver
from rootbound.search import grep_scan
from rootbound.search.grep_scan import LineScanner, Span
from rootbound.search.safe_regex import compile_bytes

PATTERNS = [r"ab", r"^ab", r"b$", r"^$", r"a+b", r"\bab\b", r"^a*$", r"x", r"(a|b)+x", r"b\s+a", r"[^x]{3}"]
CAN_MATCH_A_NEWLINE = {r"b\s+a", r"[^x]{3}"}  # in Python's re, which cannot be kept to one line: not windowed alike


def _whole(pattern: Any, data: bytes, max_hits: int, context: int) -> tuple[list[Span], bool]:
    """The scanner as it was before windows: one search from each position over the rest of the text."""
    scanner = LineScanner(search=pattern, required=None, max_file_size=len(data))
    return scanner.lines(data, max_hits, context)


@pytest.fixture
def tiny_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep_scan, "WINDOW_MIN", 4)
    monkeypatch.setattr(grep_scan, "WINDOW_FIRST", 4)
    monkeypatch.setattr(grep_scan, "WINDOW_MAX", 8)
    monkeypatch.setattr(grep_scan, "WINDOW_CEILING", 8)


lines_st = st.lists(st.sampled_from(["", "ab", "a", "b", "x", "ab ab", "aab", "b a", "abx", "a" * 20, "ba" * 9]))


@settings(max_examples=150, deadline=None)
@given(
    lines=lines_st,
    trailing=st.booleans(),
    pattern=st.sampled_from(PATTERNS),
    max_hits=st.integers(0, 6),
    context=st.integers(0, 2),
)
def test_windows_find_what_one_search_finds(
    lines: list[str], trailing: bool, pattern: str, max_hits: int, context: int
) -> None:
    data = ("\n".join(lines) + ("\n" if trailing else "")).encode()
    engines: list[Any] = [compile_bytes(pattern, regex=True)]
    if pattern not in CAN_MATCH_A_NEWLINE:
        engines.append(re.compile(pattern.encode(), re.MULTILINE))
    for engine in engines:
        expected = _whole(engine, data, max_hits, context)  # windows as big as the text: one search
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(grep_scan, "WINDOW_MIN", 4)
            patch.setattr(grep_scan, "WINDOW_FIRST", 4)
            patch.setattr(grep_scan, "WINDOW_MAX", 8)
            patch.setattr(grep_scan, "WINDOW_CEILING", 8)
            calls: list[int] = []
            scanner = LineScanner(search=engine, required=None, max_file_size=len(data), check=calls.append)
            assert scanner.lines(data, max_hits, context) == expected, engine
        assert all(step == 0 for step in calls)  # window checks count no walked entries (progress stays honest)


def test_matches_on_both_sides_of_every_window_boundary(tiny_windows: None) -> None:
    data = b"ab\nab\nab\nxx\nab\n"  # 3-byte lines: with 8-byte windows a boundary falls after every second line
    for engine in (compile_bytes("^ab$", regex=True), re.compile(rb"^ab$", re.MULTILINE)):
        calls: list[int] = []
        scanner = LineScanner(search=engine, required=None, max_file_size=len(data), check=calls.append)
        spans, more = scanner.lines(data, 10)
        assert [span[0] for span in spans] == [1, 2, 3, 5] and not more
        assert calls  # the check ran between windows
        spans, more = scanner.lines(data, 2, context=1)
        assert [(n, matched) for n, _, _, matched, _ in spans] == [(1, True), (2, True), (3, False)] and more


def test_long_lines_are_searched_whole_by_doubling_prefixes(tiny_windows: None) -> None:
    """A line longer than any window cannot be cut; a match anywhere in it, anchors included, is still found."""
    long = b"a" * 300
    data = b"x\n" + long + b"b\n" + long + b"\n" + b"b" + long + b"\nlast"
    cases = {r"ab$": [2], r"^ba": [4], r"a{300}": [2, 3, 4], r"^a+$": [3], r"\bla": [5], r"^x$": [1], r"q": []}
    for pattern, expected in cases.items():
        for engine in (compile_bytes(pattern, regex=True), re.compile(pattern.encode(), re.MULTILINE)):
            calls: list[int] = []
            scanner = LineScanner(search=engine, required=None, max_file_size=len(data), check=calls.append)
            spans, _ = scanner.lines(data, 10)
            assert [span[0] for span in spans] == expected, (pattern, engine)
            assert spans == _whole(engine, data, 10, 0)[0]


def test_a_raising_check_stops_the_scan_between_windows(tiny_windows: None) -> None:
    data = b"a\n" * 1000
    seen: list[int] = []

    class Stop(Exception):
        pass

    def check(steps: int) -> None:
        seen.append(steps)
        if len(seen) == 3:
            raise Stop

    scanner = LineScanner(search=compile_bytes("x", regex=True), required=None, max_file_size=len(data), check=check)
    with pytest.raises(Stop):
        scanner.lines(data, 10)
    assert len(seen) == 3  # stopped before the third window, not after the whole text


class _Paced:
    """An engine searching at a fixed pace (bytes per CPU second of its thread) that never matches: the refusal
    logic's input."""

    def __init__(self, pace: float) -> None:
        self.pace = pace
        self.searched = 0

    def search(self, text: bytes, pos: int = 0, endpos: int | None = None) -> None:
        end = len(text) if endpos is None else endpos
        self.searched += end - pos
        done = time.thread_time() + (end - pos) / self.pace  # CPU, as an engine spends it (the scanner's pace is CPU)
        while time.thread_time() < done:
            pass
        return None


def test_a_long_line_the_pattern_cannot_finish_in_time_is_refused() -> None:
    """100 KB/s on a 1 MB line: the prefixes double until the next one is projected past the deadline."""
    data = b"a" * 1_000_000
    engine = _Paced(100_000)
    deadline = time.monotonic() + 0.3
    scanner = LineScanner(
        search=engine, required=None, max_file_size=len(data), check=lambda n: None, deadline=deadline
    )
    with pytest.raises(PatternTooSlow) as caught:
        scanner.lines(data, 10)
    assert time.monotonic() < deadline + 0.2  # refused before running far past the deadline
    assert engine.searched < 100_000  # a small part of the line, not all of it
    assert "per-call deadline" in str(caught.value) and "a" * 8 not in str(caught.value)
    assert caught.value.reason == "too slow"


def test_a_long_line_over_the_step_limit_is_refused_even_with_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep_scan, "LONG_STEP_MAX", 0.1)
    data = b"a" * 1_000_000
    engine = _Paced(200_000)
    scanner = LineScanner(
        search=engine, required=None, max_file_size=len(data), check=lambda n: None, deadline=time.monotonic() + 60
    )
    with pytest.raises(PatternTooSlow) as caught:
        scanner.lines(data, 10)
    assert engine.searched < 100_000
    assert "over a second" in str(caught.value)


def test_without_a_check_a_long_line_is_searched_to_its_end() -> None:
    """A library caller without a check gets the full answer (nothing to stop it with, nothing refused)."""
    data = b"a" * 50_000
    engine = _Paced(2_000_000)
    scanner = LineScanner(search=engine, required=None, max_file_size=len(data))
    assert scanner.lines(data, 10) == ([], False)
    assert engine.searched >= len(data)


def test_windows_follow_the_engine_pace() -> None:
    """A fast engine's windows grow to the pattern's cap; a slow one's shrink to about WINDOW_TIME of work each."""
    text = b"abc\n" * 1_000_000
    fast = LineScanner(search=compile_bytes("zz", regex=True), required=None, max_file_size=len(text))
    fast.lines(text, 10)
    assert fast._window == grep_scan.largest_window(compile_bytes("zz", regex=True)) == grep_scan.WINDOW_CEILING
    slow_engine = _Paced(20_000)
    slow = LineScanner(search=slow_engine, required=None, max_file_size=len(text), check=lambda n: None)
    calls = 0

    class Enough(Exception):
        pass

    def check(steps: int) -> None:
        nonlocal calls
        calls += 1
        if calls > 8:
            raise Enough

    slow.check = check
    with pytest.raises(Enough):
        slow.lines(text, 10)
    assert slow._window <= 20_000 * grep_scan.WINDOW_TIME * 1.5


def test_re2_never_matches_a_newline() -> None:
    """What makes RE2's results independent of window placement: a match stays within one line."""
    for pattern, regex in ((r"a\nb", True), (r"a\sb", True), ("[^x]+z", True), ("a\nb", False)):
        assert compile_bytes(pattern, regex=regex).search(b"a\nb\nzz") is None or pattern == "[^x]+z"
    found = compile_bytes("[^x]+z", regex=True).search(b"ab\ncdz")
    assert found is not None and found.start() == 3


@pytest.mark.parametrize("resolver", ["openat2", "walk"])
def test_rootedfs_grep_passes_its_check_to_the_walk_and_the_windows(
    tmp_path: Path, resolver: Resolver, tiny_windows: None
) -> None:
    for i in range(70):
        (tmp_path / f"f{i:02}.txt").write_text("ab\n" * 10)
    seen: list[int] = []
    with Boundary([tmp_path], resolver=resolver) as boundary:
        result = RootedFS(boundary).grep("^ab$", regex=True, max_matches=10_000, check=seen.append)
        assert len(result.matches) == 700 and result.files_searched == 70
        assert 64 in seen and 0 in seen  # a progress step per 64 entries; window checks count nothing
        assert sum(seen) == 70

        class Stop(Exception):
            pass

        def stop(steps: int) -> None:
            raise Stop

        with pytest.raises(Stop):
            RootedFS(boundary).grep("^ab$", "f00.txt", regex=True, check=stop)  # a single file: its windows


def test_a_pattern_s_largest_window_shrinks_with_its_program() -> None:
    """The windows of a large program stay at WINDOW_MAX (its NFA pace can fall to ~70 KB/s); a small one's grow
    to WINDOW_CEILING; in between, WINDOW_BUDGET over the program size; Python's re keeps WINDOW_MAX."""
    huge = compile_bytes("((a{1,10}){1,10}){1,10}x", regex=True)
    small = compile_bytes("zz", regex=True)
    middle = compile_bytes("(" + "|".join(f"w{n:03d}x[0-9]+" for n in range(40)) + ")", regex=True)
    assert grep_scan.largest_window(huge) == grep_scan.WINDOW_MAX
    assert grep_scan.largest_window(small) == grep_scan.WINDOW_CEILING
    assert grep_scan.WINDOW_MAX < grep_scan.largest_window(middle) < grep_scan.WINDOW_CEILING
    assert grep_scan.largest_window(middle) == grep_scan.WINDOW_BUDGET // getattr(middle, "programsize", 0)
    assert grep_scan.largest_window(re.compile(b"zz")) == grep_scan.WINDOW_MAX
