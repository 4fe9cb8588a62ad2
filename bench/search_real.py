"""Issue 29: the ``grep``, ``search_files`` and ``directory_tree`` tools on a real tree, next to ripgrep, GNU grep and
find, in one run with interleaved rounds.

Run: ``.venv/bin/python bench/search_real.py [--rounds N] [--profile] [--tree DIR] [--baseline SRC]`` after
``make test`` (which installs ripgrep and the npm trees under ``.deps/``). The tree is the interpreter's standard
library directory (with its ``site-packages``) plus ``.deps/`` (its folders while the tree stays under the walk's
entry cap), copied once into a cache directory (``$ROOTBOUND_BENCH_CACHE``, else ``~/.cache``, then
``rootbound-bench/search-real``) and reused by later runs: the header line gives its size (154,551 files, 2,963 MiB
with this repository's ``.deps/`` on 2026-12-05). No row changes the tree for good: the index's after-change rows
restore the file they rewrite and remove the ones they create. Every method runs once untimed (to warm the page
cache and record what it finds), then in N interleaved rounds (each round runs every method once); best and median
wall time, the median CPU time (user + system, all threads) and the peak RSS are printed side by side. RSS: a tool
row is this process, its high-water mark reset before the call (``/proc/self/clear_refs``), with the call's rise
over the RSS before it in brackets; a command's is its own (GNU ``time``; ``wait4`` from here would count this
process's memory, which a child has until it execs). ``--baseline SRC`` adds each tool row as another source tree
runs it (e.g. ``git archive main src | tar -x -C /tmp/base``, then ``--baseline /tmp/base/src``), in a worker
process that times the call alone.

What is compared (same flags on both sides):

* the ``grep`` tool, in-process as ``rootbound serve`` runs one call (``Boundary`` + ``RootedFS`` + ``run_tool``):
  literal, regex, ignore-case and files-only with ``include_ignored`` (no ignore file read) vs ``rg -uu`` (no
  ignore files, hidden files searched) and ``grep -rI``; with the ignore files vs ``rg --hidden --no-require-git
  -g '!.git'`` (the tool reads ``.gitignore`` files without a ``.git`` and searches dotfiles, as these flags do);
  and once with the default caps (200 matches), whose RSS is bounded by the caps, not by the tree;
* ``search_files`` vs ``rg --files -uu -g GLOB`` and ``find DIR -name GLOB``;
* ``directory_tree`` (depth 3, ignored entries included) vs ``find DIR -mindepth 1 -maxdepth 3``;
* the search index (``--no-index`` leaves it out), in this process as ``serve`` keeps it (postings memory-mapped
  from a cache folder, a temporary directory here; ``--index-in-memory``): for the grep literal, the grep regex and
  ``search_files``, a ``cold`` row (the tool with no index: the scan every first query pays), the index's build
  (wall time to ready, CPU, this process's peak RSS and its rise; the postings' size in memory and on disk beside),
  a ``warm`` row (the index ready, the call repeated: every answer must end with ``[index]`` and find exactly what
  the cold row finds) and an ``after change`` row (before each call a separate process rewrites one file, adding a
  line both grep patterns match, or creates a file the glob matches; each answer must equal a full scan made right
  after it, text and all but the last line, and include the change), next to ripgrep. ``bench/search_index.py``
  has more of the index's rows (first query of a pattern, a regex with no literal, churn);
* the floors: the sorted walk alone (for ``search_files``), and the same walk plus the syscalls per file of a grep
  (``openat`` beneath the held directory fd, ``fstat``, one ``read``, ``close``; files over the 4 MiB cap not
  read) in a Python loop that searches nothing: what any in-process Python search of this tree pays.

Same results: the sets of ``(file, line)`` (or of paths) are compared and every difference is put in a class
(binary: a NUL in the file, which each tool detects its own way; size: over the tool's 4 MiB per-file cap;
symlinks and directories, which ``find -name`` and ``search_files`` list and ``rg --files`` does not); an
unexplained difference fails the run. The tools' result caps are raised above what the tree produces (nothing
truncated, checked).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import re
import shutil
import stat
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rootbound import Boundary, RootedFS
from rootbound.search.grep_scan import LineScanner
from rootbound.search.ignore_rules import PathFilter
from rootbound.search.ignore_walk import READ_FILE, WalkLimits, walking
from rootbound.search.index.registry import IndexRegistry, own_folder
from rootbound.search.scan_helper import ScanHelper
from rootbound.workspace.tools import Limits, run_tool
from rootbound.workspace.tools.calls import Budget
from search_index import memory, ready, started_helper

REPO = Path(__file__).resolve().parent.parent
LIMITS = Limits(
    max_read=1024 * 1024,
    max_results=1_000_000,
    max_matches=1_000_000,
    max_per_file=1_000_000,
    max_output=1 << 30,
    deadline=600.0,
)
MAX_FILE_SIZE = 4 * 1024 * 1024  # the grep tool's per-file cap (GrepLimits.max_file_size)
LITERAL = "getaddrinfo"
REGEX = r"class [A-Za-z0-9_]+Error\("  # explicit classes: RE2's \w is ASCII, ripgrep's Unicode
FILES_ONLY = "TODO"
GLOB = "*.py"
TREE_DEPTH = 3


# -- the tree ------------------------------------------------------------------------------------------------------


def _cache_dir() -> Path:
    base = os.environ.get("ROOTBOUND_BENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rootbound-bench" / "search-real"


def _entries(path: Path) -> int:
    return sum(len(dirs) + len(files) for _, dirs, files in os.walk(path))


def build_tree(target: Path) -> Path:
    """The real tree at ``target``: built once (the stdlib and ``.deps/`` copied, symlinks kept as links), then
    reused; a half-built copy is never used (built beside, then renamed). The tools walk at most
    ``WalkLimits.max_entries`` entries, and ``.deps/`` grows as ``make test`` installs more: its folders are taken in
    name order while the whole stays under that cap, and the ones left out are named (a fresh machine once got a
    tree the tools refused to walk)."""
    if (target / ".complete").exists():
        return target.resolve()
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    deps = (REPO / ".deps").resolve()
    if not deps.is_dir():
        raise SystemExit(f"no {REPO / '.deps'}: run `make test` first (it installs the npm trees there)")
    budget = WalkLimits().max_entries * 9 // 10 - _entries(stdlib) - 2
    chosen, left_out = [], []
    for folder in sorted(deps.iterdir()):
        size = _entries(folder) + 1 if folder.is_dir() and not folder.is_symlink() else 0
        if size and size <= budget:
            chosen.append(folder)
            budget -= size
        elif size:
            left_out.append(folder.name)
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    print(f"building the tree once into {target} (copying {stdlib} and {deps})...", file=sys.stderr, flush=True)
    if left_out:
        print(f"  left out of .deps/ to stay under the walk's entry cap: {', '.join(left_out)}", file=sys.stderr)
    shutil.copytree(stdlib, partial / "python", symlinks=True)
    for folder in chosen:
        shutil.copytree(folder, partial / "deps" / folder.name, symlinks=True)
    (partial / ".complete").write_text(f"{stdlib}\n{deps}\n")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target.resolve()


def census(root: Path) -> tuple[int, int, int, int]:
    """Regular files, directories, symlinks and the bytes of the files below ``root`` (no link followed)."""
    files = dirs = links = size = 0
    for path, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            st = os.lstat(os.path.join(path, name))
            if stat.S_ISLNK(st.st_mode):
                links += 1
            elif stat.S_ISDIR(st.st_mode):
                dirs += 1
            elif stat.S_ISREG(st.st_mode):
                files += 1
                size += st.st_size
    return files, dirs, links, size


# -- measuring -----------------------------------------------------------------------------------------------------


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


@dataclass
class Run:
    out: str
    seconds: float
    cpu: float  # user + system seconds of the call (all threads of this process, or the command)
    rss_kib: int  # peak RSS during the call (0: not measurable here)
    rss_delta_kib: int = 0  # in-process: the peak over the RSS just before the call


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def in_process(fn: Callable[[], str]) -> Run:
    before = _rss_kib()
    reset = _reset_peak()
    cpu = time.process_time()
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    peak = _peak_kib() if reset else 0
    return Run(out, seconds, cpu, peak, max(peak - before, 0))


GNU_TIME = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
"""GNU time reports the command's own peak RSS; ``wait4`` from this process would report at least this process's
RSS (a child's peak counts the memory it had before ``exec``)."""


def command(argv: list[str]) -> Run:
    report = None
    if GNU_TIME is not None:
        fd, report = tempfile.mkstemp(prefix="search-real-rss-")
        os.close(fd)
        argv = [GNU_TIME, "-f", "%M", "-o", report, *argv]
    start = time.perf_counter()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    rss = 0
    if report is not None:
        with contextlib.suppress(OSError, ValueError):
            rss = int(Path(report).read_text().split()[-1])
        os.unlink(report)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}")
    return Run(out.decode("utf-8", "surrogateescape"), seconds, usage.ru_utime + usage.ru_stime, rss)


def tool(
    root: Path,
    name: str,
    args: dict[str, object],
    limits: Limits = LIMITS,
    index: IndexRegistry | None = None,
    helper: ScanHelper | None = None,
) -> str:
    """One ``rootbound serve`` tool call as the server runs it (operator DIR, no client roots, read-only), through
    the search index when one is given (``serve``'s registry: the answer's last line says which path answered)."""
    # The call's deadline is the context's budget: without one it is Limits' default (30 s), not limits.deadline,
    # and a first pass over a tree not in the page cache takes longer (the warm-cache run aborted there).
    context: dict[str, object] = {"source": "operator directories", "budget": Budget(limits.deadline)}
    if index is not None:
        context["index"] = index
    if helper is not None:
        context["scan_helper"] = helper
    with Boundary([root], allow=[root]) as boundary:
        fs = RootedFS(boundary, read_only=True, max_read=limits.max_read)
        out = run_tool(name, fs, args, limits, context)
    assert isinstance(out, str)
    return out


Parse = Callable[[str], set[str]]


@dataclass
class Method:
    label: str
    run: Callable[[], Run]
    parse: Callable[[str], set[str]] | None = None
    call: tuple[str, dict[str, object], bool] | None = None  # a tool row: (tool, arguments, default caps)
    times: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    rss_kib: int = 0
    rss_delta_kib: int = 0
    found: frozenset[str] = frozenset()
    compared: bool = True  # False: checked on its own (the index's after-change rows, each call vs a full scan)

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)


def tool_method(
    root: Path,
    label: str,
    name: str,
    args: dict[str, object],
    parse: Callable[[str], set[str]] | None,
    *,
    default_caps: bool = False,
    helper: ScanHelper | None = None,
) -> Method:
    limits = Limits() if default_caps else LIMITS
    return Method(
        label,
        lambda: in_process(lambda: tool(root, name, args, limits, helper=helper)),
        parse,
        (name, args, default_caps),
    )


_WORKER = """
import json, os, sys, time
from pathlib import Path
from rootbound import Boundary, RootedFS
from rootbound.workspace.tools import Limits, run_tool
limits = Limits(**json.loads(sys.argv[2]))
root = Path(sys.argv[1])
for line in sys.stdin:
    name, args, default_caps = json.loads(line)
    caps = Limits() if default_caps else limits
    cpu, start = time.process_time(), time.perf_counter()
    with Boundary([root], allow=[root]) as boundary:
        out = run_tool(name, RootedFS(boundary, read_only=True, max_read=caps.max_read), args, caps, {"source": "x"})
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps([seconds, cpu, out]), flush=True)
"""


class Baseline:
    """The tools of another source tree (``--baseline SRC``), in a worker process of their own (a second copy of
    the package cannot be imported here); each call is timed inside the worker, so only the call counts."""

    def __init__(self, src: Path, root: Path) -> None:
        limits = {
            "max_read": LIMITS.max_read,
            "max_results": LIMITS.max_results,
            "max_matches": LIMITS.max_matches,
            "max_per_file": LIMITS.max_per_file,
            "max_output": LIMITS.max_output,
            "deadline": LIMITS.deadline,
        }
        env = dict(os.environ, PYTHONPATH=str(src.resolve()))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(root), json.dumps(limits)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )

    def method(self, ours: Method) -> Method:
        assert ours.call is not None
        request = json.dumps(ours.call) + "\n"

        def run() -> Run:
            assert self.proc.stdin is not None
            assert self.proc.stdout is not None
            self.proc.stdin.write(request)
            self.proc.stdin.flush()
            seconds, cpu, out = json.loads(self.proc.stdout.readline())
            return Run(out, seconds, cpu, 0)

        return Method(ours.label + " (baseline)", run, ours.parse)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


@dataclass
class Group:
    title: str
    methods: list[Method]
    explain: Callable[[str], str] | None = None  # a result in one set and not the other: its class
    targets: list[tuple[int, int, float]] = field(default_factory=list)  # (ours, baseline, at most this ratio)
    exact: tuple[int, ...] = ()  # methods that must find what the first finds, no class excusing a difference


def measure(groups: list[Group], rounds: int) -> None:
    methods = [m for g in groups for m in g.methods]
    for m in methods:  # untimed: warm the caches, record what it finds
        run = m.run()
        m.rss_kib, m.rss_delta_kib = run.rss_kib, run.rss_delta_kib
        if m.parse is not None:
            m.found = frozenset(m.parse(run.out))
    for _ in range(rounds):
        for m in methods:  # interleaved: each round runs every method once
            run = m.run()
            m.times.append(run.seconds)
            m.cpus.append(run.cpu)
            m.rss_kib = max(m.rss_kib, run.rss_kib)
            m.rss_delta_kib = max(m.rss_delta_kib, run.rss_delta_kib)


# -- parsing and explaining -------------------------------------------------------------------------------------

_LINE = re.compile(r"^(.*?):(\d+):", re.DOTALL)


def lines_of(out: str) -> set[str]:
    """``path:line`` of each matching line (rg, grep and the tool print ``path:line:text``)."""
    if "[truncated" in out or "more: " in out:
        raise RuntimeError("tool output truncated: raise LIMITS")
    found = set()
    for line in out.splitlines():
        m = _LINE.match(line)
        if m:
            found.add(f"{m.group(1)}:{m.group(2)}")
    return found


def paths_of(out: str) -> set[str]:
    """The absolute paths an answer lists, one a line. The tool's answer may end with notes in brackets (what was
    not searched, which path answered): they are not paths. Taking such a note for a path was the "unexplained
    (gone)" abort of issue 36 (a fresh tree has files over 4 MiB, binaries and symlinks, so the note is there)."""
    if "[truncated" in out:
        raise RuntimeError("tool output truncated: raise LIMITS")
    found = set()
    for line in out.splitlines():
        if line.startswith("/"):
            found.add(line)
        elif line and line != "(no matches)" and not (line.startswith("[") and line.endswith("]")):
            raise RuntimeError(f"an answer line that is neither a path nor a note: {line[:200]!r}")
    return found


def tree_paths(root: Path) -> Callable[[str], set[str]]:
    """``directory_tree``'s indented names back to paths relative to ``root``."""

    def parse(out: str) -> set[str]:
        stack: list[str] = []
        found = set()
        for line in out.splitlines()[1:]:
            stripped = line.lstrip(" ")
            depth = (len(line) - len(stripped)) // 2
            name = stripped.removesuffix("/…").removesuffix("/").removesuffix("@")
            del stack[depth:]
            stack.append(name)
            found.add("/".join(stack))
        return found

    return parse


def find_rel(root: Path) -> Callable[[str], set[str]]:
    prefix = str(root) + "/"
    return lambda out: {line.removeprefix(prefix) for line in out.splitlines() if line}


def explain_file(item: str) -> str:
    """The class of a result one side has and the other has not. An item that is not an absolute path is a parsing
    error, not a vanished file: the fresh-machine abort of issue 36 ("unexplained (gone)") was the grep tool's note
    ``[not searched: N files over 4 MiB, N binary files, N symlinks ...]`` taken for a path by ``paths_of``
    (``lstat`` of the note failed); the tree had not changed (nothing in it is newer than its ``.complete``)."""
    path = item.rsplit(":", 1)[0] if re.search(r":\d+$", item) else item
    if not path.startswith("/"):
        return "unexplained (not a path: a parsing error)"
    try:
        st = os.lstat(path)
    except OSError:
        return "unexplained (no such file now: changed while the bench ran?)"
    if os.path.islink(path):
        return "symlink (listed by name, not followed)"
    if os.path.isdir(path):
        return "directory (find -name and search_files list directories; rg --files lists files)"
    if st.st_size > MAX_FILE_SIZE:
        return "over the tool's 4 MiB per-file cap"
    with open(path, "rb") as f:
        data = f.read()
    if b"\x00" in data:
        where = data.index(b"\x00")
        return (
            f"binary: a NUL {'in' if where < 8192 else 'after'} the first 8 KiB (each tool detects binary its own way)"
        )
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 with a BOM (ripgrep transcodes it)"
    return "unexplained"


def compare(group: Group) -> list[str]:
    """Every difference between the first method (the tool) and each baseline, by class; raises if unexplained."""
    ours = group.methods[0]
    notes = []
    for place, other in enumerate(group.methods[1:], 1):
        if other.parse is None or not other.compared:
            continue
        only_ours, only_theirs = ours.found - other.found, other.found - ours.found
        if not only_ours and not only_theirs:
            notes.append(f"  {ours.label} = {other.label}: {len(ours.found):,} results, identical")
            continue
        if place in group.exact:
            sides = ((ours.label, only_ours), (other.label, only_theirs))
            shown = [f"    only {label}: {item[:300]!r}" for label, items in sides for item in sorted(items)[:5]]
            raise RuntimeError(
                f"{ours.label} and {other.label} must find the same ({len(only_ours):,} only the first, "
                f"{len(only_theirs):,} only the second):\n" + "\n".join(shown)
            )
        classes: dict[str, int] = {}
        examples: dict[str, list[str]] = {}
        for side, items in (("only the tool", only_ours), (f"only {other.label.split()[0]}", only_theirs)):
            for item in sorted(items):
                why = f"{side}: {(group.explain or explain_file)(item)}"
                classes[why] = classes.get(why, 0) + 1
                examples.setdefault(why, []).append(item)
        notes.append(f"  {ours.label} vs {other.label}: {len(ours.found & other.found):,} shared")
        notes.extend(f"    {count:>6,}  {why}" for why, count in sorted(classes.items()))
        unexplained = [why for why in sorted(classes) if "unexplained" in why]
        if unexplained:
            shown = [f"    {why}: {item[:300]!r}" for why in unexplained for item in examples[why][:5]]
            raise RuntimeError(
                f"{ours.label} and {other.label} differ without an explanation:\n" + "\n".join([*notes, *shown])
            )
    return notes


# -- the search index ----------------------------------------------------------------------------------------------

_CHANGE = """
import sys
path, line, how = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
if how == "create":
    with open(path, "xb") as f:
        f.write(line + b"\\n")
else:  # a rewrite: the file truncated and written again, its old bytes and the new line
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data + (b"\\n" if data and not data.endswith(b"\\n") else b"") + line + b"\\n")
"""
"""One change by a process other than the one holding the index (the index learns of it by inotify alone)."""


def change_elsewhere(path: Path, line: str, how: str) -> None:
    subprocess.run([sys.executable, "-c", _CHANGE, str(path), line, how], check=True)


def change_target(root: Path) -> Path:
    """The file the after-change rows rewrite: the first small text file of ``python/`` (name order) that neither
    grep pattern matches, so each change adds one result to both."""
    regex = re.compile(REGEX)
    for path in sorted((root / "python").glob("*.py")):
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 64 * 1024 or st.st_nlink != 1:
            continue
        data = path.read_text("utf-8", "replace")
        if LITERAL not in data and not regex.search(data) and FILES_ONLY not in data:
            return path
    raise SystemExit(f"no file under {root / 'python'} for the after-change rows")


@dataclass
class Index:
    registry: IndexRegistry
    scratch: Path | None  # the postings' cache folder's parent (None: postings in memory)
    build: Method  # the build's row: wall time to ready, CPU (all threads), peak RSS and its rise
    facts: str


def build_index(root: Path, in_memory: bool) -> Index:
    """The search index of ``root`` as ``serve --index-at-start`` builds it: postings memory-mapped from a cache
    folder of this process (a temporary directory here), or in memory."""
    scratch = None if in_memory else Path(tempfile.mkdtemp(prefix="rootbound-bench-index-"))
    cache = None if scratch is None else own_folder(scratch)
    before, rss_before = memory(), _rss_kib()
    reset = _reset_peak()
    cpu, start = time.process_time(), time.perf_counter()
    registry = IndexRegistry([root], cache=cache, at_start=True)
    built = ready(registry, root)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = _peak_kib() if reset else 0
    if not built:
        registry.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise RuntimeError(f"the index of {root} was not built: {registry.status()[0][1]}")
    postings = registry.status()[0][2]
    disk = 0 if scratch is None else sum(f.stat().st_size for f in scratch.rglob("*") if f.is_file())
    where = "in memory" if cache is None else f"on disk ({disk / 2**20:,.0f} MiB in {cache}, memory-mapped)"
    method = Method("index build (once, wall to ready)", lambda: Run("", 0.0, 0.0, 0), compared=False)
    method.times, method.cpus = [seconds], [cpu]
    method.rss_kib, method.rss_delta_kib = peak, max(peak - rss_before, 0)
    facts = (
        f"index build: {seconds:.1f}s wall to ready, cpu {cpu:.1f}s; peak RSS {peak / 1024:,.0f}MB "
        f"(+{max(peak - rss_before, 0) / 1024:,.0f} over the RSS before); postings {postings / 2**20:,.0f} MiB "
        f"{where}\n  before the index: {before}; with it: {memory()}"
    )
    return Index(registry, scratch, method, facts)


def warm_method(root: Path, index: Index, label: str, name: str, args: dict[str, object], parse: Parse) -> Method:
    """A call through the ready index, repeated (the untimed pass is the first of its pattern): every answer must
    say ``[index]`` (not a scan), and find what the scan finds (``Group.exact``)."""

    def call() -> str:
        out = tool(root, name, args, LIMITS, index.registry)
        if out.rsplit("\n", 1)[-1] != "[index]":
            raise RuntimeError(f"{label}: answered by {out.rsplit(chr(10), 1)[-1][:200]!r}, not [index]")
        return out

    return Method(label, lambda: in_process(call), parse)


def _without_answered_by(out: str) -> str:
    head, _, last = out.rpartition("\n")
    return head if last == "[index]" or last.startswith("[scan") else out


def after_change(
    root: Path,
    index: Index,
    name: str,
    args: dict[str, object],
    parse: Parse,
    calls: int,
    change: Callable[[int], str],
) -> Method:
    """``calls`` calls through the index, each right after ``change(step)`` (a separate process changes the tree;
    it returns the result the change adds) and each compared with a full scan (no index) made next: the same
    results and the same text but for the last line (which path answered), the change's result among them."""
    method = Method("", lambda: Run("", 0.0, 0.0, 0), parse, compared=False)
    answered: set[str] = set()
    for step in range(calls):
        added = change(step)
        run = in_process(lambda: tool(root, name, args, LIMITS, index.registry))
        scan = tool(root, name, args)
        last = run.out.rsplit("\n", 1)[-1]
        answered.add(last if last == "[index]" or last.startswith("[scan") else "[no index status]")
        found, full = parse(run.out), parse(scan)
        if found != full or _without_answered_by(run.out) != scan:
            only_index, only_scan = sorted(found - full)[:5], sorted(full - found)[:5]
            raise RuntimeError(
                f"after change {step}: {name} through the index differs from a full scan: only the index "
                f"{only_index}, only the scan {only_scan} (same results: {found == full})"
            )
        if added not in full:
            raise RuntimeError(f"after change {step}: the change ({added!r}) is not in the full scan's answer")
        method.times.append(run.seconds)
        method.cpus.append(run.cpu)
        method.rss_kib = max(method.rss_kib, run.rss_kib)
        method.rss_delta_kib = max(method.rss_delta_kib, run.rss_delta_kib)
        method.found = frozenset(found)
    method.label = f"after change: {name} tool {' '.join(sorted(answered))}"
    return method


def index_rows(root: Path, groups: list[str], rounds: int, in_memory: bool) -> tuple[list[Group], list[str], str]:
    """The index's rows for the grep literal and regex and for search_files (``groups``: which): per query a
    cold row (the tool, no index: a scan), the build (once for all), a warm row and an after-change row, beside
    ripgrep, measured like the other rows (``measure``, interleaved) and compared as they are (``compare``), the
    warm row also with the cold one exactly. Leaves the tree as it found it (the changed file restored, the created
    ones removed). Returns the groups, their comparison notes and the build's facts."""
    text = str(root)
    lit = {"pattern": LITERAL, "include_ignored": True}
    rex = {"pattern": REGEX, "regex": True, "include_ignored": True}
    names = {"pattern": GLOB, "include_ignored": True}
    rg_uu = ["rg", "-n", "-uu", "--no-messages"]
    target = change_target(root)
    original, st, folder = target.read_bytes(), os.stat(target), os.stat(root / "python")
    created: list[Path] = []
    line = f"class RootboundBench{{}}Error(Exception):  # {LITERAL}, an after-change row of bench/search_real.py"

    def rewrite(step: int) -> str:
        change_elsewhere(target, line.format(step), "rewrite")
        lines = target.read_bytes().count(b"\n")  # the new line is the last
        return f"{target}:{lines}"

    def create(step: int) -> str:
        path = root / "python" / f"rootbound_bench_after_change_{step}.py"
        created.append(path)
        change_elsewhere(path, line.format(step), "create")
        return str(path)

    index = build_index(root, in_memory)
    try:
        chosen: list[tuple[Group, str, dict[str, object], Parse, Callable[[int], str]]] = []
        if "grep" in groups:
            rg_lit = Method("rg -n -uu -F", lambda: command([*rg_uu, "-F", LITERAL, text]), lines_of)
            rg_rex = Method("rg -n -uu", lambda: command([*rg_uu, REGEX, text]), lines_of)
            for title, query, rg_row in ((f"grep literal {LITERAL!r}", lit, rg_lit), ("grep regex", rex, rg_rex)):
                cold = tool_method(root, "cold: grep tool, no index (scan)", "grep", query, lines_of)
                warm = warm_method(root, index, "warm: grep tool, index ready, repeated", "grep", query, lines_of)
                group = Group(f"{title} (include_ignored), the search index", [cold, warm, rg_row], exact=(1,))
                chosen.append((group, "grep", query, lines_of, rewrite))
        if "search" in groups:
            rg_files = ["rg", "--files", "-uu", "--no-messages", "-g", GLOB, text]
            cold = tool_method(root, "cold: search_files tool, no index (walk)", "search_files", names, paths_of)
            label = "warm: search_files tool, index ready, repeated"
            warm = warm_method(root, index, label, "search_files", names, paths_of)
            rg_row = Method("rg --files -uu -g", lambda: command(rg_files), paths_of)
            title = f"search_files {GLOB!r} (include_ignored), the search index"
            group = Group(title, [cold, warm, rg_row], exact=(1,))
            chosen.append((group, "search_files", names, paths_of, create))
        measure([g for g, *_ in chosen], rounds)
        notes = []
        for group, *_ in chosen:
            notes += [f"  {group.title}:", *(f"  {note}" for note in compare(group))]
        for group, name, query, parse, change in chosen:
            changed = after_change(root, index, name, query, parse, max(rounds, 1), change)
            place = notes.index(f"  {group.title}:") + 1 + len(group.methods) - 1
            notes.insert(
                place,
                f"    {changed.label} = a full scan after each of {len(changed.times)} changes by another process: "
                f"identical ({len(changed.found):,} results after the last)",
            )
            cold, warm, rg_row = group.methods
            group.methods = [cold, index.build, warm, changed, rg_row]
            group.targets = [(0, 4, 0.0), (2, 4, 0.0), (3, 4, 0.0), (2, 0, 0.0), (3, 0, 0.0)]
    finally:
        index.registry.close()
        if index.scratch is not None:
            shutil.rmtree(index.scratch, ignore_errors=True)
        target.write_bytes(original)
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        for path in created:
            path.unlink(missing_ok=True)
        os.utime(root / "python", ns=(folder.st_atime_ns, folder.st_mtime_ns))
    return [g for g, *_ in chosen], notes, index.facts


# -- main --------------------------------------------------------------------------------------------------------


def walk_floor(root: Path) -> Callable[[], str]:
    """The sorted walk of the tree alone (every directory opened beneath its parent's fd, listed, sorted), no
    per-entry work: what any in-process Python name search of this tree pays."""
    where = PathFilter(gitignore=False)

    def run() -> str:
        with Boundary([root], allow=[root]) as boundary:
            fs = RootedFS(boundary, read_only=True)
            with walking(fs, root, where) as (_, entries):
                return str(sum(1 for _ in entries))

    return run


def floor_loop(root: Path) -> Callable[[], str]:
    """The walk and the per-file syscalls of a grep, searching nothing: its reads are the grep's own
    (:meth:`LineScanner.read`: files over the size cap not read, a large binary only sniffed)."""
    where = PathFilter(gitignore=False)
    read = LineScanner(search=None, required=b"\n", max_file_size=MAX_FILE_SIZE).read

    def run() -> str:
        files = 0
        with Boundary([root], allow=[root]) as boundary:
            fs = RootedFS(boundary, read_only=True)
            with walking(fs, root, where) as (handle, entries):
                open_entry = handle.entry_opener()
                for _, entry, dir_fd, _ in entries:
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    opened = open_entry(dir_fd, entry.name, entry.inode(), READ_FILE)
                    if opened is None:
                        continue
                    fd, st = opened
                    try:
                        if read(fd, st.st_size) is not None:
                            files += 1
                    finally:
                        os.close(fd)
        return str(files)

    return run


def print_group(g: Group, width: int) -> None:
    print(g.title)
    print(f"  {'':<{width}}{'best s':>8}{'median s':>10}{'cpu s':>8}{'peak RSS':>20}{'results':>9}")
    for m in g.methods:
        results = f"{len(m.found):,}" if m.parse is not None else ""
        if not m.rss_kib:
            rss = "n/a"
        elif m.rss_delta_kib or m.label.endswith(("tool", "close")):
            rss = f"{m.rss_kib / 1024:.0f}MB (+{m.rss_delta_kib / 1024:.1f})"
        else:
            rss = f"{m.rss_kib / 1024:.1f}MB"
        print(f"  {m.label:<{width}}{m.best:8.3f}{m.median:10.3f}{m.cpu:8.3f}{rss:>20}{results:>9}")
    for ours, base, at_most in g.targets:
        o, b = g.methods[ours], g.methods[base]
        ratio, ratio_median = o.best / b.best, o.median / b.median
        verdict = "PASS" if ratio <= at_most else "MISS"
        ratio_cpu = o.cpu / b.cpu
        goal = f" (<= {at_most:g}x: {verdict})" if at_most else ""
        print(
            f"  -> {o.label} / {b.label}: {ratio:.2f}x best, {ratio_median:.2f}x median wall, "
            f"{ratio_cpu:.2f}x cpu{goal}"
        )
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per method (default 5)")
    parser.add_argument("--tree", type=Path, default=None, help="the tree's cache directory (built if missing)")
    parser.add_argument("--profile", action="store_true", help="also cProfile one call of each tool")
    parser.add_argument("--only", choices=("grep", "search", "tree"), default=None, help="one group of rows")
    parser.add_argument(
        "--baseline", type=Path, metavar="SRC", help="also the tools of another source tree (its src/ directory)"
    )
    parser.add_argument("--no-index", action="store_true", help="leave out the search index's rows")
    parser.add_argument(
        "--restart",
        action="store_true",
        help="only issue 51's rows: the first grep of a new server process (never indexed, unchanged, 1%% changed, "
        "after a git checkout), rg beside (bench/index_restart.py; makes the tree a git work tree)",
    )
    parser.add_argument(
        "--index-in-memory", action="store_true", help="the index's postings in memory (default: a cache folder)"
    )
    args = parser.parse_args()
    for binary in ("rg", "grep", "find"):
        if shutil.which(binary) is None:
            raise SystemExit(f"{binary} is not installed (make test installs ripgrep)")

    load = os.getloadavg()
    started = time.perf_counter()
    root = build_tree(args.tree or _cache_dir())
    if args.restart:
        from index_restart import restart_rows

        restart_rows(root, args.rounds)
        return 0
    text = str(root)
    rg_uu = ["rg", "-n", "-uu", "--no-messages"]
    rg_ign = ["rg", "-n", "--hidden", "--no-require-git", "-g", "!.git", "--no-messages"]
    helper = started_helper()  # as serve runs it: its rows' cpu column is this process's only
    shared = "grep tool, with the scan helper (2 processes)"
    grep_groups = [
        Group(
            f"grep literal {LITERAL!r} (include_ignored)",
            [
                tool_method(root, "grep tool", "grep", {"pattern": LITERAL, "include_ignored": True}, lines_of),
                Method("rg -n -uu -F", lambda: command([*rg_uu, "-F", LITERAL, text]), lines_of),
                Method("grep -rnIF", lambda: command(["grep", "-rnIF", LITERAL, text]), lines_of),
                Method("floor: walk+open+fstat+read+close", lambda: in_process(floor_loop(root))),
                tool_method(
                    root, shared, "grep", {"pattern": LITERAL, "include_ignored": True}, lines_of, helper=helper
                ),
            ],
            targets=[(0, 1, 1.2), (0, 2, 1.0), (4, 1, 1.2)],
            exact=(4,),
        ),
        Group(
            "grep regex (include_ignored)",
            [
                tool_method(
                    root, "grep tool", "grep", {"pattern": REGEX, "regex": True, "include_ignored": True}, lines_of
                ),
                Method("rg -n -uu", lambda: command([*rg_uu, REGEX, text]), lines_of),
                Method("grep -rnIE", lambda: command(["grep", "-rnIE", REGEX, text]), lines_of),
                tool_method(
                    root,
                    shared,
                    "grep",
                    {"pattern": REGEX, "regex": True, "include_ignored": True},
                    lines_of,
                    helper=helper,
                ),
            ],
            targets=[(0, 1, 1.2), (0, 2, 1.0), (3, 1, 1.2)],
            exact=(3,),
        ),
        Group(
            "grep ignore-case literal (include_ignored)",
            [
                tool_method(
                    root,
                    "grep tool",
                    "grep",
                    {"pattern": LITERAL, "ignore_case": True, "include_ignored": True},
                    lines_of,
                ),
                Method("rg -n -uu -i -F", lambda: command([*rg_uu, "-i", "-F", LITERAL, text]), lines_of),
                Method("grep -rnIiF", lambda: command(["grep", "-rnIiF", LITERAL, text]), lines_of),
            ],
        ),
        Group(
            f"grep files_only {FILES_ONLY!r} (include_ignored)",
            [
                tool_method(
                    root,
                    "grep tool",
                    "grep",
                    {"pattern": FILES_ONLY, "files_only": True, "include_ignored": True},
                    paths_of,
                ),
                Method(
                    "rg -l -uu -F",
                    lambda: command(["rg", "-l", "-uu", "--no-messages", "-F", FILES_ONLY, text]),
                    paths_of,
                ),
                Method("grep -rlIF", lambda: command(["grep", "-rlIF", FILES_ONLY, text]), paths_of),
            ],
        ),
        Group(
            f"grep literal {LITERAL!r} with the ignore files",
            [
                tool_method(root, "grep tool", "grep", {"pattern": LITERAL}, lines_of),
                Method(
                    "rg -n --hidden --no-require-git -g !.git -F",
                    lambda: command([*rg_ign, "-F", LITERAL, text]),
                    lines_of,
                ),
            ],
        ),
        Group(
            "grep literal 'TODO', default caps (200 matches, 20 per file)",
            [
                tool_method(
                    root, "grep tool", "grep", {"pattern": "TODO", "include_ignored": True}, None, default_caps=True
                )
            ],
        ),
    ]
    search_groups = [
        Group(
            f"search_files {GLOB!r} (include_ignored)",
            [
                tool_method(
                    root, "search_files tool", "search_files", {"pattern": GLOB, "include_ignored": True}, paths_of
                ),
                Method(
                    "rg --files -uu -g",
                    lambda: command(["rg", "--files", "-uu", "--no-messages", "-g", GLOB, text]),
                    paths_of,
                ),
                Method("find -name", lambda: command(["find", text, "-name", GLOB]), paths_of),
                Method("floor: the sorted walk alone", lambda: in_process(walk_floor(root))),
            ],
            targets=[(0, 1, 1.2)],
        ),
        Group(
            f"search_files {GLOB!r} with the ignore files",
            [
                tool_method(root, "search_files tool", "search_files", {"pattern": GLOB}, paths_of),
                Method(
                    "rg --files --hidden --no-require-git -g",
                    lambda: command(["rg", "--files", "--hidden", "--no-require-git", "-g", "!.git", "-g", GLOB, text]),
                    paths_of,
                ),
            ],
        ),
    ]
    tree_groups = [
        Group(
            f"directory_tree depth {TREE_DEPTH} (include_ignored)",
            [
                tool_method(
                    root,
                    "directory_tree tool",
                    "directory_tree",
                    {"path": text, "max_depth": TREE_DEPTH, "include_ignored": True},
                    tree_paths(root),
                ),
                Method(
                    f"find -mindepth 1 -maxdepth {TREE_DEPTH}",
                    lambda: command(["find", text, "-mindepth", "1", "-maxdepth", str(TREE_DEPTH)]),
                    find_rel(root),
                ),
            ],
            explain=lambda rel: explain_file(os.path.join(text, rel)),
        )
    ]
    groups = {"grep": grep_groups, "search": search_groups, "tree": tree_groups}
    chosen = [g for key, gs in groups.items() if args.only in (None, key) for g in gs]
    baseline = Baseline(args.baseline, root) if args.baseline else None
    if baseline is not None:
        for g in chosen:
            g.methods.append(baseline.method(g.methods[0]))
            g.targets.append((0, len(g.methods) - 1, 0.0))  # information: this tree vs the baseline's
    try:
        measure(chosen, args.rounds)
    finally:
        if baseline is not None:
            baseline.close()
    notes = [note for g in chosen for note in compare(g)]
    index_groups: list[Group] = []
    facts = ""
    index_kinds = [key for key in ("grep", "search") if args.only in (None, key)]
    if not args.no_index and index_kinds:
        index_groups, index_notes, facts = index_rows(root, index_kinds, args.rounds, args.index_in_memory)
        notes += index_notes

    files, dirs, links, size = census(root)
    end_load = os.getloadavg()
    ripgrep = subprocess.run(["rg", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(
        f"kernel {os.uname().release}, {os.cpu_count()} CPUs (affinity {len(os.sched_getaffinity(0))}); python "
        f"{sys.version.split()[0]}; {ripgrep}; load (1/5/15 min) {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f} at "
        f"start, {end_load[0]:.2f}/{end_load[1]:.2f}/{end_load[2]:.2f} at end"
    )
    print(
        f"tree {root}: {files:,} files ({size / 2**20:,.0f} MiB), {dirs:,} dirs, {links:,} symlinks; "
        f"{args.rounds} interleaved rounds after one untimed pass; cpu: median user+system (rg: both threads); "
        f"peak RSS: in-process rows are this process (+ the call's rise over its RSS before), commands their own "
        f"({'GNU time' if GNU_TIME else 'n/a: install GNU time'})\n"
    )
    width = max(len(m.label) for g in (*chosen, *index_groups) for m in g.methods) + 4
    for g in chosen:
        print_group(g, width)
    if index_groups:
        print(
            "the search index (in this process, as serve keeps it; cold: the tool with no index; warm: the same call "
            "repeated, the index ready; after change: each call right after another process rewrote a file, or "
            "created one matching the glob; the build's peak RSS is this process's):"
        )
        print(f"{facts}\n")
        for g in index_groups:
            print_group(g, width)
    print("same results:")
    print("\n".join(notes))
    print(f"\ntotal run {time.perf_counter() - started:.0f}s")
    if args.profile:
        for label, fn in (
            ("grep tool, literal", lambda: tool(root, "grep", {"pattern": LITERAL, "include_ignored": True})),
            (
                "grep tool, regex",
                lambda: tool(root, "grep", {"pattern": REGEX, "regex": True, "include_ignored": True}),
            ),
            ("search_files tool", lambda: tool(root, "search_files", {"pattern": GLOB, "include_ignored": True})),
        ):
            profiler = cProfile.Profile()
            profiler.runcall(fn)
            stream = io.StringIO()
            pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(15)
            body = stream.getvalue()
            print(f"\n--- cProfile: {label} (top 15 by own time; the profiler inflates Python calls)")
            print(body[body.find("   ncalls") :])
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        raise SystemExit(main())
