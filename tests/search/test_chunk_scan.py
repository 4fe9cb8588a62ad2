"""A grep shared with the scan helper process (issue 36, both cores): the same report as the scan of one process,
whatever the caps, the chunk size, the helper's state (busy, dead, lying, stopped); fds and the helper given back
after every call; no escape while another process swaps a directory for a link to the outside."""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootbound import Boundary, RootedFS
from rootbound.core.errors import PatternTooSlow
from rootbound.search import chunk_scan
from rootbound.search.agent_grep import GrepLimits, GrepReport, LineHit, grep_tree
from rootbound.search.chunk_scan import Event, Item, Job, Lease, fit, grep_shared
from rootbound.search.grep_query import GrepQuery
from rootbound.search.grep_scan import LineScanner
from rootbound.search.ignore_rules import PathFilter
from rootbound.search.safe_regex import compile_bytes, line_local
from rootbound.search.scan_helper import ScanHelper
from tests.helpers.grep_reports import summary
from tests.helpers.swap import exchanging_process

RESOLVERS = ("openat2", "walk")


def _ready(helper: ScanHelper) -> ScanHelper:
    ends = time.monotonic() + 60
    while time.monotonic() < ends:
        with helper.take() as lease:
            if lease is not None:
                return helper
        assert helper.alive, "the scan helper did not start"
        time.sleep(0.02)
    raise AssertionError("the scan helper did not say it was ready")


@pytest.fixture(scope="module")
def helper() -> Iterator[ScanHelper]:
    started = ScanHelper()
    try:
        yield _ready(started)
    finally:
        started.close()


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _tree(base: Path, seed: int, files: int = 120) -> Path:
    """Nested directories of text files, some matching ``needle`` on several lines, with binary files, empty files,
    a file over the size cap, symlinks (counted, not followed) and a directory link."""
    rng = random.Random(seed)
    root = base / f"t{seed}"
    dirs = [root]
    root.mkdir()
    for n in range(files):
        if rng.random() < 0.2:
            sub = rng.choice(dirs) / f"d{n:03d}"
            sub.mkdir()
            dirs.append(sub)
        where = rng.choice(dirs)
        kind = rng.random()
        name = f"f{n:03d}.txt"
        if kind < 0.05:
            (where / name).write_bytes(b"needle\x00binary")
        elif kind < 0.08:
            os.symlink("/etc/passwd", where / name)
        elif kind < 0.1:
            (where / name).write_bytes(b"")
        elif kind < 0.11:
            (where / name).write_bytes(b"needle\n" * 40_000)  # over the test's size cap
        else:
            lines = [
                rng.choice([b"plain text", b"a needle here", b"needle needle", b"x" * rng.randint(0, 30), b""])
                for _ in range(rng.randint(0, 40))
            ]
            (where / name).write_bytes(b"\n".join(lines) + (b"\n" if rng.random() < 0.5 else b""))
    os.symlink(str(dirs[-1]), root / "dir-link")
    return root


def _both(
    fs: RootedFS, root: Path, lease: Lease, pattern: str = "needle", *, regex: bool = False, **kwargs: Any
) -> tuple[GrepReport, GrepReport]:
    compiled = compile_bytes(pattern, regex=regex)
    required = None if regex else pattern.encode()
    common: dict[str, Any] = {"required": required, "line_local": line_local(pattern, regex=regex), **kwargs}
    alone = grep_tree(fs, str(root), GrepQuery(compiled, PathFilter(gitignore=False), **common))
    query = GrepQuery(compiled, PathFilter(gitignore=False), source=(pattern, regex, False), **common)
    shared = grep_shared(fs, str(root), query, lease)
    return alone, shared


def _shared(fs: RootedFS, root: Path, lease: Lease, literal: str = "needle", **kwargs: Any) -> GrepReport:
    """A shared grep below ``root`` of the literal ``literal`` (its required literal)."""
    pattern = compile_bytes(literal, regex=False)
    query = GrepQuery(
        pattern, PathFilter(gitignore=False), source=(literal, False, False), required=literal.encode(), **kwargs
    )
    return grep_shared(fs, str(root), query, lease)


LIMIT_CASES: list[dict[str, Any]] = [
    {"limits": GrepLimits(max_matches=1_000, max_per_file=200, max_file_size=100_000)},
    {"limits": GrepLimits(max_matches=7, max_per_file=3, max_file_size=100_000)},
    {"limits": GrepLimits(max_matches=25, max_per_file=4, max_file_size=100_000, context=2)},
    {"limits": GrepLimits(max_matches=5, max_per_file=20, max_file_size=100_000, context=1)},
    {"limits": GrepLimits(max_matches=1_000, max_file_size=100_000), "files_only": True, "max_files": 6},
]


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("case", range(len(LIMIT_CASES)))
def test_shared_grep_reports_what_the_scan_reports(
    helper: ScanHelper, tmp_path: Path, resolver: str, case: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small chunks (3 files) so every cap falls inside some chunk, searched here or by the helper."""
    monkeypatch.setattr(chunk_scan, "CHUNK_FILES", 3)
    for seed in range(4):
        root = _tree(tmp_path, seed * 10 + case)
        with Boundary([root], resolver=resolver) as boundary, helper.take() as lease:  # type: ignore[arg-type]
            assert lease is not None
            fs = RootedFS(boundary)
            for pattern, regex in (("needle", False), (r"ne+dle\b", True)):
                alone, shared = _both(fs, root, lease, pattern, regex=regex, **LIMIT_CASES[case])
                assert summary(shared) == summary(alone), (seed, pattern)
                assert alone.searched > 0


class _Local:
    """A lease whose helper is always busy: every chunk is searched by the caller (the merge alone)."""

    def __init__(self) -> None:
        self.alive = True

    def free(self) -> bool:
        return False

    def send(self, ticket: int, job: Job, items: list[Item], fds: list[int]) -> bool:
        raise AssertionError("not sent")

    def answers(self, wait: float) -> list[tuple[int, list[Event]]]:
        return []

    def stop(self, tickets: set[int]) -> None:
        pass

    def fail(self) -> None:
        self.alive = False


class _Liar(_Local):
    """A helper that takes every chunk and answers each with ``answer``."""

    def __init__(self, answer: object) -> None:
        super().__init__()
        self.answer = answer
        self.sent: list[int] = []
        self.failed = False

    def free(self) -> bool:
        return self.alive

    def send(self, ticket: int, job: Job, items: list[Item], fds: list[int]) -> bool:
        self.sent.append(ticket)
        return True

    def answers(self, wait: float) -> list[tuple[int, list[Event]]]:
        sent, self.sent = self.sent, []
        return [(ticket, self.answer) for ticket in sent]  # type: ignore[misc]

    def fail(self) -> None:
        self.failed = True
        self.alive = False


@pytest.mark.parametrize(
    "answer",
    [
        "not a list",
        [("c", "searched", 1), ("c", "files", 1)],  # a reason that is no counter
        [("h", 10_000, [], False)],  # a file the chunk does not have
        [("h", 0, [(1, "x", "yes", False)], False)],  # a hit of the wrong shape
        [("c", "searched", -5)],
        [("x", "exec", "")],
    ],
)
def test_an_answer_of_the_wrong_shape_stops_the_helper_and_the_chunk_is_searched_here(
    tmp_path: Path, answer: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chunk_scan, "CHUNK_FILES", 5)
    root = _tree(tmp_path, 7)
    liar = _Liar(answer)
    with Boundary([root]) as boundary:
        fs = RootedFS(boundary)
        alone, shared = _both(fs, root, liar, limits=GrepLimits(max_file_size=100_000))
    assert liar.failed
    assert summary(shared) == summary(alone)


def test_the_merge_alone_reports_what_the_scan_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunk_scan, "CHUNK_FILES", 4)
    root = _tree(tmp_path, 3, files=200)
    with Boundary([root]) as boundary:
        fs = RootedFS(boundary)
        for case in LIMIT_CASES:
            alone, shared = _both(fs, root, _Local(), **case)
            assert summary(shared) == summary(alone)


lines_st = st.lists(st.sampled_from([b"", b"ab", b"x", b"ab ab", b"zz", b"b a"]), max_size=30)


@settings(max_examples=200, deadline=None)
@given(lines=lines_st, room=st.integers(1, 8), extra=st.integers(0, 5), context=st.integers(0, 3))
def test_cutting_a_file_s_lines_to_the_room_left_is_searching_with_that_room(
    lines: list[bytes], room: int, extra: int, context: int
) -> None:
    data = b"\n".join(lines)
    scanner = LineScanner(search=compile_bytes("ab", regex=True), required=None, max_file_size=len(data) + 1)

    def hits(max_hits: int) -> tuple[list[LineHit], bool]:
        spans, more = scanner.lines(data, max_hits, context)
        return [LineHit(n, data[s:e].decode(), m, g) for n, s, e, m, g in spans], more

    wide, more = hits(room + extra)
    assert fit(wide, more, room, context) == hits(room)


def test_a_helper_that_dies_mid_call_costs_time_not_the_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunk_scan, "CHUNK_FILES", 2)
    root = _tree(tmp_path, 11, files=300)
    doomed = _ready(ScanHelper())
    real_send = chunk_scan.Driver.dispatch
    calls = 0

    def dispatch(self: Any, chunk: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 5:
            os.kill(doomed.pid, 9)
        real_send(self, chunk)

    monkeypatch.setattr(chunk_scan.Driver, "dispatch", dispatch)
    before = _fds()
    try:
        with Boundary([root]) as boundary, doomed.take() as lease:
            assert lease is not None
            fs = RootedFS(boundary)
            alone, shared = _both(fs, root, lease, limits=GrepLimits(max_file_size=100_000, context=1))
        assert summary(shared) == summary(alone)
        assert not doomed.alive
        with doomed.take() as after:
            assert after is None  # calls scan alone from here
    finally:
        doomed.close()
    assert _fds() <= before


class _Stop(Exception):
    pass


def test_a_cancelled_call_gives_back_the_helper_and_every_fd(
    helper: ScanHelper, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled by the walk's check (the chunk being filled holds duplicated fds) or between search windows (a
    chunk searched here, others at the helper): every fd is given back at once, the helper is free."""
    monkeypatch.setattr(chunk_scan, "CHUNK_FILES", 5)
    root = _tree(tmp_path, 5, files=1_000)
    with Boundary([root]) as boundary:
        fs = RootedFS(boundary)
        for walk_only, stops in ((True, (1, 2, 3, 4)), (False, (1, 3, 5))):
            for stop_after in stops:
                seen = 0

                def check(steps: int, stop_after: int = stop_after, walk_only: bool = walk_only) -> None:
                    nonlocal seen
                    if walk_only and not steps:
                        return
                    seen += 1
                    if seen > stop_after:
                        raise _Stop

                seen = 0
                before = _fds()
                with helper.take() as lease:
                    assert lease is not None
                    with pytest.raises(_Stop):
                        # a pattern found nowhere: the whole tree is walked
                        _shared(
                            fs,
                            root,
                            lease,
                            "absent",
                            line_local=True,
                            check=check,
                            limits=GrepLimits(max_file_size=100_000),
                        )
                assert _fds() == before, (walk_only, stop_after)
                with helper.take() as again:  # free at once, and answering the next call right
                    assert again is not None
                    alone, shared = _both(fs, root, again, limits=GrepLimits(max_file_size=100_000))
                    assert summary(shared) == summary(alone)
    assert helper.alive


def test_one_call_at_a_time_takes_the_helper(helper: ScanHelper) -> None:
    with helper.take() as first:
        assert first is not None
        with helper.take() as second:
            assert second is None  # never waits: this call scans alone
    with helper.take() as third:
        assert third is not None


def test_a_deadline_passed_in_the_helper_is_the_call_s_deadline_error(helper: ScanHelper, tmp_path: Path) -> None:
    root = _tree(tmp_path, 9, files=200)

    class Late(Exception):
        pass

    def check(steps: int) -> None:
        if time.monotonic() > deadline:
            raise Late

    with Boundary([root]) as boundary, helper.take() as lease:
        assert lease is not None
        fs = RootedFS(boundary)
        deadline = time.monotonic() - 1.0  # already past: the helper answers "late" at its first file
        with pytest.raises(Late):
            _shared(fs, root, lease, check=check, deadline=deadline)
    with helper.take() as again:
        assert again is not None


def test_a_pattern_too_slow_in_the_helper_is_the_same_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """The helper's ``slow`` event becomes the PatternTooSlow a scan would raise, with its message."""
    merge = chunk_scan.Merge(GrepReport(), GrepLimits(), files_only=False, max_files=10, check=None)
    with pytest.raises(PatternTooSlow, match="simplify"):
        merge.take("/", lambda n: "x", [("c", "searched", 2), ("x", "slow", "too slow here: simplify it")])


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_no_escape_while_another_process_swaps_a_directory_for_a_link_out(
    helper: ScanHelper, tmp_path: Path, resolver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sub`` (inside) and ``sub-link`` (a link to ``outside``) trade names in another process during shared greps:
    no line of the outside file, no path outside the root, is ever in an answer."""
    monkeypatch.setattr(chunk_scan, "CHUNK_FILES", 2)
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub" / "deep").mkdir(parents=True)
    outside.mkdir()
    for n in range(30):
        (root / "sub" / f"in{n:02d}.txt").write_text("needle inside\n")
        (root / "sub" / "deep" / f"in{n:02d}.txt").write_text("needle inside\n")
        (outside / f"in{n:02d}.txt").write_text("needle OUTSIDE-SECRET\n")
    os.mkdir(outside / "deep")
    (outside / "deep" / "in00.txt").write_text("needle OUTSIDE-SECRET\n")
    os.symlink(outside, root / "sub-link")
    answers = 0
    with Boundary([root], resolver=resolver) as boundary:  # type: ignore[arg-type]
        fs = RootedFS(boundary)
        with exchanging_process(str(root / "sub"), str(root / "sub-link")):
            for _ in range(40):
                with helper.take() as lease:
                    assert lease is not None
                    report = _shared(fs, root, lease)
                for display, hits in report.files:
                    assert display.startswith(str(root.resolve()) + "/")
                    assert all("OUTSIDE" not in hit.text for hit in hits), display
                answers += len(report.files)
    assert answers > 0  # the greps found the inside files while the swaps ran


@contextlib.contextmanager
def _no_helper_threads() -> Iterator[None]:
    import threading

    before = threading.active_count()
    yield
    assert threading.active_count() == before


def test_the_helper_is_a_process_not_a_thread_and_ends_with_close(tmp_path: Path) -> None:
    before = _fds()
    with _no_helper_threads():
        started = _ready(ScanHelper())
        pid = started.pid
        started.close()
    assert not started.alive
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert _fds() <= before


class _Stalled(_Local):
    """A helper that takes one chunk at a time and answers it only when the caller waits for it."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[tuple[int, Job, list[Item], list[int]]] = []

    def free(self) -> bool:
        return not self.held

    def send(self, ticket: int, job: Job, items: list[Item], fds: list[int]) -> bool:
        self.held.append((ticket, job, items, fds))
        return True

    def answers(self, wait: float) -> list[tuple[int, list[Event]]]:
        if not wait or not self.held:
            return []
        ticket, job, items, fds = self.held.pop()
        searcher = chunk_scan.Searcher(job)
        return [(ticket, chunk_scan.search_items(searcher, items, fds, check=None, deadline=None))]


def test_a_stalled_helper_holds_the_walk_back_at_max_pending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """trio's rule: this process does not run ahead of a slow helper through the whole tree, holding every
    chunk's answer; it waits once MAX_PENDING chunks are not merged."""
    monkeypatch.setattr(chunk_scan, "CHUNK_FILES", 2)
    monkeypatch.setattr(chunk_scan, "MAX_PENDING", 4)
    root = _tree(tmp_path, 13, files=300)
    most = 0
    real_here = chunk_scan.Driver._here

    def here(self: Any, chunk: Any) -> None:
        nonlocal most
        most = max(most, len(self.pending))
        real_here(self, chunk)

    monkeypatch.setattr(chunk_scan.Driver, "_here", here)
    with Boundary([root]) as boundary:
        fs = RootedFS(boundary)
        alone, shared = _both(fs, root, _Stalled(), limits=GrepLimits(max_file_size=100_000))
    assert summary(shared) == summary(alone)
    assert 2 <= most <= 5


@pytest.mark.parametrize("job", [("not", "a", "job"), 42])
def test_a_helper_sent_what_is_not_a_job_ends_and_the_call_scans_alone(tmp_path: Path, job: Any) -> None:
    """The helper trusts its server no further than the shape of a chunk: one it cannot read ends it (fail
    closed), the lease sees it gone, and later calls get no lease."""
    doomed = _ready(ScanHelper())
    try:
        with doomed.take() as lease:
            assert lease is not None
            fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
            try:
                assert lease.send(1, job, [(0, "x", 1)], [fd])
            finally:
                os.close(fd)
            ends = time.monotonic() + 30
            while doomed.alive and time.monotonic() < ends:
                assert lease.answers(0.1) == []
        assert not doomed.alive
        with doomed.take() as after:
            assert after is None
    finally:
        doomed.close()
    with pytest.raises(ProcessLookupError):
        os.kill(doomed.pid, 0)
