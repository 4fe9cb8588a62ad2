"""P6: the ``grep`` and ``search_files`` workspace tools on a 50,000-file tree, next to their baselines, in one run.

Run: ``.venv/bin/python bench/search.py [--rounds N] [--profile]`` (about a minute on 2 cores, most of it the
naive baseline and generating the tree). A deterministic tree (seeded) is generated once into a temp dir and
reused for every measurement in this process, then deleted. The page cache is warmed by one untimed pass of
every method; each method then runs in N interleaved rounds and the best wall time is kept.

* grep: the ``grep`` tool as ``rootbound serve`` runs one call (``Boundary`` + ``RootedFS`` built per call, then
  ``run_tool``), and raw ``RootedFS.grep(files_only=True)``; vs ``grep -rl NEEDLE DIR`` (a subprocess, output to a
  pipe, process start included) and vs the common guard-per-file approach: ``Path.rglob("*")``, then
  ``p.resolve().is_relative_to(root)`` and ``p.read_text(errors="ignore")`` with a substring test.
* search_files: the ``search_files`` tool (same per-call build) and raw ``RootedFS.search``; vs ``find DIR -name
  '*.py'`` and vs ``Path.rglob("*.py")`` with the same resolve + ``is_relative_to`` guard per path.

Targets (issue, part 5): tool / ``grep -rl`` and tool / ``find`` <= 2x; rglob-guard / tool >= 3x (a speed-up).
The tools' result caps (``Limits``) are raised above what the tree produces, so no output is truncated (checked).
``--profile`` adds a cProfile of one call of each tool (top functions by own time).
"""

from __future__ import annotations

import argparse
import atexit
import cProfile
import functools
import io
import os
import pstats
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rootbound import Boundary, RootedFS
from rootbound.confine import syscalls as o2
from rootbound.workspace.tools import Limits, run_tool

SEED = 20_250_605
FILES = 50_000
NEEDLE = "ROOTBOUND_P6_NEEDLE"
PATTERN = "*.py"
NEEDLE_RATE = 0.006  # text files that contain the needle (one to three lines each)
BINARY_RATE = 0.015
# Large enough that neither tool truncates on this tree (a few hundred grep lines, about 5,000 *.py paths).
LIMITS = Limits(max_read=1024 * 1024, max_results=1_000_000, max_matches=1_000_000, max_output=256 * 1024 * 1024)
TARGET_TOOL_VS_UNIX = 2.0
TARGET_SPEEDUP = 3.0

EXTENSIONS = (
    (".py", 10),
    (".ts", 10),
    (".js", 8),
    (".go", 6),
    (".rs", 6),
    (".c", 5),
    (".h", 4),
    (".java", 5),
    (".md", 8),
    (".txt", 6),
    (".json", 7),
    (".yaml", 5),
    (".html", 4),
    (".css", 4),
    (".sh", 3),
    (".toml", 3),
)
DIR_WORDS = (
    "src",
    "lib",
    "core",
    "api",
    "util",
    "internal",
    "cmd",
    "pkg",
    "server",
    "client",
    "models",
    "views",
    "handlers",
    "tests",
    "docs",
    "scripts",
    "config",
    "services",
    "storage",
    "net",
    "auth",
    "cache",
    "plugins",
    "vendor",
)
FILE_WORDS = (
    "main",
    "utils",
    "helpers",
    "config",
    "models",
    "routes",
    "schema",
    "client",
    "server",
    "index",
    "types",
    "errors",
    "parser",
    "reader",
    "writer",
    "cache",
    "session",
    "handler",
    "worker",
    "queue",
    "test",
    "spec",
    "fixtures",
    "constants",
    "README",
    "CHANGELOG",
)
LINE_TEMPLATES = (
    "def {a}_{b}(self, {c}: int, {d}: str | None = None) -> dict[str, object]:",
    "    return self._{a}.get({c!r}, {n})",
    "    if {c} is None or {d} > {n}:",
    '        raise ValueError(f"{a} {b}: {{{c}}}")',
    "import {a}.{b} as {c}",
    "from {a} import {b}, {c}",
    "class {A}{B}({C}Base):",
    '    """{A} {b} for the {c} {d} layer."""',
    "const {a}{B} = require('./{b}/{c}');",
    "export function {a}{B}({c}, {d}) {{ return {c}.{d}({n}); }}",
    "  for (let i = 0; i < {n}; i++) {{ {a}[i] = {b}(i, {c}); }}",
    "func ({a} *{A}) {B}({c} int) ({d} string, err error) {{",
    "\tif err := {a}.{b}({c}); err != nil {{ return err }}",
    "fn {a}_{b}(&mut self, {c}: u32) -> Result<{A}, {B}Error> {{",
    "    let {c} = self.{a}.iter().map(|x| x * {n}).collect::<Vec<_>>();",
    "static int {a}_{b}(struct {c} *{d}, size_t n) {{ return n * {n}; }}",
    "#define {A}_{B}_MAX {n}",
    "public {A} get{B}() {{ return this.{c}; }}",
    '  "{a}_{b}": {{ "{c}": {n}, "{d}": "{a}-{b}" }},',
    "{a}:",
    "  {b}: {n}",
    "  - name: {c}-{d}",
    "## {A} {b}",
    "The {a} module keeps the {b} of each {c} in a {d} (see {A}.{B}).",
    '<div class="{a}-{b}"><span id="{c}">{d}</span></div>',
    ".{a}-{b} {{ margin: {n}px; color: #{n:06x}; }}",
    "# TODO({a}): {b} the {c} when {d} is {n}",
    '    logger.debug("{a} %s {b} %d", {c}, {n})',
    "",
    "",
)
IDENTS = (
    "user",
    "item",
    "value",
    "path",
    "node",
    "tree",
    "root",
    "config",
    "state",
    "buffer",
    "token",
    "request",
    "response",
    "handler",
    "cache",
    "index",
    "entry",
    "record",
    "stream",
    "limit",
    "count",
    "name",
    "key",
    "data",
    "result",
    "error",
    "context",
    "session",
    "worker",
    "queue",
)


@dataclass(frozen=True)
class Tree:
    """The generated tree: ``root`` (canonical) and what went into it."""

    root: Path
    outside: Path
    files: int
    dirs: int
    size: int
    py_files: int
    needle_files: int
    binary_files: int
    symlinks: int


def _line_pool(rng: random.Random, size: int) -> list[str]:
    pool: list[str] = []
    for _ in range(size):
        a, b, c, d = (rng.choice(IDENTS) for _ in range(4))
        template = rng.choice(LINE_TEMPLATES)
        fields = {"a": a, "b": b, "c": c, "d": d, "A": a.title(), "B": b.title(), "C": c.title()}
        pool.append(template.format(n=rng.randrange(1, 4096), **fields))
    return pool


def _dir_plan(rng: random.Random) -> list[tuple[str, int]]:
    """``(relative dir, file count)`` per directory: packages of nested dirs 2 to 6 levels deep, until FILES."""
    plan: list[tuple[str, int]] = []
    total = 0
    package = 0
    while total < FILES:
        stack: list[tuple[str, int]] = [(f"packages/pkg_{package:03d}", 2)]
        package += 1
        while stack and total < FILES:
            rel, depth = stack.pop()
            count = min(rng.randint(20, 50), FILES - total)
            plan.append((rel, count))
            total += count
            if depth < 6:
                children = rng.randint(2, 4) if depth < 4 else rng.randint(0, 2)
                names = rng.sample(DIR_WORDS, children)
                stack.extend((f"{rel}/{name}", depth + 1) for name in reversed(names))
    return plan


@functools.cache
def build_tree(seed: int = SEED) -> Tree:
    """Generate the tree once per process (cached); the temp dir is removed at exit."""
    holder = tempfile.TemporaryDirectory(prefix="rootbound-p6-")
    atexit.register(holder.cleanup)
    base = Path(os.path.realpath(holder.name))
    root, outside = base / "tree", base / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(f"API_KEY = 'x'  # {NEEDLE}\n")
    (outside / "data").mkdir()
    (outside / "data" / "dump.py").write_text(f"# {NEEDLE}\n")

    rng = random.Random(seed)
    pool = _line_pool(rng, 4000)
    exts = [ext for ext, _ in EXTENSIONS]
    weights = [weight for _, weight in EXTENSIONS]
    files = size = py_files = needle_files = binary_files = 0
    dirs: list[str] = []
    some_files: list[str] = []
    for rel, count in _dir_plan(rng):
        directory = root / rel
        directory.mkdir(parents=True, exist_ok=True)
        dirs.append(rel)
        used: set[str] = set()
        for _ in range(count):
            if rng.random() < BINARY_RATE:
                name = f"{rng.choice(FILE_WORDS)}_{rng.randrange(10_000)}{rng.choice(('.png', '.bin', '.so'))}"
                data = b"\x89PNG\r\n\x1a\n\x00\x00" + rng.randbytes(rng.randint(512, 8192))
                binary_files += 1
            else:
                ext = rng.choices(exts, weights)[0]
                name = f"{rng.choice(FILE_WORDS)}_{rng.randrange(10_000)}{ext}"
                target = rng.randint(512, 4096)
                lines: list[str] = []
                length = 0
                while length < target:
                    line = rng.choice(pool)
                    lines.append(line)
                    length += len(line) + 1
                if rng.random() < NEEDLE_RATE:
                    for _ in range(rng.randint(1, 3)):
                        lines.insert(rng.randrange(len(lines) + 1), f"    check({NEEDLE}, {rng.randrange(99)})")
                    needle_files += 1
                data = ("\n".join(lines) + "\n").encode()
            if name in used:
                name = f"x{len(used)}_{name}"
            used.add(name)
            py_files += name.endswith(".py")
            (directory / name).write_bytes(data)
            files += 1
            size += len(data)
            if len(some_files) < 64 and rng.random() < 0.01:
                some_files.append(f"{rel}/{name}")

    # Symlinks: in-root (a file, a directory, a dangling one) and out-of-root (a file, a directory); not counted
    # as files. Tools and grep -r/find do not follow them; the rglob guard resolves and then admits or refuses.
    links = [
        (f"{dirs[5]}/current.py", os.path.relpath(root / some_files[0], root / dirs[5])),
        (f"{dirs[9]}/latest", os.path.relpath(root / dirs[3], root / dirs[9])),
        (f"{dirs[12]}/missing.py", "does_not_exist.py"),
        (f"{dirs[20]}/settings.py", str(outside / "secret.py")),
        (f"{dirs[30]}/external", str(outside / "data")),
        (f"{dirs[40]}/escape.txt", "../" * 12 + "etc/hostname"),
    ]
    for link, points_to in links:
        os.symlink(points_to, root / link)
    return Tree(root, outside, files, len(dirs), size, py_files, needle_files, binary_files, len(links))


# -- the methods measured --------------------------------------------------------------------------------------


def tool_call(root: Path, name: str, args: dict[str, object]) -> str:
    """One ``rootbound serve`` tool call as the server runs it (operator DIR, no client roots, read-only)."""
    with Boundary([root], allow=[root]) as boundary:
        fs = RootedFS(boundary, read_only=True, max_read=LIMITS.max_read)
        return run_tool(name, fs, args, LIMITS, {"source": "operator directories"})


def raw_grep(root: Path) -> list[Path]:
    with Boundary([root]) as boundary:
        result = RootedFS(boundary).grep(NEEDLE, root, files_only=True, max_matches=LIMITS.max_matches)
        if result.truncated:
            raise RuntimeError("truncated: raise LIMITS")
        return list(result.files)


def raw_search(root: Path) -> list[Path]:
    with Boundary([root]) as boundary:
        result = RootedFS(boundary).search(PATTERN, root, max_results=LIMITS.max_results)
        if result.truncated:
            raise RuntimeError("truncated: raise LIMITS")
        return list(result.paths)


def command(argv: list[str]) -> list[str]:
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    if out.returncode not in (0, 1):
        raise RuntimeError(f"{argv[0]} exited {out.returncode}")
    return out.stdout.decode("utf-8", "surrogateescape").splitlines()


def rglob_grep(root: Path) -> list[Path]:
    """The common guard-per-file approach to a confined grep."""
    hits: list[Path] = []
    for p in root.rglob("*"):
        if not p.is_file():
            continue
        if not p.resolve().is_relative_to(root):
            continue
        if NEEDLE in p.read_text(errors="ignore"):
            hits.append(p)
    return hits


def rglob_search(root: Path) -> list[Path]:
    """The common guard-per-path approach to a confined find -name."""
    return [p for p in root.rglob(PATTERN) if p.resolve().is_relative_to(root)]


@dataclass
class Method:
    label: str
    run: Callable[[], object]
    paths: Callable[[object], set[str]]  # the result as a set of paths (for the cross-check), untimed
    max_rounds: int = 1_000  # the slowest baseline runs fewer rounds to keep the whole run near a minute
    best: float = float("inf")
    best_cpu: float = float("inf")  # user+sys of this process and its children: less sensitive to a busy machine
    found: frozenset[str] = frozenset()


def _tool_paths(grep_output: bool) -> Callable[[object], set[str]]:
    def parse(out: object) -> set[str]:
        if not isinstance(out, str) or "[truncated" in out:
            raise RuntimeError("tool output truncated: raise LIMITS")
        if out.startswith("(no matches"):
            return set()
        lines = [line for line in out.splitlines() if not line.startswith("[not searched: ")]  # grep's skip note
        return {line.split(":", 1)[0] if grep_output else line for line in lines}

    return parse


def _as_set(out: object) -> set[str]:
    if not isinstance(out, list):
        raise TypeError("expected a list of paths")
    return {str(p) for p in out}


def _revision() -> str:
    """The rootbound commit measured (``+dirty`` when src/ has uncommitted changes), or ``unknown``."""
    src = Path(__file__).resolve().parent.parent / "src"
    try:
        head = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True, check=True)
        dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "."], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.decode().strip() + ("+dirty" if dirty.stdout.strip() else "")


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def measure(methods: list[Method], rounds: int) -> None:
    for method in methods:  # warm the page cache and the dentry cache; record what each finds
        method.found = frozenset(method.paths(method.run()))
    for index in range(rounds):
        for method in methods:
            if index >= method.max_rounds:
                continue
            cpu = _cpu()
            start = time.perf_counter()
            method.run()
            method.best = min(method.best, time.perf_counter() - start)
            method.best_cpu = min(method.best_cpu, _cpu() - cpu)


def profile(label: str, fn: Callable[[], object], top: int) -> str:
    profiler = cProfile.Profile()
    profiler.runcall(fn)
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    stats.sort_stats("tottime").print_stats(top)
    body = stream.getvalue()
    start = body.find("   ncalls")
    return f"--- cProfile: {label} (top {top} by own time; profiler overhead inflates Python calls)\n" + body[start:]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per method, best kept (default 5)")
    parser.add_argument("--profile", action="store_true", help="also cProfile one call of each tool")
    args = parser.parse_args()

    load = os.getloadavg()[0]
    started = time.perf_counter()
    tree = build_tree()
    generated = time.perf_counter() - started
    root = tree.root
    text = str(root)

    grep_methods = [
        Method("grep -rl NEEDLE DIR", lambda: command(["grep", "-rl", NEEDLE, text]), _as_set),
        Method(
            "grep tool (Boundary+RootedFS+run_tool)",
            lambda: tool_call(root, "grep", {"pattern": NEEDLE}),
            _tool_paths(True),
        ),
        Method("RootedFS.grep(files_only=True)", lambda: raw_grep(root), _as_set),
        Method("rglob('*') + resolve guard + read_text", lambda: rglob_grep(root), _as_set, max_rounds=3),
    ]
    search_methods = [
        Method("find DIR -name '*.py'", lambda: command(["find", text, "-name", PATTERN]), _as_set),
        Method(
            "search_files tool (Boundary+RootedFS+run_tool)",
            lambda: tool_call(root, "search_files", {"pattern": PATTERN}),
            _tool_paths(False),
        ),
        Method("RootedFS.search", lambda: raw_search(root), _as_set),
        Method("rglob('*.py') + resolve guard", lambda: rglob_search(root), _as_set),
    ]
    measure(grep_methods, args.rounds)
    measure(search_methods, args.rounds)

    # The rootbound paths must find exactly what grep -rl / find find (none of them follows a symlink).
    for methods in (grep_methods, search_methods):
        if not methods[0].found == methods[1].found == methods[2].found:
            raise RuntimeError(f"{methods[1].label} and {methods[0].label} disagree on what matches")

    print(
        f"rootbound {_revision()}; kernel {os.uname().release} {os.uname().machine}, {os.cpu_count()} CPUs; "
        f"python {sys.version.split()[0]}; resolver {Boundary([]).resolver} (openat2: {o2.available()}); "
        f"LANG={os.environ.get('LANG', '')}; "
        f"1-min load {load:.2f} at start, {os.getloadavg()[0]:.2f} at end"
    )
    print(
        f"tree (seed {SEED}, generated in {generated:.1f}s): {tree.files:,} files ({tree.size / 2**20:.0f} MiB) in "
        f"{tree.dirs:,} dirs 2-6 levels deep; {tree.py_files:,} *.py, {tree.needle_files} files with the needle, "
        f"{tree.binary_files} binary, {tree.symlinks} symlinks (3 in-root, 3 out-of-root/dangling)"
    )
    print(
        f"Limits(max_results={LIMITS.max_results:,}, max_matches={LIMITS.max_matches:,}, "
        f"max_output={LIMITS.max_output:,}): nothing truncated (checked); page cache warmed by one untimed pass; "
        f"best of {args.rounds} interleaved rounds (the rglob grep: {min(args.rounds, 3)})\n"
    )
    entries = tree.files + tree.dirs + tree.symlinks
    width = max(len(m.label) for m in (*grep_methods, *search_methods)) + 4
    for title, methods in (("grep", grep_methods), ("search_files", search_methods)):
        print(f"{title:<{width}}{'wall s':>8}{'cpu s':>8}{'hits':>7}{'wall/entry':>12}")
        for m in methods:
            per_entry = f"{m.best / entries * 1e6:.1f}us"
            print(f"  {m.label:<{width - 2}}{m.best:8.3f}{m.best_cpu:8.3f}{len(m.found):7,}{per_entry:>12}")
        print()

    verdicts: list[bool] = []
    print(f"{'ratio (best wall; best cpu in brackets)':<{width}}{'wall':>8}{'(cpu)':>8}  {'target':<8} result")
    for label, ours, base, goal, target in (
        ("grep tool / grep -rl", grep_methods[1], grep_methods[0], "<=", TARGET_TOOL_VS_UNIX),
        ("  RootedFS.grep / grep -rl (information)", grep_methods[2], grep_methods[0], "", 0.0),
        ("rglob-guard grep / grep tool (speed-up)", grep_methods[3], grep_methods[1], ">=", TARGET_SPEEDUP),
        ("search_files tool / find -name", search_methods[1], search_methods[0], "<=", TARGET_TOOL_VS_UNIX),
        ("  RootedFS.search / find -name (information)", search_methods[2], search_methods[0], "", 0.0),
        (
            "rglob-guard search / search_files tool (speed-up)",
            search_methods[3],
            search_methods[1],
            ">=",
            TARGET_SPEEDUP,
        ),
    ):
        wall, cpu = ours.best / base.best, ours.best_cpu / base.best_cpu
        line = f"{label:<{width}}{wall:7.2f}x{f'({cpu:.2f}x)':>8}"
        if not goal:
            print(line)
            continue
        ok = wall <= target if goal == "<=" else wall >= target
        verdicts.append(ok)
        print(f"{line}  {f'{goal} {target:g}x':<8} {'PASS' if ok else 'MISS'}")
    print(
        "\nhits differ only by symlinks: the rglob guard admits in-root links (and a dangling one that resolves "
        "inside), the tools, grep -r and find never follow links (find -name and search_files list matching names)."
    )
    print(f"total run {time.perf_counter() - started:.0f}s")

    if args.profile:
        print()
        print(profile("grep tool", grep_methods[1].run, 18))
        print(profile("search_files tool", search_methods[1].run, 12))
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
