"""Where the first query through a saved index spends its time (issue 51), part by part, with ``rg`` beside.

Run: ``.venv/bin/python bench/index_floor.py TREE [--rounds N]``. In this process, on ``TREE``: builds and saves its
index once (in a cache folder of this run), then times each part of what a new server's first grep does before it
opens a candidate, each the median of N runs:

* importing numpy; the saved file's SHA-256; :meth:`SavedStore.load` (the checksum and every check of
  :func:`~rootbound.search.index.saved.decode`); :func:`load_known` (that, and the records by path);
* the query's walk with the ignore rules on (``walk_view``), alone and with each file checked against its saved
  record (``Vouched``: one ``lstat`` beneath the walk's directory fd), and ``count_view``;
* the floor of a design that does not walk at all (each directory's listing taken from the saved index when its
  own times match): one ``open`` and ``fstat`` per directory and one ``lstat`` per file beneath it, the least any
  check by the kernel's stat costs from Python;
* ``rg`` with the ignore rules (``--hidden --no-require-git -g '!.git'``) and ``rg -uu``, the same literal.

A first grep within ``target`` × rg must fit the parts it cannot skip in that budget.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import mmap
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
LITERAL = "getaddrinfo"


def median(rounds: int, work: Callable[[], T]) -> tuple[float, T]:
    """The median wall time of ``rounds`` runs of ``work`` and its last result."""
    times: list[float] = []
    result: T
    for _ in range(rounds):
        began = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - began)
    return statistics.median(times), result


def no_walk_floor(root: Path, files: list[str]) -> int:
    """One open and fstat per directory of ``files`` (paths below ``root``), one lstat per file beneath it."""
    by_dir: dict[str, list[str]] = {}
    for rel in files:
        folder, _, name = rel.rpartition("/")
        by_dir.setdefault(folder, []).append(name)
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    checked = 0
    try:
        for folder, names in by_dir.items():
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
            fd = os.open(folder, flags, dir_fd=top) if folder else os.dup(top)
            try:
                os.fstat(fd)
                for name in names:
                    os.lstat(name, dir_fd=fd)
                    checked += 1
            finally:
                os.close(fd)
    finally:
        os.close(top)
    return checked


def _rg(command: list[str]) -> int:
    return subprocess.run(command, stdout=subprocess.DEVNULL, check=False).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    root: Path = args.tree.resolve()
    rounds: int = args.rounds
    began = time.perf_counter()
    import numpy  # noqa: F401  what the first take up pays in a new process

    numpy_s = time.perf_counter() - began
    from rootbound.confine.boundary import Boundary
    from rootbound.confine.cache_folder import hold_secure
    from rootbound.confine.rooted_files import RootedFiles
    from rootbound.search.ignore_rules import PathFilter
    from rootbound.search.ignore_walk import WalkLimits
    from rootbound.search.index.kept_files import Vouched, load_known
    from rootbound.search.index.registry import IndexRegistry
    from rootbound.search.index.saved import SavedStore, saved_name
    from rootbound.search.index.tree_index import TreeIndex
    from rootbound.search.index.view import count_view, walk_view

    with tempfile.TemporaryDirectory(prefix="index-floor-") as scratch:
        folder = Path(scratch) / "saved"
        held = hold_secure(folder, made=1)
        assert held is not None
        store = SavedStore(os.dup(held))
        registry = IndexRegistry([root], cache=None, saved=store)
        registry.start_saved()
        registry.find(str(root) + "/")
        index = registry.slots[root].current
        while index.thread is None or index.thread.is_alive():
            time.sleep(0.2)
        registry.close()
        store = SavedStore(held)
        time.sleep(2.5)  # past the racy window of the save
        name = saved_name(str(root))
        size = os.stat(name, dir_fd=store.dir_fd).st_size
        print(f"tree {root}; load {os.getloadavg()[0]:.1f}; saved index {size / 2**20:.1f} MiB")
        print(f"{'numpy import (this process)':58} {numpy_s:.3f} s")

        def checksum() -> bytes:
            fd = os.open(name, os.O_RDONLY, dir_fd=store.dir_fd)
            try:
                with mmap.mmap(fd, size, prot=mmap.PROT_READ) as mapped:
                    return hashlib.sha256(mapped).digest()
            finally:
                os.close(fd)

        top = os.stat(root)
        identity = (top.st_dev, top.st_ino)
        rows: list[tuple[str, float]] = [("SHA-256 of the saved file", median(rounds, checksum)[0])]
        rows.append(
            ("SavedStore.load (checksum and every check)", median(rounds, lambda: store.load(root, identity))[0])
        )

        def take_up() -> tuple[TreeIndex, dict[str, tuple[tuple[int, ...], str, int]]]:
            fresh = TreeIndex(root, cache=None, saved=store)
            fresh.identity = identity
            return fresh, load_known(fresh)

        seconds, (fresh, known) = median(rounds, take_up)
        rows.append((f"load_known (load, records by path: {len(known)})", seconds))
        with Boundary([root]) as boundary:
            fs = RootedFiles(boundary, read_only=True)
            where, limits = PathFilter(), WalkLimits()
            seconds, view = median(rounds, lambda: walk_view(fs, str(root), "", where, limits, None))
            rows.append((f"walk_view, ignore rules on ({len(view.entries)} entries)", seconds))

            def vouched_walk() -> Vouched:
                vouched = Vouched(known, {}, {})
                walk_view(fs, str(root), "", where, limits, None, vouched.check)
                return vouched

            seconds, vouched = median(rounds, vouched_walk)
            rows.append((f"walk_view + Vouched (an lstat per file: {len(vouched.kinds)} kept)", seconds))
            counted = median(rounds, lambda: count_view(view, vouched.kinds, vouched.numbers, fresh.count, 0))[0]
            rows.append(("count_view", counted))
        files = [rel for _, rel, _, link in view.files if not link]
        seconds, checked = median(rounds, lambda: no_walk_floor(root, files))
        rows.append((f"no-walk floor: open+fstat per dir, lstat {checked} files", seconds))
    for label, command in (
        ("rg --hidden --no-require-git -g '!.git'", ["rg", "-n", "--hidden", "--no-require-git", "-g", "!.git"]),
        ("rg -uu", ["rg", "-n", "-uu"]),
    ):
        run = [*command, "--no-messages", LITERAL, str(root)]
        rows.append((label, median(rounds, functools.partial(_rg, run))[0]))
    for label, seconds in rows:
        print(f"{label:58} {seconds:.3f} s")
    print(f"load at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
