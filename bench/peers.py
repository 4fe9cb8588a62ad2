"""``rootbound serve`` side by side with the Node reference ``@modelcontextprotocol/server-filesystem``, in one run.

    .venv/bin/python bench/peers.py [--rounds R] [--calls N] [--files F] [--only client,raw,start,exit,ts]

Both servers are started on the same generated tree (DIR argument; the client declares no roots, so both serve
the DIR) and driven in interleaved rounds, so drift in the machine's load hits both alike. Each timed block is
preceded by a 0.1 s pause and 3 untimed calls: without them the row after ``read 1 MiB`` paid for the previous
block's garbage collection (ours: ``list 40`` measured 2.5 ms in the bench against 1.7 ms on its own). Reported per
operation: the best and the median of the rounds (ms per call), the ratio rootbound / reference, and the size of
each answer on the wire. Five parts (the default runs the first four):

* ``client``: the same Python ``mcp`` ``Client`` over stdio for both (handshake era): no-op (``ping``), read
  4 KiB, read 1 MiB, list a 40-entry directory, stat, and name search on a tree of ``--files`` files (40 hits).
* ``raw``: the same calls as raw JSON-RPC lines on the pipes (no client cost: what each server costs per call),
  with each server's own CPU time per call (all threads, from ``/proc``: the figure to trust on a busy machine),
  then each server's peak RSS (``VmHWM``) after the name search.
* ``start``: cold start to the first ``tools/list`` answer (process start, ``initialize``, ``tools/list``).
* ``exit``: from closing stdin to the process having exited.
* ``ts``: the ``client`` rows through the TypeScript SDK v2 client (``@modelcontextprotocol/client`` ``Client`` +
  ``StdioClientTransport``, the client of most MCP hosts), driven by ``bench/peers_ts.mjs`` (same interleaving,
  warm-up and pause; it prints JSON lines that this script checks and tabulates; no answer sizes). Where the Python
  client checks structured results with ``jsonschema``, the TS client's ``callTool`` validates ``structuredContent``
  against the ``outputSchema`` cached from ``tools/list`` with compiled AJV (its default validator, here counted
  and timed only): the run asserts that every call of a tool declaring an ``outputSchema`` was validated, and
  prints the counts and the time spent in AJV per call. It needs the TS SDK of the interop tests in
  ``.deps/interop`` (``scripts/setup-test-deps.sh``).

Tool mapping (reference → rootbound): ``read_text_file`` → ``read_file`` (the 1 MiB read with ``offset=0,
length=1 MiB``: by default ``read_file`` returns a ~64 KiB window, the reference the whole file; each run prints what
both returned), ``list_directory`` → ``list_directory``,
``get_file_info`` → ``stat``, ``search_files`` (``**/needle_*.txt``) → ``search_files`` (``needle_*.txt``).

The reference is ``@modelcontextprotocol/server-filesystem`` ``REFERENCE_VERSION``, taken from the test-deps
install (``.deps/peers``, npm alias ``fs-VERSION``) when present, else installed by this script with
``npm install --prefix .deps/bench-peers`` (pinned). Targets (issue 15): no-op, 4 KiB read, list and stat ≤ 1.3×
through the client and ≤ 2× on raw pipes; cold start ≤ 1.5×; exit ≤ 50 ms; name search ≤ 0.1×, 1 MiB read ≤ 0.5×,
peak RSS ≤ 0.7×.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.client.stdio import StdioServerParameters

from mcp import Client

REFERENCE_VERSION = "2026.8.31"
REPO = Path(__file__).resolve().parent.parent
PROTOCOL = "2025-11-25"
HITS = 40
MIB = 1024 * 1024


# ------------------------------------------------------------------------------------------------ servers


def reference_entry() -> Path:
    """The reference server's ``dist/index.js``: the test-deps install, else our own pinned install."""
    shared = REPO / ".deps" / "peers" / "node_modules" / f"fs-{REFERENCE_VERSION}" / "dist" / "index.js"
    if shared.exists():
        return shared
    prefix = REPO / ".deps" / "bench-peers"
    own = prefix / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
    if not own.exists():
        if shutil.which("npm") is None:
            sys.exit("bench/peers.py needs npm (Node.js >= 20) to install the reference server")
        print(f"installing @modelcontextprotocol/server-filesystem@{REFERENCE_VERSION} into {prefix}", file=sys.stderr)
        subprocess.run(
            ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
             f"@modelcontextprotocol/server-filesystem@{REFERENCE_VERSION}"],
            check=True,
        )  # fmt: skip
    return own


@dataclass
class Peer:
    """One server under test: how to start it and how its tools are called."""

    name: str
    command: list[str]
    calls: dict[str, tuple[str, dict[str, Any]]]  # operation -> (tool, arguments); "noop" is a ping


def peers(tree: Path, rootbound_src: str | None = None) -> list[Peer]:
    small, big = tree / "small", tree / "big"
    ours: dict[str, tuple[str, dict[str, Any]]] = {
        "read 4 KiB": ("read_file", {"path": str(small / "r4k.txt")}),
        # The whole file: read_file's default is a ~64 KiB window; offset/length (up to --max-read, 1 MiB by
        # default) ask for all of it, as the reference's read_text_file gives.
        "read 1 MiB": ("read_file", {"path": str(small / "r1m.txt"), "offset": 0, "length": MIB}),
        "list 40": ("list_directory", {"path": str(small / "list")}),
        "stat": ("stat", {"path": str(small / "r4k.txt")}),
        "name search": ("search_files", {"pattern": "needle_*.txt", "path": str(big)}),
    }
    reference = {
        "read 4 KiB": ("read_text_file", {"path": str(small / "r4k.txt")}),
        "read 1 MiB": ("read_text_file", {"path": str(small / "r1m.txt")}),
        "list 40": ("list_directory", {"path": str(small / "list")}),
        "stat": ("get_file_info", {"path": str(small / "r4k.txt")}),
        "name search": ("search_files", {"pattern": "**/needle_*.txt", "path": str(big)}),
    }
    return [
        Peer("rootbound", [*_python(rootbound_src), "-m", "rootbound", "serve", str(tree)], ours),
        Peer("reference", ["node", str(reference_entry()), str(tree)], reference),
    ]


def _python(src: str | None) -> list[str]:
    """This interpreter; with ``--rootbound-src``, importing rootbound from that tree (e.g. an older checkout)."""
    if src is None:
        return [sys.executable]
    return ["env", f"PYTHONPATH={Path(src).resolve()}", sys.executable]


def make_tree(root: Path, files: int) -> None:
    """small/: a 4 KiB and a 1 MiB text file, a 40-entry directory; big/: ``files`` files, ``HITS`` named needle."""
    small = root / "small"
    (small / "list").mkdir(parents=True)
    line = b"the quick brown fox jumps over the lazy dog 0123456789\n"
    (small / "r4k.txt").write_bytes((line * 100)[:4096])
    (small / "r1m.txt").write_bytes((line * 20000)[: 1024 * 1024])
    for i in range(40):
        (small / "list" / f"entry_{i:02}.txt").write_bytes(b"x\n")
    big = root / "big"
    per_dir = 100
    step = max(1, files // HITS)
    for i in range(files):
        folder = big / f"d{i // (per_dir * 10):03}" / f"s{(i // per_dir) % 10}"
        if i % per_dir == 0:
            folder.mkdir(parents=True)
        name = f"needle_{i}.txt" if i % step == step // 2 and i // step < HITS else f"file_{i}.dat"
        (folder / name).write_bytes(b"")


# ------------------------------------------------------------------------------------------ raw pipes


class Pipe:
    """A server process driven by raw JSON-RPC lines: no client library between the bench and the pipes."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        self.ids = 0
        self.buffer = os.fdopen(os.dup(self.stdout.fileno()), "rb", buffering=1 << 20)  # fast readline

    def request(self, method: str, params: dict[str, Any] | None = None) -> bytes:
        self.ids += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.ids, "method": method}
        if params is not None:
            message["params"] = params
        self.stdin.write(json.dumps(message).encode() + b"\n")
        while True:
            line = self.buffer.readline()
            if not line:
                raise RuntimeError("server closed its stdout")
            if b'"id":' in line and json.loads(line).get("id") == self.ids:
                return line

    def initialize(self) -> None:
        self.request(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
        )
        self.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def call(self, peer: Peer, operation: str) -> bytes:
        if operation == "noop":
            return self.request("ping")
        tool, arguments = peer.calls[operation]
        line = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert b'"isError":true' not in line, line[:300]
        return line

    def cpu_seconds(self) -> float:
        """CPU time of every thread of the server so far (schedstat, ns): robust to how busy the machine is."""
        total = 0
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue  # a thread that just ended
        return total / 1e9

    def peak_rss_kib(self) -> int:
        for row in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if row.startswith("VmHWM:"):
                return int(row.split()[1])
        return 0

    def close(self) -> float:
        """Close stdin; seconds until the process has exited."""
        started = time.perf_counter()
        self.stdin.close()
        self.process.wait()
        elapsed = time.perf_counter() - started
        self.stdout.close()
        self.buffer.close()
        return elapsed


# --------------------------------------------------------------------------------------------- figures


@dataclass
class Figures:
    """Per (operation, peer): one figure per round, in ms."""

    rounds: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    sizes: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, operation: str, peer: str, ms: float) -> None:
        self.rounds.setdefault((operation, peer), []).append(ms)

    def table(self, title: str, operations: list[str], targets: dict[str, float]) -> None:
        print(f"\n{title}")
        print(
            f"  {'operation':<13} {'rootbound best':>14} {'median':>8} {'reference best':>15} {'median':>8} "
            f"{'ratio best':>10} {'median':>7} {'target':>7} {'answer bytes rb / ref':>22}"
        )
        for op in operations:
            ours, theirs = self.rounds[(op, "rootbound")], self.rounds[(op, "reference")]
            best = min(ours) / min(theirs)
            median = statistics.median(ours) / statistics.median(theirs)
            target = targets.get(op)
            mark = "" if target is None else f"≤{target:g}" + (" ok" if best <= target else " MISS")
            sizes = ""
            if (op, "rootbound") in self.sizes:
                sizes = f"{self.sizes[(op, 'rootbound')]:>10} / {self.sizes[(op, 'reference')]:<10}"
            print(
                f"  {op:<13} {min(ours):>14.3f} {statistics.median(ours):>8.3f} {min(theirs):>15.3f} "
                f"{statistics.median(theirs):>8.3f} {best:>9.2f}x {median:>6.2f}x {mark:>7} {sizes:>22}"
            )


OPERATIONS = ["noop", "read 4 KiB", "read 1 MiB", "list 40", "stat", "name search"]
FAST_TARGETS = {"noop": 1.3, "read 4 KiB": 1.3, "list 40": 1.3, "stat": 1.3, "read 1 MiB": 0.5, "name search": 0.1}
RAW_TARGETS = {"noop": 2.0, "read 4 KiB": 2.0, "list 40": 2.0, "stat": 2.0, "read 1 MiB": 0.5, "name search": 0.1}


WARM_UP = 3
SETTLE = 0.1


def settle() -> None:
    """Before each timed block: a pause, so the previous block's aftermath (a server's garbage collection after
    1 MiB answers, say) does not land on whoever is timed next; then ``WARM_UP`` untimed calls."""
    time.sleep(SETTLE)


def calls_for(operation: str, calls: int) -> int:
    return max(3, calls // 50) if operation == "name search" else max(5, calls // 10) if "1 MiB" in operation else calls


def bench_raw(servers: list[Peer], rounds: int, calls: int) -> None:
    figures, cpu = Figures(), Figures()
    pipes = {peer.name: Pipe(peer.command) for peer in servers}
    try:
        for pipe in pipes.values():
            pipe.initialize()
            pipe.request("tools/list")
        for peer in servers:  # warm-up, and the answer sizes
            for op in OPERATIONS:
                for _ in range(3):
                    figures.sizes[(op, peer.name)] = len(pipes[peer.name].call(peer, op))
        check_search(pipes, servers)
        check_reads(pipes, servers)
        for _ in range(rounds):
            for op in OPERATIONS:
                for peer in servers:
                    pipe, n = pipes[peer.name], calls_for(op, calls)
                    settle()
                    for _ in range(WARM_UP):
                        pipe.call(peer, op)
                    used = pipe.cpu_seconds()
                    started = time.perf_counter()
                    for _ in range(n):
                        pipe.call(peer, op)
                    figures.add(op, peer.name, (time.perf_counter() - started) / n * 1000)
                    cpu.add(op, peer.name, (pipe.cpu_seconds() - used) / n * 1000)
        figures.table("raw JSON-RPC on the pipes (ms per call)", OPERATIONS, RAW_TARGETS)
        cpu.sizes = figures.sizes
        cpu.table("server CPU time per call on raw pipes (ms, all threads; less sensitive to load)", OPERATIONS, {})
        rss = {name: pipe.peak_rss_kib() for name, pipe in pipes.items()}
        ratio = rss["rootbound"] / rss["reference"]
        print(
            f"\n  peak RSS after the name search: rootbound {rss['rootbound'] / 1024:.1f} MiB, reference "
            f"{rss['reference'] / 1024:.1f} MiB, ratio {ratio:.2f}x (≤0.7{' ok' if ratio <= 0.7 else ' MISS'})"
        )
    finally:
        for pipe in pipes.values():
            pipe.close()


def check_search(pipes: dict[str, Pipe], servers: list[Peer]) -> None:
    """Both searches find the same ``HITS`` files (else the comparison is meaningless)."""
    found = {}
    for peer in servers:
        text = json.loads(pipes[peer.name].call(peer, "name search"))["result"]["content"][0]["text"]
        found[peer.name] = sorted(line for line in text.splitlines() if line.endswith(".txt"))
    counts = {name: len(paths) for name, paths in found.items()}
    assert found["rootbound"] == found["reference"], counts
    assert len(found["rootbound"]) == HITS, counts


READS = (("read 4 KiB", 4096), ("read 1 MiB", MIB))


def say_reads(returned: dict[str, dict[str, int]]) -> None:
    """What each read returned (characters of text), so the rows compare like with like: the whole file on both
    sides (read_file's default window is ~64 KiB; the bench asks for the whole file with offset/length)."""
    print()
    for op, whole in READS:
        ours, theirs = returned[op]["rootbound"], returned[op]["reference"]
        print(f"  {op}: rootbound returned {ours:,} characters, reference {theirs:,} (the file: {whole:,} ASCII bytes)")
        assert ours == theirs == whole, returned


def check_reads(pipes: dict[str, Pipe], servers: list[Peer]) -> None:
    returned: dict[str, dict[str, int]] = {}
    for op, _ in READS:
        for peer in servers:
            text = json.loads(pipes[peer.name].call(peer, op))["result"]["content"][0]["text"]
            returned.setdefault(op, {})[peer.name] = len(text)
    say_reads(returned)


def bench_lifecycle(servers: list[Peer], rounds: int) -> None:
    start, stop = Figures(), Figures()
    for _ in range(rounds):
        for peer in servers:
            started = time.perf_counter()
            pipe = Pipe(peer.command)
            pipe.initialize()
            pipe.request("tools/list")
            start.add("cold start", peer.name, (time.perf_counter() - started) * 1000)
            pipe.call(peer, "stat")
            stop.add("exit", peer.name, pipe.close() * 1000)
    start.table("cold start → first tools/list answer (ms)", ["cold start"], {"cold start": 1.5})
    stop.table("exit after stdin closes (ms; target ≤ 50 ms for rootbound)", ["exit"], {})
    best = min(stop.rounds[("exit", "rootbound")])
    print(f"  rootbound exit best {best:.1f} ms (≤50{' ok' if best <= 50 else ' MISS'})")


async def bench_client(servers: list[Peer], rounds: int, calls: int) -> None:
    figures = Figures()
    async with Client(_params(servers[0]), mode="legacy") as first, Client(_params(servers[1]), mode="legacy") as two:
        clients = {servers[0].name: first, servers[1].name: two}
        for client in clients.values():
            await client.list_tools()  # the client validates structured results against the listed schemas

        async def call(peer: Peer, op: str) -> int:
            client = clients[peer.name]
            if op == "noop":
                await client.send_ping()
                return 0
            tool, arguments = peer.calls[op]
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result
            return len(getattr(result.content[0], "text", ""))

        returned: dict[str, dict[str, int]] = {}
        for peer in servers:
            for op in OPERATIONS:
                for _ in range(3):
                    returned.setdefault(op, {})[peer.name] = await call(peer, op)
        say_reads(returned)
        for _ in range(rounds):
            for op in OPERATIONS:
                for peer in servers:
                    n = calls_for(op, calls)
                    settle()
                    for _ in range(WARM_UP):
                        await call(peer, op)
                    started = time.perf_counter()
                    for _ in range(n):
                        await call(peer, op)
                    figures.add(op, peer.name, (time.perf_counter() - started) / n * 1000)
    figures.table("through the Python mcp Client over stdio (ms per call)", OPERATIONS, FAST_TARGETS)


TS_SCRIPT = Path(__file__).resolve().parent / "peers_ts.mjs"
TS_MODULES = REPO / ".deps" / "interop" / "node_modules"


def ts_entry(scratch: Path) -> Path:
    """``peers_ts.mjs`` as Node should run it: Node resolves an ES module's imports from the script's folder, so a
    scratch folder holds links to the script and to the TS SDK v2 install of the interop tests (``.deps/interop``,
    from ``scripts/setup-test-deps.sh``); run with ``--preserve-symlinks-main``. Nothing is written in the repo."""
    if not (TS_MODULES / "@modelcontextprotocol" / "client").exists():
        sys.exit(f"{TS_MODULES} lacks @modelcontextprotocol/client: run scripts/setup-test-deps.sh (make test does)")
    folder = scratch / "ts"
    folder.mkdir()
    (folder / "node_modules").symlink_to(TS_MODULES.resolve())
    (folder / TS_SCRIPT.name).symlink_to(TS_SCRIPT)
    return folder / TS_SCRIPT.name


def bench_ts(servers: list[Peer], rounds: int, calls: int, scratch: Path) -> None:
    """The client part again, through the TypeScript SDK v2 client (``peers_ts.mjs``); here it is checked and
    tabulated."""
    config = {
        "servers": [{"name": peer.name, "command": peer.command, "calls": peer.calls} for peer in servers],
        "operations": OPERATIONS,
        "counts": {op: calls_for(op, calls) for op in OPERATIONS},
        "rounds": rounds,
        "warmUp": WARM_UP,
        "settleMs": SETTLE * 1000,
    }
    command = ["node", "--preserve-symlinks-main", str(ts_entry(scratch)), json.dumps(config)]
    done = subprocess.run(command, stdout=subprocess.PIPE, check=False)
    if done.returncode != 0:
        sys.exit(f"bench/peers_ts.mjs failed ({done.returncode}); its stderr is above")
    figures = Figures()
    returned: dict[str, dict[str, int]] = {}
    schemas: dict[str, list[str]] = {}
    validated: list[dict[str, Any]] = []
    for line in done.stdout.decode().splitlines():
        row = json.loads(line)
        if row["kind"] == "time":
            figures.add(row["op"], row["peer"], row["ms"])
        elif row["kind"] == "returned":
            returned.setdefault(row["op"], {})[row["peer"]] = row["chars"]
        elif row["kind"] == "tools":
            schemas[row["peer"]] = row["withOutputSchema"]
        elif row["kind"] == "validated":
            validated.append(row)
    say_reads(returned)
    say_validation(servers, schemas, validated)
    figures.table("through the TypeScript SDK v2 Client over stdio (ms per call)", OPERATIONS, FAST_TARGETS)


def say_validation(servers: list[Peer], schemas: dict[str, list[str]], validated: list[dict[str, Any]]) -> None:
    """Which answers the TS client validated against the listed outputSchema (AJV): every call of a tool that
    declares one, else the comparison would flatter whoever skipped it."""
    tools = {peer.name: peer.calls for peer in servers}
    print()
    for peer in servers:
        rows = []
        for row in validated:
            if row["peer"] != peer.name or row["op"] == "noop":
                continue
            declared = tools[peer.name][row["op"]][0] in schemas[peer.name]
            assert row["validations"] == (row["calls"] if declared else 0), (peer.name, row, schemas[peer.name])
            each = row["ms"] / max(row["validations"], 1) * 1000
            done = f"{row['validations']}/{row['calls']} {each:.0f} µs" if declared else "-"
            rows.append(f"{row['op']} {done}")
        print(f"  {peer.name}: calls validated against the outputSchema / made, µs in AJV each: {', '.join(rows)}")


def _params(peer: Peer) -> StdioServerParameters:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return StdioServerParameters(command=peer.command[0], args=peer.command[1:], env=env)


def main() -> None:
    warnings.filterwarnings("ignore", "ping is removed")  # the handshake era still has it; both servers answer
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200, help="calls per round for the fast operations")
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--only", default="client,raw,start,exit")
    parser.add_argument("--rootbound-src", help="import rootbound from this src/ directory (a before/after run)")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="rootbound-peers-") as temp:
        tree = Path(temp) / "tree"
        make_tree(tree, args.files)
        servers = peers(tree, args.rootbound_src)
        load = os.getloadavg()
        print(
            f"rootbound serve vs @modelcontextprotocol/server-filesystem {REFERENCE_VERSION} "
            f"(node {subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip()}, "
            f"python {sys.version.split()[0]}); {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f}; "
            f"{args.rounds} interleaved rounds, {args.calls} calls per round, {args.files} files"
            + (f"; rootbound from {args.rootbound_src}" if args.rootbound_src else "")
        )
        steps: list[tuple[str, Callable[[], Any]]] = [
            ("client", lambda: anyio.run(bench_client, servers, args.rounds, args.calls)),
            ("raw", lambda: bench_raw(servers, args.rounds, args.calls)),
            ("start", lambda: bench_lifecycle(servers, max(args.rounds, 5))),
            ("ts", lambda: bench_ts(servers, args.rounds, args.calls, Path(temp))),
        ]
        for name, step in steps:
            if name in parts or (name == "start" and "exit" in parts):
                step()
        print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
