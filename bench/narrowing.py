"""Soak: the narrowing swap race (docs/threats.md 1.16), held allowlist vs an allowlist re-resolved by name.

Run: ``.venv/bin/python bench/narrowing.py [--seconds N]``. A thread swaps an operator DIR with a symlink to an
outside directory (``renameat2(RENAME_EXCHANGE)``) while the main thread builds roots snapshots that claim the
outside directory (and DIR, DIR/sub) and reads through each. For each resolver it prints, side by side, the held
allowlist (``Boundary(roots, allow=<held Boundary>)``, what ``rootbound serve`` does) and the by-name allowlist
(``allow=[DIR]`` per snapshot, what it did before): snapshots, swaps, snapshots that admitted the outside
directory, and reads that returned outside bytes. The held column must show 0 and 0.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import tempfile
import threading
import time
from pathlib import Path

from rootbound import Boundary, RootedFS, RootsError
from rootbound.confine import syscalls as o2

OUTSIDE = b"OUTSIDE-SECRET-content"
_libc = ctypes.CDLL(None, use_errno=True)


def exchange(a: bytes, b: bytes) -> None:
    if _libc.renameat2(-100, a, -100, b, 2) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def soak(base: Path, resolver: str, held: bool, seconds: float) -> tuple[int, int, int, int]:
    ops, outside = base / "ops", base / "outside"
    (ops / "dir" / "sub").mkdir(parents=True)
    (ops / "dir" / "in.txt").write_bytes(b"inside")
    (outside / "sub").mkdir(parents=True)
    (outside / "secret").write_bytes(OUTSIDE)
    (outside / "sub" / "secret").write_bytes(OUTSIDE)
    os.symlink(outside, ops / "dir-link")
    directory = ops / "dir"
    claims = [outside, outside / "sub", directory, directory / "sub"]
    candidates = [outside / "secret", outside / "sub" / "secret", directory / "secret"]
    stop = threading.Event()
    swaps = [0]

    def swap() -> None:
        a, b = str(directory).encode(), str(ops / "dir-link").encode()
        while not stop.is_set():
            exchange(a, b)
            swaps[0] += 1
        if swaps[0] % 2:
            exchange(a, b)

    snapshots = admitted = leaked = 0
    allowlist = Boundary([directory], resolver=resolver)  # type: ignore[arg-type]
    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            allow: Boundary | list[Path] = allowlist if held else [directory]
            with Boundary(claims, allow=allow, resolver=resolver) as boundary:  # type: ignore[arg-type]
                snapshots += 1
                admitted += any(r.path == outside or outside in r.path.parents for r in boundary)
                fs = RootedFS(boundary)
                for candidate in candidates:
                    with contextlib.suppress(RootsError):
                        leaked += fs.read_bytes(candidate) == OUTSIDE
    finally:
        stop.set()
        thread.join()
        allowlist.close()
    return snapshots, swaps[0], admitted, leaked


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="per resolver and variant (default 20)")
    args = parser.parse_args()
    resolvers = ["openat2", "walk"] if o2.available() else ["walk"]
    print(f"{args.seconds:g} s per row; a swapper thread flips DIR <-> symlink to outside as fast as it can\n")
    header = ("resolver", "allowlist", "snapshots", "swaps", "admitted outside", "outside reads")
    print(f"{header[0]:8}  {header[1]:9}  {header[2]:>9}  {header[3]:>9}  {header[4]:>16}  {header[5]:>13}")
    failed = False
    for resolver in resolvers:
        for held in (True, False):
            with tempfile.TemporaryDirectory(prefix="rootbound-narrowing-") as tmp:
                snapshots, swaps, admitted, leaked = soak(Path(os.path.realpath(tmp)), resolver, held, args.seconds)
            label = "held" if held else "by name"
            print(f"{resolver:8}  {label:9}  {snapshots:9,}  {swaps:9,}  {admitted:16,}  {leaked:13,}")
            failed |= held and (admitted or leaked) > 0
    print("\nheld allowlist: " + ("ESCAPED" if failed else "0 admitted, 0 outside reads (ok)"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
