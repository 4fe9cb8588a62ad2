"""docs/threats.md 1.15, races: swaps during confined operations, planted links during writes, stale and closed roots.

The swap uses ``renameat2(RENAME_EXCHANGE)``: the directory ``R/d`` and a symlink ``R/d_link -> outside`` trade
names atomically, thousands of times a second, while confined operations run on ``d/...``. Any single read of the
outside file's bytes fails the test. Each race is also checked to have really happened (both outcomes seen).
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rootbound import Boundary, RootedFS, RootsError, RootsUnavailable
from tests.helpers.swap import exchange

RESOLVERS = ["openat2", "walk", "portable"]  # portable: the walk without O_PATH, procfs, mount ids
INSIDE = b"INSIDE-content"
OUTSIDE = b"OUTSIDE-SECRET-content"
READS = 10_000
MIN_SWAPS = 50


@dataclass
class Arena:
    root: Path
    outside: Path

    @property
    def d(self) -> str:
        return str(self.root / "d")

    @property
    def link(self) -> str:
        return str(self.root / "d_link")


@pytest.fixture(params=["absolute", "relative"])
def arena(request: pytest.FixtureRequest, tmp_path: Path) -> Arena:
    base = Path(os.path.realpath(tmp_path))
    root, outside = base / "root", base / "outside"
    (root / "d" / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "sub").mkdir()
    for directory in (root / "d", root / "d" / "sub"):
        (directory / "f").write_bytes(INSIDE)
    for directory in (outside, outside / "sub"):
        (directory / "f").write_bytes(OUTSIDE)
    os.symlink(outside if request.param == "absolute" else "../outside", root / "d_link")
    return Arena(root, outside)


@pytest.fixture(params=RESOLVERS)
def fs(request: pytest.FixtureRequest, arena: Arena) -> Iterator[RootedFS]:
    with Boundary([arena.root]) as boundary:
        yield RootedFS(boundary, resolver=request.param)


class Swapper(threading.Thread):
    """Swaps ``d`` and ``d_link`` until stopped."""

    def __init__(self, arena: Arena) -> None:
        super().__init__(daemon=True)
        self.arena = arena
        self.stop = threading.Event()
        self.swaps = 0

    def run(self) -> None:
        while not self.stop.is_set():
            exchange(self.arena.d, self.arena.link)
            self.swaps += 1

    def finish(self) -> None:
        self.stop.set()
        self.join()
        if os.path.islink(self.arena.d):  # leave the tree as it started
            exchange(self.arena.d, self.arena.link)


def race(arena: Arena, attempts: int, operation: Callable[[], object]) -> tuple[int, int, list[object]]:
    """Run ``operation`` ``attempts`` times under swapping; returns (succeeded, denied, results)."""
    swapper = Swapper(arena)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # interleave the two threads finely
    ok = denied = 0
    results: list[object] = []
    swapper.start()
    try:
        done = 0
        # At least ``attempts``; more (bounded) if the scheduler starved the swapper, so the race really runs.
        while done < attempts or (swapper.swaps < MIN_SWAPS and done < 5 * attempts):
            try:
                results.append(operation())
                ok += 1
            except RootsError:
                denied += 1
            done += 1
            if done % 64 == 0:
                time.sleep(0)  # let the swapper in even if the operation never blocks
    finally:
        sys.setswitchinterval(previous)
        swapper.finish()
    assert swapper.swaps >= MIN_SWAPS, "the race did not run"
    return ok, denied, results


def test_swap_dir_for_symlink_during_10000_reads(fs: RootedFS, arena: Arena) -> None:
    ok, denied, results = race(arena, READS, lambda: fs.read_bytes("d/f"))
    assert ok + denied >= READS
    assert all(data == INSIDE for data in results), "read the outside file"
    assert ok > 0 and denied > 0, (ok, denied)  # both states were really observed


def test_swap_one_level_down(fs: RootedFS, arena: Arena) -> None:
    ok, denied, results = race(arena, 3_000, lambda: fs.read_bytes("d/sub/f"))
    assert all(data == INSIDE for data in results)
    assert ok > 0 and denied > 0


def test_swap_during_resolve_stat_and_listing(fs: RootedFS, arena: Arena) -> None:
    outside_ino = os.stat(arena.outside / "f").st_ino
    _, _, paths = race(arena, 1_000, lambda: fs.boundary.resolve("d/f"))
    assert all(Path(str(p)).is_relative_to(arena.root) for p in paths)
    _, _, stats = race(arena, 1_000, lambda: fs.stat("d/f"))
    assert all(s.st_ino != outside_ino for s in stats)  # type: ignore[attr-defined]
    _, _, listings = race(arena, 1_000, lambda: fs.listdir("d/sub"))
    assert all(listing == ["f"] for listing in listings)


def test_swap_during_tree_operations(fs: RootedFS, arena: Arena) -> None:
    def everything() -> object:
        return (list(fs.walk()), fs.glob("**/*"), fs.grep("content"), fs.search("f"))

    _, _, results = race(arena, 100, everything)
    text = repr(results)
    assert OUTSIDE.decode() not in text and str(arena.outside) not in text


def test_swap_during_writes(fs: RootedFS, arena: Arena) -> None:
    _, denied, _ = race(arena, 1_000, lambda: fs.write_bytes("d/sub/f", b"written"))
    assert (arena.outside / "f").read_bytes() == OUTSIDE
    assert (arena.outside / "sub" / "f").read_bytes() == OUTSIDE
    assert sorted(os.listdir(arena.outside / "sub")) == ["f"]  # no temp files left outside either
    assert denied > 0


def test_swap_by_another_process(fs: RootedFS, arena: Arena) -> None:
    """A swapper in its own process runs truly in parallel (no GIL between the two)."""
    script = textwrap.dedent(
        """
        import ctypes, sys, time
        libc = ctypes.CDLL(None, use_errno=True)
        a, b = sys.argv[1].encode(), sys.argv[2].encode()
        end = time.monotonic() + 30
        print("ready", flush=True)
        while time.monotonic() < end:
            libc.renameat2(-100, a, -100, b, 2)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script, arena.d, arena.link], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        ok = denied = 0
        for _ in range(READS):
            try:
                assert fs.read_bytes("d/f") == INSIDE
                ok += 1
            except RootsError:
                denied += 1
    finally:
        child.kill()
        child.wait()
        if os.path.islink(arena.d):
            exchange(arena.d, arena.link)
    assert ok > 0 and denied > 0, (ok, denied)


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_planted_link_on_write(tmp_path: Path, resolver: str) -> None:
    """``R/out -> outside/x`` appears and disappears while writes to ``out`` run: nothing is created outside."""
    base = Path(os.path.realpath(tmp_path))
    root, outside = base / "root", base / "outside"
    root.mkdir()
    outside.mkdir()
    stop = threading.Event()

    def planter() -> None:
        while not stop.is_set():
            with contextlib.suppress(FileExistsError):
                os.symlink(outside / "x", root / "out")
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                os.unlink(root / "out")

    with Boundary([root], resolver=resolver) as boundary:  # type: ignore[arg-type]
        fs = RootedFS(boundary)
        thread = threading.Thread(target=planter, daemon=True)
        thread.start()
        outcomes = {"ok": 0, "denied": 0}
        try:
            for i in range(2_000):
                try:
                    fs.write_bytes("out", b"data", exclusive=bool(i % 2))
                    outcomes["ok"] += 1
                except RootsError:
                    outcomes["denied"] += 1
        finally:
            stop.set()
            thread.join()
    assert os.listdir(outside) == []
    assert outcomes["ok"] > 0


def test_stale_roots_after_narrowing(tmp_path: Path) -> None:
    """The client narrows {R, other} to {R}: the new snapshot denies at once, and the old one can be closed."""
    base = Path(os.path.realpath(tmp_path))
    (base / "r").mkdir()
    (base / "other").mkdir()
    (base / "other" / "secret").write_bytes(OUTSIDE)
    old = Boundary([base / "r", base / "other"])
    assert old.contains(base / "other" / "secret")
    new = Boundary([base / "r"])
    assert not new.contains(base / "other" / "secret")
    old.close()
    with pytest.raises(RootsUnavailable):
        RootedFS(old).read_bytes(base / "other" / "secret")
    new.close()


def _read_until_closed(fs: RootedFS, seen: list[bytes], stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            seen.append(fs.read_bytes("f"))
        except RootsUnavailable:
            return
        except RootsError:
            pass


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_close_under_load_never_resolves_beneath_a_reused_fd(tmp_path: Path, resolver: str) -> None:
    """Closing a boundary while a thread reads through it: the root fd numbers must not be recycled under the
    reader (an unrelated directory fd with the same number would otherwise become its root)."""
    base = Path(os.path.realpath(tmp_path))
    (base / "r").mkdir()
    (base / "r" / "f").write_bytes(INSIDE)
    (base / "decoy").mkdir()
    (base / "decoy" / "f").write_bytes(OUTSIDE)
    for _ in range(20):
        boundary = Boundary([base / "r"], resolver=resolver)  # type: ignore[arg-type]
        fs = RootedFS(boundary)
        seen: list[bytes] = []
        stop = threading.Event()
        thread = threading.Thread(target=_read_until_closed, args=(fs, seen, stop))
        thread.start()
        time.sleep(0.002)
        boundary.close()
        decoys = [os.open(base / "decoy", os.O_RDONLY | os.O_DIRECTORY) for _ in range(8)]  # grab freed numbers
        time.sleep(0.002)
        stop.set()
        thread.join()
        for fd in decoys:
            os.close(fd)
        assert seen and all(data == INSIDE for data in seen)


def test_exchange_helper_works(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    os.symlink("x", tmp_path / "b")
    exchange(str(tmp_path / "a"), str(tmp_path / "b"))
    assert os.path.islink(tmp_path / "a") and os.path.isdir(tmp_path / "b")
    with pytest.raises(FileNotFoundError) as caught:
        exchange(str(tmp_path / "a"), str(tmp_path / "missing"))
    assert caught.value.errno == errno.ENOENT
