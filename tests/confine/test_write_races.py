"""Writing operations under races (threats.md 1.15): a directory swapped with a symlink to the outside, a target
replaced by a link, a FIFO, or a hard link to an outside file, while edits, writes, moves, creates and deletes
run. After every run the outside tree must be byte for byte what it was, no temp file may be left anywhere, and
every file inside must hold one complete content (never a partial write). Both resolvers.

The 10,000-call version of the swap race is ``bench/write_races.py``; this suite runs ~1,000 calls per resolver.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rootbound import Boundary, RootedFS, RootsError
from rootbound.text.edit import Edit
from tests.confine.test_toctou import Arena, race
from tests.confine.test_writes import snapshot
from tests.helpers.swap import exchanging_process

RESOLVERS = ["openat2", "walk"]
A = b"variant-A " + b"a" * 4096 + b"\n"
B = b"variant-B " + b"b" * 4096 + b"\n"
EDITED = (A.replace(b"variant-A", b"variant-B"), B.replace(b"variant-B", b"variant-A"))  # what edits produce
COMPLETE = frozenset((A, B, *EDITED, b"created\n", b"moved\n"))
CALLS = 1_000


@pytest.fixture
def arena(tmp_path: Path) -> Arena:
    base = Path(os.path.realpath(tmp_path))
    root, outside = base / "root", base / "outside"
    for top in (root / "d", outside):
        (top / "sub").mkdir(parents=True)
        (top / "f").write_bytes(A)
        (top / "m").write_bytes(b"moved\n")
        (top / "sub" / "f").write_bytes(A)
    (outside / "f").write_bytes(b"OUTSIDE-SECRET\n")
    os.symlink(outside, root / "d_link")
    return Arena(root, outside)


@pytest.fixture(params=RESOLVERS)
def fs(request: pytest.FixtureRequest, arena: Arena) -> Iterator[RootedFS]:
    with Boundary([arena.root]) as boundary:
        yield RootedFS(boundary, resolver=request.param)


def operations(fs: RootedFS) -> Callable[[], object]:
    """One call per invocation, cycling through every writing operation on paths below ``d``."""
    state = {"i": 0}

    def next_call() -> object:
        i = state["i"] = state["i"] + 1
        kind = i % 7
        if kind == 0:
            return fs.write_bytes("d/f", A if i % 2 else B)
        if kind == 1:
            old, new = ("variant-A", "variant-B") if i % 2 else ("variant-B", "variant-A")
            return fs.edit_file("d/f", [Edit(old, new)])
        if kind == 2:
            return fs.move("d/m", "d/sub/m") if i % 2 else fs.move("d/sub/m", "d/m")
        if kind == 3:
            return fs.write_bytes(f"d/new{i % 5}", b"created\n", exclusive=True)
        if kind == 4:
            return fs.delete_file(f"d/new{(i - 1) % 5}")
        if kind == 5:
            return fs.create_directory(f"d/dir{i % 3}/x")
        return fs.write_bytes("d/sub/f", A if i % 2 else B, create_parents=True)

    return next_call


def check_after(arena: Arena, before: dict[str, object]) -> None:
    assert snapshot(arena.outside) == before, "something outside changed"
    leftovers = [p for top in (arena.root, arena.outside) for p in top.rglob(".rootbound-*")]
    assert leftovers == [], "a temp file was left behind"
    for path in (arena.root / "d").rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert path.read_bytes() in COMPLETE, f"partial or foreign content in {path}"


def test_swap_dir_for_outside_link_during_writes(fs: RootedFS, arena: Arena) -> None:
    before = snapshot(arena.outside)
    ok, denied, _ = race(arena, CALLS, operations(fs))
    check_after(arena, before)
    assert ok > 0 and denied > 0, (ok, denied)  # both states were really observed


def test_swap_by_another_process_during_writes(fs: RootedFS, arena: Arena) -> None:
    """The swapper in its own process runs truly in parallel with the writes (no GIL between them)."""
    before = snapshot(arena.outside)
    ok = denied = 0
    with exchanging_process(arena.d, arena.link):
        call = operations(fs)
        for _ in range(CALLS // 2):
            try:
                call()
                ok += 1
            except RootsError:
                denied += 1
    check_after(arena, before)
    assert ok > 0 and denied > 0, (ok, denied)


def _planter(target: Path, outside_file: Path, stop: threading.Event) -> None:
    """Cycle ``target`` through: a regular file, a link to the outside, a FIFO, a hard link to an outside file."""
    makers: list[Callable[[], object]] = [
        lambda: target.write_bytes(A),
        lambda: os.symlink(outside_file, target),
        lambda: os.mkfifo(target),
        lambda: os.link(outside_file, target),
    ]
    i = 0
    while not stop.is_set():
        with contextlib.suppress(OSError):
            os.unlink(target)
        with contextlib.suppress(OSError):
            makers[i % len(makers)]()
        i += 1


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_target_replaced_by_link_fifo_or_hard_link(arena: Arena, resolver: str) -> None:
    target = arena.root / "d" / "t"
    outside_file = arena.outside / "f"
    before = snapshot(arena.outside)
    stop = threading.Event()
    planter = threading.Thread(target=_planter, args=(target, outside_file, stop), daemon=True)
    outcomes = {"ok": 0, "denied": 0}
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    with Boundary([arena.root], resolver=resolver) as boundary:  # type: ignore[arg-type]
        fs = RootedFS(boundary)
        calls: list[Callable[[], object]] = [
            lambda: fs.write_bytes("d/t", B),
            lambda: fs.edit_file("d/t", [Edit("variant-A", "variant-B")]),
            lambda: fs.edit_file("d/t", [Edit("SECRET", "x")], dry_run=True),
            lambda: fs.write_bytes("d/t", b"created\n", exclusive=True),
            lambda: fs.move("d/m", "d/t", overwrite=True) and fs.write_bytes("d/m", b"moved\n"),
        ]
        planter.start()
        try:
            for i in range(CALLS):
                try:
                    calls[i % len(calls)]()
                    outcomes["ok"] += 1
                except RootsError:
                    outcomes["denied"] += 1
        finally:
            stop.set()
            planter.join()
            sys.setswitchinterval(previous)
    assert snapshot(arena.outside) == before
    assert outside_file.read_bytes() == b"OUTSIDE-SECRET\n"
    assert os.stat(outside_file).st_nlink in (1, 2)  # at most the planter's own link remains
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(target)
        if stat.S_ISREG(st.st_mode) and st.st_ino != os.stat(outside_file).st_ino:
            assert target.read_bytes() in COMPLETE | {A, B}
    assert outcomes["ok"] > 0 and outcomes["denied"] > 0, outcomes
