"""Issue 36: the grep and search_files tools through the search index, beside ripgrep, in one run.

Run: ``.venv/bin/python bench/search_index.py --tree DIR [--rounds N] [--changes N]`` (``make test`` installs
ripgrep). Rows, each the best and median of ``--rounds`` wall times, with the ratio to the ripgrep row it answers:

* ``cold``: the tool with no index (the scan every first query pays) vs ``rg -n -uu`` (both cores) and ``rg -j1``;
* the index build: wall time, the process's peak RSS after it, the postings' size;
* ``repeated``: the tool once the index is ready (the first call records the walk; the rows time the calls after);
* ``search_files`` repeated vs ``rg --files -uu -g GLOB``;
* ``after change``: a separate process changes one file (a rewrite that adds the literal to a file that had none)
  before each call; and ``--changes`` rounds of every kind of change, each answer compared with a full scan's
  (the count of answers that differ is printed, and must be 0).

Same flags on both sides as ``bench/search_real.py``: the tools with ``include_ignored`` (no ignore file read) and
ripgrep with ``-uu``. Results are compared as sets of (file, line) and must be equal.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rootbound import Boundary, RootedFS
from rootbound.confine.search.index.registry import IndexRegistry
from rootbound.workspace.tools import Limits, call_tool

LIMITS = Limits(max_results=1_000_000, max_matches=1_000_000, max_per_file=200, max_output=1 << 30, deadline=600.0)
LITERAL = "getaddrinfo"
REGEX = r"class [A-Za-z0-9_]+Error\("
GLOB = "*.pyi"


def timed(run: Callable[[], object], rounds: int) -> tuple[float, float, object]:
    times, result = [], None
    for _ in range(rounds):
        began = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - began)
    return min(times), statistics.median(times), result


def rg(*args: str) -> Callable[[], set[tuple[str, int]] | set[str]]:
    def run() -> Any:
        out = subprocess.run(["rg", *args], capture_output=True, check=False).stdout.decode("utf-8", "replace")
        if "--files" in args:
            return {line for line in out.splitlines() if line}
        found = set()
        for line in out.splitlines():
            path, _, rest = line.partition(":")
            number, _, _ = rest.partition(":")
            if number.isdigit():
                found.add((path, int(number)))
        return found

    return run


def tool(fs: RootedFS, name: str, args: dict[str, Any], index: IndexRegistry | None) -> Callable[[], Any]:
    def run() -> Any:
        out = call_tool(name, fs, args, LIMITS, {"index": index} if index is not None else {})
        data = out.structured or {}
        if name == "search_files":
            return set(data.get("matches", [])), out.text.rsplit("\n", 1)[-1]
        return {(m["path"], m["line"]) for m in data.get("matches", []) if not m["context"]}, out.text.rsplit("\n", 1)[
            -1
        ]

    return run


def row(label: str, best: float, median: float, base: float | None) -> None:
    ratio = f"{best / base:6.3f}x" if base else "       "
    print(f"{label:<44} best {best:8.3f}s  median {median:8.3f}s  {ratio}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--changes", type=int, default=1000)
    args = parser.parse_args()
    tree = args.tree.resolve()
    if shutil.which("rg") is None:
        print("ripgrep (rg) is needed: make test-deps installs it", file=sys.stderr)
        return 2
    files = sum(len(f) for _, _, f in os.walk(tree))
    print(f"tree {tree}: {files} files; load {os.getloadavg()[0]:.2f}", flush=True)
    rounds = args.rounds
    lit = {"pattern": LITERAL, "include_ignored": True}
    rex = {"pattern": REGEX, "regex": True, "include_ignored": True}
    with Boundary([tree]) as boundary:
        fs = RootedFS(boundary, read_only=True)
        rg_lit = timed(rg("-n", "-uu", "-F", LITERAL, str(tree)), rounds)
        rg_lit1 = timed(rg("-n", "-uu", "-j1", "-F", LITERAL, str(tree)), rounds)
        rg_rex = timed(rg("-n", "-uu", REGEX, str(tree)), rounds)
        rg_files = timed(rg("--files", "-uu", "-g", GLOB, str(tree)), rounds)
        row("rg -n -uu literal (2 threads)", rg_lit[0], rg_lit[1], None)
        row("rg -n -uu -j1 literal", rg_lit1[0], rg_lit1[1], None)
        row("rg -n -uu regex", rg_rex[0], rg_rex[1], None)
        row("rg --files -uu -g GLOB", rg_files[0], rg_files[1], None)
        cold = timed(tool(fs, "grep", lit, None), rounds)
        row("cold: grep tool literal, scan", cold[0], cold[1], rg_lit[0])
        cold_rex = timed(tool(fs, "grep", rex, None), rounds)
        row("cold: grep tool regex, scan", cold_rex[0], cold_rex[1], rg_rex[0])
        registry = IndexRegistry([tree], at_start=True)
        began = time.perf_counter()
        while registry.find(str(tree) + "/")[0] is None:
            status = registry.find(str(tree) + "/")[2]
            if status.startswith("not indexed"):
                print(status)
                return 1
            time.sleep(0.2)
        build = time.perf_counter() - began
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        postings = registry.status()[0][2]
        print(f"index build {build:.1f}s wall; peak RSS {rss:.0f} MiB; postings {postings / 2**20:.0f} MiB in memory")
        for label, query, base, want in (
            ("repeated: grep literal, index", lit, rg_lit[0], rg_lit[2]),
            ("repeated: grep regex, index", rex, rg_rex[0], rg_rex[2]),
        ):
            tool(fs, "grep", query, registry)()  # records the walk
            best, median, result = timed(tool(fs, "grep", query, registry), rounds)
            got: set[tuple[str, int]] = result[0]  # type: ignore[index]
            row(f"{label} {result[1]}", best, median, base)  # type: ignore[index]
            if got != want:
                print(f"  DIFFERENT from rg: {len(got ^ want)} (file, line) pairs")  # type: ignore[operator]
        names = {"pattern": GLOB, "include_ignored": True}
        tool(fs, "search_files", names, registry)()
        best, median, result = timed(tool(fs, "search_files", names, registry), rounds)
        row(f"repeated: search_files, index {result[1]}", best, median, rg_files[0])  # type: ignore[index]
        target = next(tree.rglob("*.py"))
        changes = []
        for step in range(rounds):
            target.write_text(target.read_text() + f"\n# {LITERAL} {step}\n")
            changes.append(timed(tool(fs, "grep", lit, registry), 1)[0])
        row("after change: grep literal (one file rewritten)", min(changes), statistics.median(changes), rg_lit[0])
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS at the end {rss:.0f} MiB; load {os.getloadavg()[0]:.2f}")
        registry.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
