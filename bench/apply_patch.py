"""One ``apply_patch`` of 20 files x 5 hunks vs the same edits as 20 ``edit_file`` calls, over stdio, side by side.

Run: ``.venv/bin/python bench/apply_patch.py [--files 20] [--hunks 5] [--rounds 10]``.

``rootbound serve --writable DIR`` as a subprocess and the SDK client over stdio. Each round resets the files
(200 lines each), then times (a) one ``apply_patch`` call changing every file in 5 places, and (b) 20 ``edit_file``
calls, one per file, each with the same 5 changes as 5 edits. Both write every file once (all or nothing per call);
the patch also stages all files before publishing any. Figures are the median of ``--rounds`` interleaved rounds;
issue 37 asks that the patch take at most 2x the edit calls.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from rootbound import Root
from rootbound.mcp import RootsProvider

LINES = 200


def original(n: int) -> str:
    return "".join(f"file {n} line {i}: value = {i}\n" for i in range(LINES))


def changed_lines(hunks: int) -> list[int]:
    step = LINES // hunks
    return [step // 2 + k * step for k in range(hunks)]


def patch_text(files: int, hunks: int) -> str:
    out = ["*** Begin Patch"]
    for n in range(files):
        out.append(f"*** Update File: f{n}.txt")
        for i in changed_lines(hunks):
            out.append("@@")
            out += [f" file {n} line {j}: value = {j}" for j in range(i - 3, i)]
            out += [f"-file {n} line {i}: value = {i}", f"+file {n} line {i}: value = {i * 10}"]
            out += [f" file {n} line {j}: value = {j}" for j in range(i + 1, i + 4)]
    out.append("*** End Patch")
    return "\n".join(out) + "\n"


def edit_calls(files: int, hunks: int) -> list[dict[str, object]]:
    return [
        {
            "path": f"f{n}.txt",
            "edits": [
                {"old_text": f"file {n} line {i}: value = {i}\n", "new_text": f"file {n} line {i}: value = {i * 10}\n"}
                for i in changed_lines(hunks)
            ],
        }
        for n in range(files)
    ]


def reset(root: Path, files: int) -> None:
    for n in range(files):
        (root / f"f{n}.txt").write_text(original(n))


def check(root: Path, files: int, hunks: int) -> None:
    for n in range(files):
        text = (root / f"f{n}.txt").read_text()
        for i in changed_lines(hunks):
            assert f"file {n} line {i}: value = {i * 10}\n" in text, (n, i)


async def run(files: int, hunks: int, rounds: int) -> tuple[list[float], list[float]]:
    patched: list[float] = []
    edited: list[float] = []
    patch = patch_text(files, hunks)
    calls = edit_calls(files, hunks)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(os.path.realpath(tmp)) / "ws"  # noqa: ASYNC240 (set-up, before anything is timed)
        root.mkdir()
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "rootbound", "serve", "--writable", str(root)]
        )
        provider = RootsProvider([Root.from_path(root)])
        async with Client(params, mode="legacy", **provider.client_kwargs()) as client:
            for round_ in range(rounds + 1):  # the first round warms up and is not counted
                reset(root, files)
                started = time.perf_counter()
                result = await client.call_tool("apply_patch", {"patch": patch})
                elapsed = time.perf_counter() - started
                assert not result.is_error, result.content
                check(root, files, hunks)
                if round_:
                    patched.append(elapsed)
                reset(root, files)
                started = time.perf_counter()
                for arguments in calls:
                    result = await client.call_tool("edit_file", arguments)
                    assert not result.is_error, result.content
                elapsed = time.perf_counter() - started
                check(root, files, hunks)
                if round_:
                    edited.append(elapsed)
    return patched, edited


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--hunks", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    patched, edited = anyio.run(run, args.files, args.hunks, args.rounds)
    p, e = statistics.median(patched) * 1000, statistics.median(edited) * 1000
    print(f"{args.files} files x {args.hunks} hunks, stdio, median of {args.rounds} rounds")
    print(f"{'apply_patch (1 call)':<28} {p:8.1f} ms")
    print(f"{f'edit_file ({args.files} calls)':<28} {e:8.1f} ms")
    print(f"{'ratio patch / edits':<28} {p / e:8.2f}x   (target <= 2x)")


if __name__ == "__main__":
    main()
