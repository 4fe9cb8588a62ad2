"""docs/threats.md 1.16, the narrowing swap race, at the library level, both resolvers.

An attacker with rename rights in the parent of an operator DIR swaps DIR with a symlink to an outside directory
and back, thousands of times a second, while a client declares that outside directory (and DIR, and DIR/sub) as
its roots and reads through each new roots snapshot. The allowlist is held (``Boundary(dirs)``) and passed to
every snapshot as a held object, so client roots are opened beneath DIR's held fd: no snapshot may ever admit the
outside directory or read a byte from it. The race is checked to have really happened: both DIR states were met.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rootbound import Boundary, RootedFS, RootsError
from tests.helpers.swap import INSIDE, OUTSIDE, DirSwapper, SwapArena

RESOLVERS = ["openat2", "walk"]
SECONDS = 1.5
MIN_SWAPS = 50


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_swapping_dir_for_a_symlink_never_admits_the_outside_dir(tmp_path: Path, resolver: str) -> None:
    arena = SwapArena.create(tmp_path)
    claims = [arena.outside, arena.outside / "sub", arena.dir, arena.dir / "sub"]
    candidates = [arena.outside / "secret", arena.outside / "sub" / "secret", arena.dir / "secret", "secret", "in.txt"]
    outside_reads = snapshots = 0
    outcomes = {"admitted dir": 0, "dropped dir": 0, "read inside": 0}
    with Boundary([arena.dir], resolver=resolver) as allowlist:  # type: ignore[arg-type]
        swapper = DirSwapper(arena)
        swapper.start()
        try:
            deadline = time.monotonic() + SECONDS
            while time.monotonic() < deadline:
                with Boundary(claims, allow=allowlist, resolver=resolver) as boundary:  # type: ignore[arg-type]
                    snapshots += 1
                    paths = {root.path for root in boundary}
                    assert not any(p == arena.outside or arena.outside in p.parents for p in paths)
                    outcomes["admitted dir" if arena.dir in paths else "dropped dir"] += 1
                    fs = RootedFS(boundary)
                    for candidate in candidates:
                        try:
                            data = fs.read_bytes(candidate)
                        except RootsError:
                            continue
                        outside_reads += data == OUTSIDE
                        outcomes["read inside"] += data == INSIDE
        finally:
            swapper.stop()
    assert outside_reads == 0
    assert swapper.swaps >= MIN_SWAPS
    assert all(outcomes.values()), (outcomes, snapshots)  # both DIR states met, and reads happened


def test_the_arena_reproduces_the_escape_when_the_allowlist_is_re_resolved_by_name(tmp_path: Path) -> None:
    """The control: re-resolving the allowlist by name for each snapshot (what ``rootbound serve`` did before the
    allowlist was held) admits the outside directory in this arena. Without this, a pass above could mean the
    race never happened."""
    arena = SwapArena.create(tmp_path)
    admitted = 0
    swapper = DirSwapper(arena)
    swapper.start()
    try:
        deadline = time.monotonic() + 10
        while not admitted and time.monotonic() < deadline:
            with Boundary([arena.outside], allow=[arena.dir]) as boundary:  # the allowlist as a path, every time
                admitted += any(root.path == arena.outside for root in boundary)
    finally:
        swapper.stop()
    assert admitted
