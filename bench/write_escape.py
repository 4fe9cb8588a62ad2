"""Writes while another process moves their directory out of the root (issue 24 item 1): how many land outside.

Run: ``.venv/bin/python bench/write_escape.py [--attempts N] [--quick]``.

Each attempt makes a fresh directory ``d`` at depth 1 or 1,500 below the root, starts one operation in it (write,
mkdir, delete, move in, move out, edit, and an ``apply_patch`` of two files: an Add File and an Update File), and a
separate *mover process* renames ``d`` out of the root at a random moment during the operation (one move per
attempt). Right after its rename the mover looks at the operation's target in the moved directory; an attempt
**landed outside** when the operation's effect was not there yet at that instant and is there once the operation has
returned (its syscall ran after ``d`` had left the root, and nothing undid it). An effect that lands between the
rename and the mover's look is not counted, so the figures are a lower bound; a write undone after landing (the
fallback without Landlock) is not counted either: it is described, with its window, in ``docs/threats.md``.

Configurations, side by side in one run:

* ``before``: the ``..`` proof alone, as before issue 24 (no write domain, no check after the syscall);
* ``no-landlock``: what a kernel without Landlock gets now (the proof, then a check after each syscall that undoes
  what landed outside);
* ``default``: the write domain (Landlock threads restricted to the effective roots), as ``rootbound serve`` runs;
* ``serve``: ``rootbound serve --writable DIR`` as a subprocess (its sandbox on), a client whose root is narrower
  than DIR, through the Python SDK client, in the handshake era and in 2026-07-28.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from rootbound import Boundary, Edit, Root, RootedFS, RootsError
from rootbound.confine import landlock
from rootbound.confine.write_ops import WriteOps
from rootbound.text.patch_grammar import parse_patch

OPS = ("write", "mkdir", "delete", "move in", "move out", "edit", "patch")
ORIGINAL = "original line\n"
EDITED = "edited line\n"

# The mover: one command a line ("SRC DST DELAY_S CHECK"), rename SRC -> DST after DELAY_S, then report at once
# whether DST/CHECK exists and what it holds ("-" when absent).
MOVER = """
import os, sys, time
print("ready", flush=True)
for line in sys.stdin:
    src, dst, delay, check = line.split("\\t")
    end = time.perf_counter() + float(delay)
    while time.perf_counter() < end:
        pass
    os.rename(src, dst)
    target = os.path.join(dst, check.strip())
    try:
        with open(target, "rb") as f:
            state = f.read(64).hex() or "empty"
    except IsADirectoryError:
        state = "dir"
    except OSError:
        state = "-"
    print(state, flush=True)
"""


class Mover:
    """The separate process that moves directories out of the root."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", MOVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"

    def send(self, src: Path, dst: Path, delay: float, check: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{src}\t{dst}\t{delay:.6f}\t{check}\n")
        self.process.stdin.flush()

    def state(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def state_of(path: Path) -> str:
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        return "dir"
    except OSError:
        return "-"
    return data[:64].hex() or "empty"


class Arena:
    """``base/dir`` (the operator's DIR) holding ``root`` (the client's root, with a chain of ``depth - 1``
    directories) and the outside places directories are moved to (inside DIR, outside the client's root)."""

    def __init__(self, base: Path, depth: int) -> None:
        self.dir = base / "dir"
        self.root = self.dir / "root"
        self.chain = self.root.joinpath(*["a"] * (depth - 1))
        self.chain.mkdir(parents=True)
        self.outside = self.dir / "outside"
        self.outside.mkdir()
        self.n = 0

    def fresh(self) -> tuple[Path, Path, str]:
        """A new ``d`` (with the files every operation needs), where the mover will put it, and its candidate."""
        self.n += 1
        d = self.chain / "d"
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(d)
        d.mkdir()
        (d / "victim").write_text("victim\n")
        (d / "edit.txt").write_text(ORIGINAL)
        (d / "inbound").write_text("from d\n")
        (self.root / f"out{self.n}").write_text("to d\n")
        return d, self.outside / f"d{self.n}", str(d.relative_to(self.root))


@dataclass(frozen=True)
class Plan:
    """One operation on ``d`` (its path relative to the root): the call on a RootedFS, the same as a tool call of
    ``rootbound serve``, the name in ``d`` the mover looks at, and whether a state of that name means done."""

    call: Callable[[RootedFS], object]
    tool: str
    arguments: dict[str, Any]
    check: str
    done: Callable[[str], bool]


def plan(op: str, rel: str, n: int) -> Plan:
    if op == "write":
        path = f"{rel}/new"
        return Plan(lambda fs: fs.write_text(path, "new\n"), "write_file", {"path": path, "content": "new\n"},
                    "new", lambda s: s != "-")  # fmt: skip
    if op == "mkdir":
        path = f"{rel}/newdir"
        return Plan(lambda fs: fs.create_directory(path), "create_directory", {"path": path},
                    "newdir", lambda s: s == "dir")  # fmt: skip
    if op == "delete":
        path = f"{rel}/victim"
        return Plan(lambda fs: fs.delete_file(path), "delete_file", {"path": path}, "victim", lambda s: s == "-")
    if op == "move in":
        source, destination = f"{rel}/inbound", f"in{n}"
        return Plan(lambda fs: fs.move(source, destination), "move_file",
                    {"source": source, "destination": destination}, "inbound", lambda s: s == "-")  # fmt: skip
    if op == "move out":
        source, destination = f"out{n}", f"{rel}/out"
        return Plan(lambda fs: fs.move(source, destination), "move_file",
                    {"source": source, "destination": destination}, "out", lambda s: s != "-")  # fmt: skip
    if op == "patch":  # apply_patch: an Add File and an Update File in d; the mover looks at the added file
        text = "\n".join(["*** Begin Patch", f"*** Add File: {rel}/patched", "+patched",
                          f"*** Update File: {rel}/edit.txt", "@@", f"-{ORIGINAL.strip()}", f"+{EDITED.strip()}",
                          "*** End Patch"])  # fmt: skip
        parsed = parse_patch(text)
        return Plan(lambda fs: fs.apply_patch(parsed), "apply_patch", {"patch": text},
                    "patched", lambda s: s != "-")  # fmt: skip
    path, edits = f"{rel}/edit.txt", [Edit(ORIGINAL, EDITED)]
    return Plan(lambda fs: fs.edit_file(path, edits), "edit_file",
                {"path": path, "edits": [{"old_text": ORIGINAL, "new_text": EDITED}]},
                "edit.txt", lambda s: s == EDITED.encode().hex())  # fmt: skip


@contextlib.contextmanager
def configuration(name: str) -> Iterator[None]:
    """``before``: no write domain and no check after the syscall; ``no-landlock``: no write domain."""
    saved_abi, saved_undo = landlock.abi_version, WriteOps._undo
    try:
        if name in ("before", "no-landlock"):
            landlock.abi_version = lambda: 0
        if name == "before":
            WriteOps._undo = lambda self: False  # type: ignore[method-assign]
        yield
    finally:
        landlock.abi_version = saved_abi
        WriteOps._undo = saved_undo  # type: ignore[method-assign]


def timed(call: Callable[[RootedFS], object], fs: RootedFS) -> float:
    started = time.perf_counter()
    with contextlib.suppress(RootsError):
        call(fs)
    return time.perf_counter() - started


def run_library(config: str, depth: int, attempts: int, resolver: str) -> dict[str, int]:
    landed = dict.fromkeys(OPS, 0)
    with tempfile.TemporaryDirectory() as tmp, configuration(config):
        arena = Arena(Path(os.path.realpath(tmp)), depth)
        mover = Mover()
        try:
            with Boundary([arena.root], allow=[arena.dir]) as boundary:
                fs = RootedFS(boundary, resolver=resolver)  # type: ignore[arg-type]
                for op in OPS:
                    d, _, rel = arena.fresh()  # calibrate: how long the operation takes when nothing moves
                    duration = timed(plan(op, rel, arena.n).call, fs) or 1e-4
                    for _ in range(attempts):
                        d, away, rel = arena.fresh()
                        step = plan(op, rel, arena.n)
                        mover.send(d, away, random.uniform(0, duration * 1.2), step.check)
                        with contextlib.suppress(RootsError):
                            step.call(fs)
                        at_move = mover.state()  # always read: the next attempt starts once the move is done
                        if step.done(state_of(away / step.check)) and not step.done(at_move):
                            landed[op] += 1
        finally:
            mover.close()
    return landed


async def run_serve(era: str, depth: int, attempts: int, base: Path) -> dict[str, int]:
    from mcp.client.stdio import StdioServerParameters

    from mcp import Client
    from rootbound.mcp import RootsProvider

    landed = dict.fromkeys(OPS, 0)
    arena = Arena(base, depth)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "rootbound", "serve", "--writable", str(arena.dir)]
    )
    provider = RootsProvider([Root.from_path(arena.root)])
    mover = Mover()
    mode: Any = "legacy" if era == "handshake" else "2026-07-28"
    try:
        async with Client(params, mode=mode, **provider.client_kwargs()) as client:
            for op in OPS:
                d, _, rel = arena.fresh()
                step = plan(op, rel, arena.n)
                started = time.perf_counter()
                await client.call_tool(step.tool, step.arguments)
                duration = time.perf_counter() - started
                for _ in range(attempts):
                    d, away, rel = arena.fresh()
                    step = plan(op, rel, arena.n)
                    mover.send(d, away, random.uniform(0, duration * 1.2), step.check)
                    await client.call_tool(step.tool, step.arguments)
                    at_move = mover.state()
                    if step.done(state_of(away / step.check)) and not step.done(at_move):
                        landed[op] += 1
    finally:
        mover.close()
    return landed


def row(label: str, landed: dict[str, int], attempts: int, seconds: float) -> str:
    cells = " ".join(f"{landed[op]:>9}" for op in OPS)
    return f"{label:<34} {cells}   {sum(landed.values()):>5} / {attempts * len(OPS):<5} {seconds:6.1f} s"


def main() -> None:
    sys.setrecursionlimit(20_000)  # pathlib's mkdir(parents=True) and shutil.rmtree recurse once per level
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=200, help="attempts per operation and configuration")
    parser.add_argument("--quick", action="store_true", help="20 attempts, depth 1 and 200")
    parser.add_argument("--depths", default="1,1500", help="comma-separated depths of d below the root")
    args = parser.parse_args()
    attempts = 20 if args.quick else args.attempts
    depths = (1, 200) if args.quick else tuple(int(depth) for depth in args.depths.split(","))
    print(f"landlock ABI {landlock.abi_version()}; {attempts} attempts per cell; landed outside (lower bound):")
    print(f"{'configuration':<34} " + " ".join(f"{op:>9}" for op in OPS) + "   total")
    for depth in depths:
        for config in ("before", "no-landlock", "default"):
            for resolver in ("openat2", "walk"):
                started = time.perf_counter()
                landed = run_library(config, depth, attempts, resolver)
                label = f"{config}, {resolver}, depth {depth}"
                print(row(label, landed, attempts, time.perf_counter() - started), flush=True)
        for era in ("handshake", "2026-07-28"):
            started = time.perf_counter()
            with tempfile.TemporaryDirectory() as tmp:
                landed = anyio.run(run_serve, era, depth, attempts, Path(os.path.realpath(tmp)))
            print(row(f"serve (sandbox on), {era}, depth {depth}", landed, attempts, time.perf_counter() - started))


if __name__ == "__main__":
    main()
