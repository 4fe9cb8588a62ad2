"""Issue 36: the grep and search_files tools through the search index, beside ripgrep, in one run.

Run: ``.venv/bin/python bench/search_index.py --tree DIR [--rounds N] [--changes N] [--in-memory]``, or
``--churn-only [--changes N]`` (``make test`` installs ripgrep). Rows, each the best and median of ``--rounds`` wall
times, with the ratio to the ripgrep row it answers:

* ``cold``: the tool with no index (the scan every first query pays) vs ``rg -n -uu`` (both cores) and ``rg -j1``,
  for a literal, a regex with required literals, and a regex with none (unindexable); in one process, then shared
  with the scan helper as ``serve`` runs it (``chunk_scan.py``, two processes; its answers must equal the first);
* the index build: wall time, the process's peak RSS after it, the postings' size (on disk in a cache folder and
  memory-mapped, as ``serve`` keeps them, or ``--in-memory``), and the RSS before and after, split into the
  process's own pages and file pages;
* ``first of its pattern``: the index ready and the walk recorded, nothing remembered of the pattern (the index
  narrows by trigrams alone); ``repeated``: the same query again (the pattern's memo, ``pattern_memo.py``);
* ``search_files``, first of its glob on the recorded walk and repeated, vs ``rg --files -uu -g GLOB``;
* ``after change``: a separate process changes one file (a rewrite that adds the literal to a file that had none)
  before each call;
* ``churn`` (alone with ``--churn-only``): ``--changes`` rounds of every kind of change by a separate process on a
  tree of 3,060 files (``tests/helpers/index_churn.py``), each followed by four greps and two ``search_files`` (from
  the top and from a subdirectory) through the index, each compared with a full scan (the count of answers that
  differ is printed, and must be 0: the exit status says so).

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
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rootbound import Boundary, RootedFS
from rootbound.search.agent_grep import GrepLimits
from rootbound.search.grep_query import GrepQuery, NamesQuery
from rootbound.search.index.registry import IndexRegistry, own_folder
from rootbound.search.scan_helper import ScanHelper
from rootbound.workspace.tools import Limits, call_tool

LIMITS = Limits(max_results=1_000_000, max_matches=1_000_000, max_per_file=200, max_output=1 << 30, deadline=600.0)
LITERAL = "getaddrinfo"
REGEX = r"class [A-Za-z0-9_]+Error\("
NO_LITERAL = r"[a-z]+_[0-9]{4}\("
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


def tool(
    fs: RootedFS, name: str, args: dict[str, Any], index: IndexRegistry | None, helper: ScanHelper | None = None
) -> Callable[[], Any]:
    context: dict[str, Any] = {}
    if index is not None:
        context["index"] = index
    if helper is not None:
        context["scan_helper"] = helper

    def run() -> Any:
        out = call_tool(name, fs, args, LIMITS, context)
        data = out.structured or {}
        if name == "search_files":
            return set(data.get("matches", [])), out.text.rsplit("\n", 1)[-1]
        return {(m["path"], m["line"]) for m in data.get("matches", []) if not m["context"]}, out.text.rsplit("\n", 1)[
            -1
        ]

    return run


def started_helper() -> ScanHelper:
    """The scan helper ``serve`` starts, once it says it is ready (its interpreter's start is not a grep's)."""
    helper = ScanHelper()
    while True:
        with helper.take() as lease:
            if lease is not None:
                return helper
        if not helper.alive:
            raise SystemExit("the scan helper did not start")
        time.sleep(0.02)


def row(label: str, best: float, median: float, base: float | None) -> None:
    ratio = f"{best / base:6.3f}x" if base else "       "
    print(f"{label:<44} best {best:8.3f}s  median {median:8.3f}s  {ratio}", flush=True)


def first_time(run: Callable[[], Any], registry: IndexRegistry, tree: Path) -> Callable[[], Any]:
    """``run`` as the first query of its pattern: what earlier queries ruled out is forgotten before it."""

    def again() -> Any:
        index = registry.find(str(tree) + "/")[0]
        if index is not None:
            index.memos.clear()
        return run()

    return again


def forget_globs(run: Callable[[], Any], registry: IndexRegistry, tree: Path) -> Callable[[], Any]:
    """``run`` as the first search_files of its glob on the recorded walk."""

    def again() -> Any:
        index = registry.find(str(tree) + "/")[0]
        if index is not None:
            for view in index.views.values():
                view.globs.clear()
        return run()

    return again


def memory() -> str:
    """This process's resident memory now: its own (anonymous) and file pages (the mapped postings among them)."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "RssAnon", "RssFile"):
                fields[name] = int(value.split()[0]) // 1024
    return f"RSS {fields['VmRSS']} MiB (anonymous {fields['RssAnon']}, file {fields['RssFile']})"


def ready(registry: IndexRegistry, tree: Path) -> bool:
    while registry.find(str(tree) + "/")[0] is None:
        status = registry.find(str(tree) + "/")[2]
        if status.startswith("not indexed"):
            print(status)
            return False
        time.sleep(0.1)
    return True


def churn(rounds: int) -> int:
    """``rounds`` changes by a separate process (every kind, in turn), each followed by every churn query through
    the index and by a full scan; the count of answers that differ."""
    from rootbound.search.agent_grep import grep_tree
    from rootbound.search.ignore_rules import PathFilter, name_matcher
    from rootbound.search.ignore_walk import walk
    from rootbound.search.index.indexed_search import grep_with_index, names_with_index
    from rootbound.search.safe_regex import compile_bytes

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.helpers.index_churn import CHURN_QUERIES, build_tree, change_in_another_process

    wide = GrepLimits(max_matches=1_000_000, max_per_file=1_000_000)
    differ = by_index = 0
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        root, outside = Path(work, "tree"), Path(work, "outside")
        root.mkdir()
        outside.mkdir()
        build_tree(root, fillers=3_000)
        root = root.resolve()
        registry = IndexRegistry([root], at_start=True)
        if not ready(registry, root):
            return 1
        with Boundary([root]) as boundary:
            fs = RootedFS(boundary)
            for step in range(rounds):
                change_in_another_process(root, outside, step)
                for pattern, regex, ignore_case in CHURN_QUERIES:
                    compiled = compile_bytes(pattern, regex=regex, ignore_case=ignore_case)
                    required = None if regex or ignore_case else pattern.encode()
                    key: tuple[object, ...] = ((), (), True)
                    source = (pattern, regex, ignore_case)
                    query = GrepQuery(
                        compiled,
                        PathFilter(),
                        source=source,
                        where_key=key,
                        limits=wide,
                        files_only=False,
                        max_files=1_000_000,
                        check=None,
                        required=required,
                        deadline=None,
                        line_local=True,
                    )
                    report, _ = grep_with_index(registry, fs, str(root), query)
                    if report is None:
                        continue
                    by_index += 1
                    full = grep_tree(
                        fs,
                        str(root),
                        GrepQuery(compiled, PathFilter(), limits=wide, required=required, line_local=True),
                    )
                    differ += summary(report) != summary(full)
                for start in (root, root / "d2"):  # search_files from the top and from below it
                    matches = name_matcher("*.py")
                    answer, _ = names_with_index(
                        registry, fs, str(start), NamesQuery(PathFilter(), key, matches, "*.py", 1_000_000, None)
                    )
                    if answer is None:
                        continue
                    by_index += 1
                    differ += answer[0] != [found.display for found in walk(fs, str(start), PathFilter(), keep=matches)]
        registry.close()
    took = time.perf_counter() - began
    print(
        f"churn: {rounds} rounds of changes by a separate process, {len(CHURN_QUERIES)} greps and 2 search_files "
        f"each: {by_index} answered by the index, {differ} differ from a full scan ({took:.0f}s)",
        flush=True,
    )
    return differ


def summary(report: Any) -> tuple[object, ...]:
    return (
        [(path, [(hit.number, hit.text, hit.match) for hit in hits]) for path, hits in report.files],
        report.matches, report.searched, report.skipped, report.truncated, report.capped_files,
        report.too_large, report.binary, report.links, report.unreadable, report.dirs_not_entered,
    )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--in-memory", action="store_true", help="postings in memory instead of a cache folder")
    parser.add_argument("--churn-only", action="store_true", help="only the churn rounds (no --tree needed)")
    args = parser.parse_args()
    if args.churn_only:
        return 1 if churn(args.changes) else 0
    if args.tree is None:
        parser.error("--tree is required (or --churn-only)")
    tree = args.tree.resolve()
    if shutil.which("rg") is None:
        print("ripgrep (rg) is needed: make test-deps installs it", file=sys.stderr)
        return 2
    files = sum(len(f) for _, _, f in os.walk(tree))
    print(f"tree {tree}: {files} files; load {os.getloadavg()[0]:.2f}", flush=True)
    rounds = args.rounds
    lit = {"pattern": LITERAL, "include_ignored": True}
    rex = {"pattern": REGEX, "regex": True, "include_ignored": True}
    bare = {"pattern": NO_LITERAL, "regex": True, "include_ignored": True}
    names = {"pattern": GLOB, "include_ignored": True}
    with Boundary([tree]) as boundary:
        fs = RootedFS(boundary, read_only=True)
        rg_lit = timed(rg("-n", "-uu", "-F", LITERAL, str(tree)), rounds)
        rg_lit1 = timed(rg("-n", "-uu", "-j1", "-F", LITERAL, str(tree)), rounds)
        rg_rex = timed(rg("-n", "-uu", REGEX, str(tree)), rounds)
        rg_bare = timed(rg("-n", "-uu", NO_LITERAL, str(tree)), rounds)
        rg_files = timed(rg("--files", "-uu", "-g", GLOB, str(tree)), rounds)
        row("rg -n -uu literal (2 threads)", rg_lit[0], rg_lit[1], None)
        row("rg -n -uu -j1 literal", rg_lit1[0], rg_lit1[1], None)
        row("rg -n -uu regex", rg_rex[0], rg_rex[1], None)
        row("rg -n -uu regex, no literal", rg_bare[0], rg_bare[1], None)
        row("rg --files -uu -g GLOB", rg_files[0], rg_files[1], None)
        cold = timed(tool(fs, "grep", lit, None), rounds)
        row("cold: grep tool literal, scan", cold[0], cold[1], rg_lit[0])
        cold_rex = timed(tool(fs, "grep", rex, None), rounds)
        row("cold: grep tool regex, scan", cold_rex[0], cold_rex[1], rg_rex[0])
        cold_bare = timed(tool(fs, "grep", bare, None), rounds)
        row("cold: grep tool regex no literal, scan", cold_bare[0], cold_bare[1], rg_bare[0])
        helper = started_helper()
        for label, query, alone, ripgrep in (
            ("literal", lit, cold, rg_lit),
            ("regex", rex, cold_rex, rg_rex),
            ("regex no literal", bare, cold_bare, rg_bare),
        ):
            best, median, result = timed(tool(fs, "grep", query, None, helper), rounds)
            row(f"cold: grep tool {label}, scan with the helper (2 processes)", best, median, ripgrep[0])
            if result != alone[2]:
                print("  DIFFERENT from the scan of one process")
                return 1
        before = memory()
        scratch = Path(tempfile.mkdtemp(prefix="rootbound-bench-index-"))
        cache = None if args.in_memory else own_folder(scratch)
        registry = IndexRegistry([tree], cache=cache, at_start=True)
        began = time.perf_counter()
        if not ready(registry, tree):
            return 1
        build = time.perf_counter() - began
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        postings = registry.status()[0][2]
        disk = sum(f.stat().st_size for f in scratch.rglob("*") if f.is_file())
        where = "in memory" if cache is None else f"on disk ({disk / 2**20:.0f} MiB, mapped)"
        print(f"index build {build:.1f}s wall; peak RSS {rss:.0f} MiB; postings {postings / 2**20:.0f} MiB {where}")
        print(f"  before the index: {before}; with it: {memory()}", flush=True)
        tool(fs, "grep", {"pattern": "zz-warm-the-walk-zz", "include_ignored": True}, registry)()  # records the walk
        best, median, _ = timed(first_time(tool(fs, "grep", bare, registry, helper), registry, tree), rounds)
        row("first of its pattern, with the helper: grep regex no literal", best, median, rg_bare[0])
        for label, query, base, want in (
            ("grep literal", lit, rg_lit[0], rg_lit[2]),
            ("grep regex", rex, rg_rex[0], rg_rex[2]),
            ("grep regex no literal", bare, rg_bare[0], rg_bare[2]),
        ):
            best, median, result = timed(first_time(tool(fs, "grep", query, registry), registry, tree), rounds)
            row(f"first of its pattern: {label} {result[1]}", best, median, base)  # type: ignore[index]
            same = result[0] == want  # type: ignore[index]
            best, median, result = timed(tool(fs, "grep", query, registry), rounds)
            row(f"repeated: {label} {result[1]}", best, median, base)  # type: ignore[index]
            if not same or result[0] != want:  # type: ignore[index]
                print(f"  DIFFERENT from rg: {len(result[0] ^ want)} (file, line) pairs")  # type: ignore[index]
        best, median, result = timed(forget_globs(tool(fs, "search_files", names, registry), registry, tree), rounds)
        row(f"first of its glob: search_files {result[1]}", best, median, rg_files[0])  # type: ignore[index]
        best, median, result = timed(tool(fs, "search_files", names, registry), rounds)
        row(f"repeated: search_files {result[1]}", best, median, rg_files[0])  # type: ignore[index]
        if {str(Path(p)) for p in result[0]} != rg_files[2]:  # type: ignore[index]
            print("  search_files DIFFERENT from rg --files")
        target = next(tree.rglob("*.py"))
        changes = []
        for step in range(rounds):
            target.write_text(target.read_text() + f"\n# {LITERAL} {step}\n")
            changes.append(timed(tool(fs, "grep", lit, registry), 1)[0])
        row("after change: grep literal (one file rewritten)", min(changes), statistics.median(changes), rg_lit[0])
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS at the end {rss:.0f} MiB; now {memory()}; load {os.getloadavg()[0]:.2f}", flush=True)
        registry.close()
        helper.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if args.changes and churn(args.changes) else 0


if __name__ == "__main__":
    sys.exit(main())
