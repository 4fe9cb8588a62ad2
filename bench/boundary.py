"""Boundary and RootedFS costs next to their baselines, side by side in one run.

Run: ``.venv/bin/python bench/boundary.py [--quick]``. Each pair is measured in interleaved rounds and the best
round per side is kept; the clock is this thread's CPU time (``time.thread_time``), so time spent descheduled on a
busy shared machine does not count against either side. Ratios are ours / baseline.

* P1: ``Boundary.resolve`` with 1, 100 and 10,000 roots (target: ratio to 1 root <= 1.2).
* P2: ``Boundary.resolve`` vs bare ``os.path.realpath`` + ``is_relative_to`` on one root (target <= 1.5x); and a
  linear-scan guard (``any(root == p or root in p.parents ...)``) at 1,000 roots for contrast.
* P3: ``RootedFS.read_bytes`` of a 4 KiB file vs ``open().read()`` (target <= 1.5x), openat2 and the walk
  fallback, for a file directly in the root and one three directories down. For contrast (no target), the floor:
  the same system calls from a bare Python loop (``O_PATH`` open, ``fstat`` (the walk: one ``statx`` for the type,
  size and mount id), the reopen through a held ``/proc/<pid>/fd`` dirfd, ``read``, ``close``), i.e. what no
  Python-level work in rootbound can go below.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rootbound import Boundary, RootedFS
from rootbound.confine import syscalls as o2
from rootbound.confine.boundary import Resolver

Timer = Callable[[], object]


def per_call(fn: Timer, number: int) -> float:
    start = time.thread_time()
    for _ in range(number):
        fn()
    return (time.thread_time() - start) / number


def compare(ours: Timer, base: Timer, *, number: int, rounds: int) -> tuple[float, float]:
    """Best per-call seconds of each side over interleaved rounds."""
    ours(), base()  # warm caches
    best_ours = best_base = float("inf")
    for _ in range(rounds):
        best_ours = min(best_ours, per_call(ours, number))
        best_base = min(best_base, per_call(base, number))
    return best_ours, best_base


def raise_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))


class Table:
    """Rows of (measurement, ours, baseline, ratio, target) printed side by side."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str, str, str]] = []

    def add(self, label: str, ours: float, base_label: str, base: float, target: float | None) -> None:
        ratio = ours / base
        shown = f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.4f}x ({base / ours:,.0f}x faster)"
        verdict = "-" if target is None else f"<= {target}x " + ("ok" if ratio <= target else "MISSED")
        self.rows.append((label, f"{ours * 1e6:.2f}", base_label, f"{base * 1e6:.2f}", shown, verdict))

    def print(self) -> None:
        header = ("measurement", "ours us", "baseline", "base us", "ratio", "target")
        widths = [max(len(row[i]) for row in [header, *self.rows]) for i in range(len(header))]
        for row in [header, *self.rows]:
            print(
                "  ".join(
                    cell.rjust(w) if i in (1, 3) else cell.ljust(w)
                    for i, (cell, w) in enumerate(zip(row, widths, strict=True))
                )
            )


def resolving(boundary: Boundary, candidate: str) -> Timer:
    return lambda: boundary.resolve(candidate)


def reading(fs: RootedFS, candidate: str) -> Timer:
    return lambda: fs.read_bytes(candidate)


def plain_read(path: Path) -> Timer:
    text = str(path)

    def read() -> bytes:
        with open(text, "rb") as handle:
            return handle.read()

    return read


def syscall_floor(root_fd: int, parts: list[str], walk: bool) -> Timer:
    """The system calls of a checked read (issue 16 #8) and nothing else: open ``O_PATH`` beneath the root
    (openat2, or one component at a time), ``fstat`` (walk: one ``statx`` with the mount id), reopen through procfs,
    read, close."""
    proc = os.open("/proc/self/fd", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    resolve = o2.RESOLVE_BENEATH | o2.RESOLVE_NO_MAGICLINKS | o2.RESOLVE_NO_XDEV
    path_flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
    dir_flags = path_flags | os.O_DIRECTORY
    read_flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    joined = "/".join(parts).encode()

    def floor() -> bytes:
        if walk:
            cur = root_fd
            for name in parts[:-1]:
                nxt = os.open(name, dir_flags, dir_fd=cur)
                if cur != root_fd:
                    os.close(cur)
                cur = nxt
            fd = os.open(parts[-1], path_flags, dir_fd=cur)
            if cur != root_fd:
                os.close(cur)
        else:
            fd = o2.openat2(root_fd, joined, os.O_PATH | os.O_CLOEXEC, resolve)
        facts = o2.statx_facts(fd) if walk else None
        st = os.fstat(fd) if facts is None else facts
        new = os.open(b"%d" % fd, read_flags, dir_fd=proc)
        os.close(fd)
        data = os.read(new, st.st_size + 1)
        os.close(new)
        return data

    return floor


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and rounds (a smoke run)")
    args = parser.parse_args()
    number, rounds = (2_000, 5) if args.quick else (10_000, 15)
    raise_fd_limit(10_000 + 256)
    table = Table()
    resolvers: list[Resolver] = ["openat2", "walk"] if o2.available() else ["walk"]

    with tempfile.TemporaryDirectory(prefix="rootbound-bench-") as tmp:
        roots_dir = Path(os.path.realpath(tmp)) / "roots"
        roots_dir.mkdir()
        root_paths = [roots_dir / f"r{index:05d}" for index in range(10_000)]
        for path in root_paths:
            path.mkdir()
        home = root_paths[0]
        (home / "a" / "b").mkdir(parents=True)
        payload = os.urandom(4096)
        shallow, deep = home / "file.bin", home / "a" / "b" / "deep.bin"
        shallow.write_bytes(payload)
        deep.write_bytes(payload)
        candidate = str(deep)

        # P1: one candidate; its root listed last among 1 / 100 / 10,000 roots.
        p1 = {n: Boundary([*root_paths[1:n], home]) for n in (1, 100, 10_000)}
        assert all(len(b.roots) == n for n, b in p1.items())
        for n in (100, 10_000):
            ours, base = compare(resolving(p1[n], candidate), resolving(p1[1], candidate), number=number, rounds=rounds)
            table.add(f"P1 Boundary.resolve, {n:,} roots", ours, "Boundary.resolve, 1 root", base, 1.2)

        # P2: resolve vs bare realpath + is_relative_to on one root; a linear-scan guard at 1,000 roots for contrast.
        def bare() -> bool:
            return Path(os.path.realpath(candidate)).is_relative_to(home)

        for resolver in resolvers:
            with Boundary([home], resolver=resolver) as one:
                ours, base = compare(resolving(one, candidate), bare, number=number, rounds=rounds)
            table.add(f"P2 Boundary.resolve ({resolver})", ours, "realpath + is_relative_to", base, 1.5)
        linear_roots = [*root_paths[1:1000], home]

        def linear() -> bool:
            p = Path(os.path.realpath(candidate))
            return any(r == p or r in p.parents for r in linear_roots)

        ours, base = compare(resolving(p1[10_000], candidate), linear, number=max(number // 50, 40), rounds=5)
        table.add("P2 Boundary.resolve, 10,000 roots", ours, "linear-scan guard, 1,000 roots", base, None)
        for b in p1.values():
            b.close()

        # P3: read a 4 KiB file, directly in the root and three directories down.
        root_fd = os.open(home, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        for resolver in resolvers:
            for cross_mounts in (False, True) if resolver == "walk" else (False,):
                with Boundary([home], resolver=resolver, cross_mounts=cross_mounts) as boundary:
                    fs = RootedFS(boundary)
                    for label, path in (("in root", shallow), ("3 levels down", deep)):
                        assert fs.read_bytes(str(path)) == payload
                        ours, base = compare(reading(fs, str(path)), plain_read(path), number=number, rounds=rounds)
                        extra = ", no mount check" if cross_mounts else ""
                        target = None if cross_mounts else 1.5
                        table.add(
                            f"P3 read_bytes 4 KiB {label} ({resolver}{extra})", ours, "open().read()", base, target
                        )
                        if not cross_mounts:
                            floor = syscall_floor(root_fd, list(path.relative_to(home).parts), resolver == "walk")
                            assert floor() == payload
                            ours, base = compare(floor, plain_read(path), number=number, rounds=rounds)
                            table.add(f"   floor: its syscalls, bare ({resolver})", ours, "open().read()", base, None)

    uname = os.uname()
    print(
        f"kernel {uname.release} {uname.machine}, python {sys.version.split()[0]}, "
        f"openat2 available: {o2.available()}, default resolver: {Boundary([]).resolver}"
    )
    print(f"{number:,} calls x {rounds} interleaved rounds per side, best round kept; CPU microseconds per call\n")
    table.print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
