"""The narrowing swap race of docs/threats.md 1.16: an operator DIR and a symlink to an outside directory trade
names (``renameat2(RENAME_EXCHANGE)``, atomic) in a thread, as an attacker with rename rights in DIR's parent
would, while a client claims the outside directory as its root."""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["INSIDE", "OUTSIDE", "DirSwapper", "DirSwapperProcess", "SwapArena", "exchange", "exchanging_process"]

INSIDE = b"INSIDE-operator-dir"
OUTSIDE = b"OUTSIDE-SECRET-content"

_libc = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def exchange(a: str, b: str) -> None:
    """Atomically swap two names (renameat2 RENAME_EXCHANGE, glibc >= 2.28)."""
    if _libc.renameat2(_AT_FDCWD, a.encode(), _AT_FDCWD, b.encode(), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), a)


@dataclass(frozen=True)
class SwapArena:
    """``ops/dir`` (the operator's DIR, holding ``in.txt`` and ``sub/``), ``ops/dir-link -> outside``, and
    ``outside/`` holding ``secret`` and ``sub/secret``."""

    dir: Path
    link: Path
    outside: Path

    @classmethod
    def create(cls, base: Path) -> SwapArena:
        base = Path(os.path.realpath(base))
        ops, outside = base / "ops", base / "outside"
        (ops / "dir" / "sub").mkdir(parents=True)
        (ops / "dir" / "in.txt").write_bytes(INSIDE)
        (outside / "sub").mkdir(parents=True)
        (outside / "secret").write_bytes(OUTSIDE)
        (outside / "sub" / "secret").write_bytes(OUTSIDE)
        os.symlink(outside, ops / "dir-link")
        return cls(ops / "dir", ops / "dir-link", outside)


class DirSwapper(threading.Thread):
    """Swaps ``arena.dir`` with the symlink to the outside directory and back until stopped (ends in place)."""

    def __init__(self, arena: SwapArena) -> None:
        super().__init__(daemon=True)
        self.arena = arena
        self.swaps = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        a, b = str(self.arena.dir), str(self.arena.link)
        while not self._stop_event.is_set():
            exchange(a, b)
            self.swaps += 1
        if self.swaps % 2:
            exchange(a, b)  # put the real directory back

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


_SWAP_SCRIPT = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b, stop = (arg.encode() for arg in sys.argv[1:4])
swaps = 0
print("ready", flush=True)
while swaps % 256 or not os.path.exists(stop):
    if libc.renameat2(-100, a, -100, b, 2) != 0:
        sys.exit(1)
    swaps += 1
print(swaps, flush=True)
"""


class DirSwapperProcess:
    """:class:`DirSwapper` in another process (the attacker is one), so the client under test keeps the GIL."""

    def __init__(self, arena: SwapArena) -> None:
        self.arena = arena
        self.swaps = 0
        self._stop_path = arena.dir.parent.parent / "stop-swapping"
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        args = [sys.executable, "-c", _SWAP_SCRIPT, str(self.arena.dir), str(self.arena.link), str(self._stop_path)]
        self._process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        assert self._process.stdout.readline().strip() == "ready"

    def stop(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        self._stop_path.touch()
        self.swaps = int(self._process.stdout.readline() or 0)
        self._process.wait(30)
        self._process.stdout.close()
        assert self._process.returncode == 0


_EXCHANGE_LOOP = """
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, pause = sys.argv[1].encode(), sys.argv[2].encode(), float(sys.argv[3])
end = time.monotonic() + 60
print("ready", flush=True)
while time.monotonic() < end:
    libc.renameat2(-100, a, -100, b, 2)
    if pause:
        time.sleep(pause)
"""


@contextlib.contextmanager
def exchanging_process(directory: str, link: str, pause: float = 0.0) -> Iterator[None]:
    """Another process trades ``directory`` and ``link`` (a symlink) with RENAME_EXCHANGE in a loop (at most 60 s)
    while the block runs, truly in parallel (no GIL between them); afterwards ``directory`` is the directory again.
    ``pause``: seconds between two trades (a watcher of the tree keeps up with them)."""
    child = subprocess.Popen(
        [sys.executable, "-c", _EXCHANGE_LOOP, directory, link, str(pause)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        yield
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
        if os.path.islink(directory):
            exchange(directory, link)
