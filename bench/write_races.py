"""10,000 confined writes under a swap race, and what a confined write costs next to a plain one.

Run: ``.venv/bin/python bench/write_races.py [--calls N] [--quick]``.

* W1 (issue #13): ``edit_file`` / ``write_bytes`` / ``move`` / create-only / ``delete_file`` / ``create_directory``
  calls on paths below ``root/d`` while another process swaps ``d`` with a symlink to the outside
  (``renameat2(RENAME_EXCHANGE)``), per resolver. Reported: calls, allowed, denied (by reason), swaps, and the
  three counts that must be 0: outside entries changed, temp files left, files inside with partial content.
  Denied calls return in microseconds and allowed ones take about a millisecond (fsync), so most calls land in
  the swapped state even though it is held for the shorter time.
* W2: the cost of one confined atomic write (``RootedFS.write_bytes``: parent opened beneath the root, temp
  file, fsync, beneath proof, rename) next to the same steps on a plain path (temp, fsync, ``os.replace``); and of
  ``edit_file`` next to read + ``str.replace`` + the same plain atomic write. Interleaved rounds, best kept,
  wall clock (fsync dominates and is not CPU time).
* W3: ``rootbound.text.edit.apply_edits`` (match + apply, no I/O) on a 1.2 MB, 40,000-line text for an edit near the
  end found by each tier, and one found nowhere (every tier runs, plus the look-alike search), next to
  ``str.replace`` on the same text. CPU time, best of rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rootbound import Boundary, RootedFS, RootsError
from rootbound.confine import syscalls as o2
from rootbound.text.edit import Edit, apply_edits

A = b"variant-A " + b"a" * 4096 + b"\n"
B = b"variant-B " + b"b" * 4096 + b"\n"
EDITED = (A.replace(b"variant-A", b"variant-B"), B.replace(b"variant-B", b"variant-A"))  # what edits produce
COMPLETE = frozenset((A, B, *EDITED, b"created\n", b"moved\n"))
_libc = ctypes.CDLL(None, use_errno=True)

# The swapper runs in its own process, truly in parallel with the calls (no GIL between them). It holds the
# swapped state 0-100 us and the normal one 0-2 ms (a call with its fsyncs takes about a millisecond), so many
# calls get through while every swap still lands in whatever call is running.
SWAPPER = """
import ctypes, os, random, select, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
swaps = 0
print("ready", flush=True)
while not select.select([sys.stdin], [], [], 0)[0]:
    if libc.renameat2(-100, a, -100, b, 2) == 0:
        swaps += 1
    if os.path.islink(a):
        time.sleep(random.random() * 1e-4)  # swapped: briefly
    else:
        time.sleep(random.random() * 2e-3)  # back to normal: longer, so many calls get through
if os.path.islink(a):
    libc.renameat2(-100, a, -100, b, 2)
print(swaps, flush=True)
"""


def exchange(a: str, b: str) -> None:
    if _libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), a)


def snapshot(path: Path) -> dict[str, object]:
    found: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            st = full.lstat()
            if stat.S_ISREG(st.st_mode):
                found[str(full.relative_to(path))] = full.read_bytes()
            else:
                found[str(full.relative_to(path))] = stat.S_IFMT(st.st_mode)
    return found


def arena(base: Path) -> tuple[Path, Path]:
    root, outside = base / "root", base / "outside"
    for top in (root / "d", outside):
        (top / "sub").mkdir(parents=True)
        (top / "f").write_bytes(A)
        (top / "m").write_bytes(b"moved\n")
        (top / "sub" / "f").write_bytes(A)
    (outside / "f").write_bytes(b"OUTSIDE-SECRET\n")
    os.symlink(outside, root / "d_link")
    return root, outside


def operations(fs: RootedFS) -> Callable[[int], object]:
    def call(i: int) -> object:
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

    return call


def race(resolver: str, calls: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        root, outside = arena(Path(os.path.realpath(tmp)))
        before = snapshot(outside)
        d, link = str(root / "d"), str(root / "d_link")
        ok = denied = 0
        reasons: dict[str, int] = {}
        swapper = subprocess.Popen(
            [sys.executable, "-c", SWAPPER, d, link], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert swapper.stdout is not None
        assert swapper.stdin is not None
        assert swapper.stdout.readline().strip() == "ready"
        started = time.perf_counter()
        try:
            with Boundary([root]) as boundary:
                call = operations(RootedFS(boundary, resolver=resolver))  # type: ignore[arg-type]
                for i in range(calls):
                    try:
                        call(i)
                        ok += 1
                    except RootsError as error:
                        denied += 1
                        reasons[error.reason] = reasons.get(error.reason, 0) + 1
        finally:
            swapper.stdin.close()  # the swapper stops at EOF and prints its count
            swaps = int(swapper.stdout.readline() or 0)
            swapper.wait()
        elapsed = time.perf_counter() - started
        if os.path.islink(d):
            exchange(d, link)
        after = snapshot(outside)
        changed = sum(1 for key in before.keys() | after.keys() if before.get(key) != after.get(key))
        temps = sum(1 for top in (root, outside) for _ in top.rglob(".rootbound-*"))
        partial = sum(
            1
            for path in (root / "d").rglob("*")
            if path.is_file() and not path.is_symlink() and path.read_bytes() not in COMPLETE
        )
        return {
            "resolver": resolver,
            "calls": calls,
            "allowed": ok,
            "denied": denied,
            "swaps": swaps,
            "outside changed": changed,
            "temp files left": temps,
            "partial files": partial,
            "seconds": round(elapsed, 2),
            "reasons": ", ".join(f"{name}: {count}" for name, count in sorted(reasons.items(), key=lambda r: -r[1])),
        }


def plain_write(path: Path, data: bytes) -> None:
    temp = path.with_name(f".plain-{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def best(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def costs(number: int, rounds: int) -> list[tuple[str, float, float]]:
    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(os.path.realpath(tmp))
        target = base / "a" / "b" / "c" / "file.txt"
        target.parent.mkdir(parents=True)
        target.write_bytes(A)
        toggle = [0]

        def plain_edit() -> None:
            text = target.read_text()
            old, new = ("variant-A", "variant-B") if "variant-A" in text else ("variant-B", "variant-A")
            plain_write(target, text.replace(old, new, 1).encode())

        with Boundary([base]) as boundary:
            for resolver in ("openat2", "walk") if o2.available() else ("walk",):
                fs = RootedFS(boundary, resolver=resolver)

                def ours_edit(fs: RootedFS = fs) -> None:
                    toggle[0] ^= 1
                    old, new = ("variant-A", "variant-B") if toggle[0] else ("variant-B", "variant-A")
                    with contextlib.suppress(RootsError):
                        fs.edit_file("a/b/c/file.txt", [Edit(old, new)])

                pairs: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
                    (
                        f"write_bytes 4 KiB, 3 dirs down ({resolver})",
                        lambda fs=fs: fs.write_bytes("a/b/c/file.txt", A),  # type: ignore[misc]
                        lambda: plain_write(target, A),
                    ),
                    (f"edit_file one edit ({resolver})", ours_edit, plain_edit),
                ]
                for label, ours, plain in pairs:
                    ours_best = plain_best = float("inf")
                    for _ in range(rounds):
                        ours_best = min(ours_best, best(ours, number))
                        plain_best = min(plain_best, best(plain, number))
                    rows.append((label, ours_best, plain_best))
    return rows


def matching(rounds: int) -> list[tuple[str, float, float]]:
    text = "".join(f"    line_{n} = compute({n})  \n" for n in range(40_000))
    exact = "line_39990 = compute(39990)"
    cases = [
        ("exact", Edit(exact, "x")),
        ("line endings", Edit("    line_39990 = compute(39990)  \r\n    line_39991", "x")),
        ("trailing whitespace", Edit("    line_39990 = compute(39990)\n", "x\n")),
        ("indentation", Edit("line_39990 = compute(39990)\nline_39991 = compute(39991)\n", "x\n")),
        ("not found", Edit("nothing\nlike this\n", "x")),
    ]
    rows: list[tuple[str, float, float]] = []
    for label, edit in cases:
        ours_best = base_best = float("inf")
        for _ in range(rounds):
            start = time.thread_time()
            with contextlib.suppress(RootsError):
                apply_edits(text, [edit])
            ours_best = min(ours_best, time.thread_time() - start)
            start = time.thread_time()
            text.replace(exact, "x", 1)
            base_best = min(base_best, time.thread_time() - start)
        rows.append((f"apply_edits, {label}", ours_best, base_best))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="1,000 calls and fewer timing rounds")
    args = parser.parse_args()
    calls = 1_000 if args.quick else args.calls
    print(f"W1: {calls:,} writing calls per resolver while d <-> d_link (-> outside) is swapped")
    header = ["resolver", "calls", "allowed", "denied", "swaps", "outside changed", "temp files left", "partial files"]
    print("  " + " | ".join(header) + " | seconds")
    failed = False
    for resolver in ("openat2", "walk") if o2.available() else ("walk",):
        row = race(resolver, calls)
        cells = [f"{row[key]:,}" if isinstance(row[key], int) else str(row[key]) for key in header]
        print("  " + " | ".join(cells), end="")
        print(f" | {row['seconds']}")
        print(f"    denials by reason: {row['reasons']}")
        failed |= any(row[key] != 0 for key in ("outside changed", "temp files left", "partial files"))
    print("\nW2: per-call wall time, ours vs plain (best of interleaved rounds)")
    print("  measurement | ours | plain | ratio")
    for label, ours, plain in costs(50 if args.quick else 200, 3 if args.quick else 5):
        print(f"  {label} | {ours * 1e6:,.0f} us | {plain * 1e6:,.0f} us | {ours / plain:.2f}x")
    print("\nW3: one edit on a 1.2 MB, 40,000-line text (CPU time), ours vs str.replace")
    print("  measurement | ours | str.replace | ratio")
    for label, ours, plain in matching(3 if args.quick else 7):
        print(f"  {label} | {ours * 1e3:,.1f} ms | {plain * 1e3:,.2f} ms | {ours / plain:,.0f}x")
    if failed:
        print("\nFAILED: a write reached the outside, left a temp file, or left a partial file")
        sys.exit(1)


if __name__ == "__main__":
    main()
