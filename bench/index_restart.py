"""Issue 51's rows of ``bench/search_real.py``: the first grep of a **new** ``rootbound serve`` process, next to
ripgrep, in one run.

Each row starts a new server over stdio (the way an MCP host starts one per chat session), times its start-up (spawn
to the ``initialize`` answer) and its first grep sent right after ``initialized``, then waits for its index to be
ready (how long after start) and times one more grep (``[index]``); its peak RSS (``VmHWM``) is read before it exits.
``rg`` runs the same search on the same tree right before (median of its runs). The answer of every first grep is
compared with a ``--no-index`` server's (a full scan): a difference fails the run.

Rows, each for a literal and a regex with a required literal, with the ignore files (vs ``rg --hidden
--no-require-git -g '!.git'``) and with ``include_ignored`` (vs ``rg -uu``):

* ``never indexed``: no saved index (``--clear-index`` first): the cold first grep;
* ``unchanged``: the tree as the last server left it, its index saved;
* ``1% changed``: 1% of the files rewritten (a line appended, or taken off again) while no server ran;
* ``git checkout``: the tree is a git work tree (made once: every file committed on ``main``, a branch ``other``
  with 3% of the files changed, added or removed); each row checks out the other branch first.

The server's cache is a folder of this run (``XDG_CACHE_HOME``), so the user's own is never touched.

``--baseline PYTHON`` (e.g. ``/work/main/.venv/bin/python``): the ``unchanged`` and ``1% changed`` rows of that
checkout's server and of this one side by side in one run, each the median of ``--repeat`` new servers, the order of
the two swapped each time (:func:`baseline_rows`).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LITERAL = "getaddrinfo"
REGEX = r"def get[a-z]+info\("
RG_UU = ["rg", "-n", "-uu", "--no-messages"]
RG_IGN = ["rg", "-n", "--hidden", "--no-require-git", "-g", "!.git", "--no-messages"]


class Server:
    """A new ``rootbound serve`` over stdio, driven by hand (JSON lines): no SDK start-up in the timing."""

    def __init__(self, root: Path, env: dict[str, str], *extra: str, python: str = sys.executable) -> None:
        began = time.perf_counter()
        self.process = subprocess.Popen(
            [python, "-m", "rootbound", "serve", *extra, str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.began = began
        self.next = 1
        self.request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "0"}},
        )
        self.startup = time.perf_counter() - began
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        ident, self.next = self.next, self.next + 1
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise SystemExit("the server exited")
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == ident:
                return message

    def grep(self, arguments: dict[str, Any]) -> tuple[float, str]:
        began = time.perf_counter()
        answer = self.request("tools/call", {"name": "grep", "arguments": arguments})
        took = time.perf_counter() - began
        return took, answer["result"]["content"][0]["text"]

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _body(text: str) -> str:
    lines = text.splitlines()
    status = lines and (lines[-1] == "[index]" or lines[-1].startswith("[scan"))
    return "\n".join(lines[:-1] if status else lines)


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def make_git_tree(root: Path) -> None:
    """``root`` as a git work tree (once): everything on ``main``, and ``other`` with 3% of the files changed,
    added or removed."""
    if (root / ".git").is_dir():
        return
    print(f"making {root} a git work tree (once)...", file=sys.stderr, flush=True)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "-c", "core.autocrlf=false", "add", "-A", "-f")
    _git(root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "main")
    _git(root, "checkout", "-q", "-b", "other")
    files = sorted(p for p in _git(root, "ls-files", "-z").split("\0") if p)
    rng = random.Random(51)
    for rel in rng.sample(files, len(files) * 3 // 100):
        path = root / rel
        kind = rng.random()
        if kind < 0.6:
            with path.open("ab") as out:
                out.write(b"\ndef getotherinfo(): return 'getaddrinfo on the other branch'\n")
        elif kind < 0.8:
            path.unlink()
        else:
            path.with_name(path.name + ".other.py").write_text("def getnewinfo(): pass  # getaddrinfo\n")
    _git(root, "add", "-A", "-f")
    _git(root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "other")
    _git(root, "checkout", "-q", "main")


def change_one_percent(root: Path, flip: list[bool]) -> None:
    """1% of the files (the same ones each time, chosen once): a line appended, or taken off again."""
    files = sorted(p for p in _git(root, "ls-files", "-z").split("\0") if p.endswith(".py"))
    chosen = random.Random(7).sample(files, max(1, len(files) // 100))
    flip[0] = not flip[0]
    for rel in chosen:
        path = root / rel
        if not path.exists():
            continue
        data = path.read_bytes()
        tail = b"\n# getaddrinfo changed while no server ran\n"
        path.write_bytes(data + tail if flip[0] else data.removesuffix(tail))


def rg_seconds(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def one_row(
    root: Path, env: dict[str, str], arguments: dict[str, Any], want: str, python: str = sys.executable
) -> dict[str, float]:
    """A new server (run by ``python``): start-up, its first grep right after ``initialized`` (checked against
    ``want``), seconds to its index ready, a grep then, its peak RSS."""
    server = Server(root, env, "--index-status", "always", python=python)  # the status on every answer
    try:
        first, text = server.grep(arguments)
        if _body(text) != want:
            raise SystemExit(f"the first grep differs from a full scan: {arguments}")
        end = time.monotonic() + 600
        ready = -1.0
        warm = -1.0
        while time.monotonic() < end:  # a cheap probe (a walk, no file read) until the index answers
            probe = server.request("tools/call", {"name": "search_files", "arguments": {"pattern": "*.no-such-name"}})
            if probe["result"]["content"][0]["text"].endswith("[index]"):
                ready = time.perf_counter() - server.began
                warm, text = server.grep(arguments)
                if _body(text) != want:
                    raise SystemExit(f"the index's answer differs from a full scan: {arguments}")
                break
            time.sleep(0.5)
        return {"startup": server.startup, "first": first, "ready": ready, "warm": warm, "rss": server.rss_mib()}
    finally:
        server.close()


def restart_rows(root: Path, runs: int = 3) -> None:
    """Print the rows (see the module's docstring)."""
    make_git_tree(root)
    _git(root, "checkout", "-q", "-f", "main")
    cache = Path(tempfile.mkdtemp(prefix="rootbound-bench-cache-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONWARNINGS": "ignore"}
    searches: list[tuple[str, dict[str, Any], list[str]]] = [
        ("literal", {"pattern": LITERAL}, [*RG_IGN, "-F", LITERAL, str(root)]),
        ("regex", {"pattern": REGEX, "regex": True}, [*RG_IGN, REGEX, str(root)]),
        ("literal -uu", {"pattern": LITERAL, "include_ignored": True}, [*RG_UU, "-F", LITERAL, str(root)]),
        ("regex -uu", {"pattern": REGEX, "regex": True, "include_ignored": True}, [*RG_UU, REGEX, str(root)]),
    ]
    flip = [False]
    branch = ["main"]
    files = sum(len(f) for _, _, f in os.walk(root))
    print(
        f"\nissue 51: first grep of a new server process; tree {root}: {files:,} files; load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'row':<34} {'start s':>8} {'first s':>8} {'rg s':>7} {'ratio':>6} {'ready s':>8} {'[index] s':>9} "
        f"{'ratio':>6} {'RSS MiB':>8}"
    )

    def before(scenario: str) -> None:
        if scenario == "never indexed":
            subprocess.run(
                [sys.executable, "-m", "rootbound", "serve", "--clear-index"], env=env, check=True, capture_output=True
            )
        elif scenario == "1% changed":
            change_one_percent(root, flip)
        elif scenario == "git checkout":
            branch[0] = "other" if branch[0] == "main" else "main"
            _git(root, "checkout", "-q", "-f", branch[0])

    for scenario in ("never indexed", "unchanged", "1% changed", "git checkout"):
        for label, arguments, rg in searches:
            before(scenario)
            scan = Server(root, env, "--no-index")
            try:
                _, want = scan.grep(arguments)
            finally:
                scan.close()
            rg_s = rg_seconds(rg, runs)
            got = one_row(root, env, arguments, _body(want))
            print(
                f"{scenario + ': ' + label:<34} {got['startup']:>8.2f} {got['first']:>8.2f} {rg_s:>7.2f} "
                f"{got['first'] / rg_s:>5.2f}x {got['ready']:>8.2f} {got['warm']:>9.3f} {got['warm'] / rg_s:>5.3f}x "
                f"{got['rss']:>8.0f}",
                flush=True,
            )
    _git(root, "checkout", "-q", "-f", "main")
    shutil.rmtree(cache, ignore_errors=True)


def baseline_rows(root: Path, baseline: str, scenarios: list[str], repeat: int, runs: int = 3) -> None:
    """Each row for ``baseline`` (another checkout's interpreter, e.g. main's ``.venv/bin/python``) and for this
    checkout, side by side in one run: per repeat the tree is prepared once, then both servers run on it (in
    turn, the order swapped each repeat), each with its own cache folder; the medians of ``repeat`` first greps,
    ``rg`` (median of its runs each repeat) beside. Both answers are checked against a ``--no-index`` scan."""
    make_git_tree(root)
    _git(root, "checkout", "-q", "-f", "main")
    sides = {"baseline": baseline, "this": sys.executable}
    caches = {side: Path(tempfile.mkdtemp(prefix=f"rootbound-bench-{side}-")) for side in sides}
    envs = {side: {**os.environ, "XDG_CACHE_HOME": str(caches[side]), "PYTHONWARNINGS": "ignore"} for side in sides}
    searches: list[tuple[str, dict[str, Any], list[str]]] = [
        ("literal", {"pattern": LITERAL}, [*RG_IGN, "-F", LITERAL, str(root)]),
        ("regex", {"pattern": REGEX, "regex": True}, [*RG_IGN, REGEX, str(root)]),
        ("literal -uu", {"pattern": LITERAL, "include_ignored": True}, [*RG_UU, "-F", LITERAL, str(root)]),
        ("regex -uu", {"pattern": REGEX, "regex": True, "include_ignored": True}, [*RG_UU, REGEX, str(root)]),
    ]
    for side in sides:  # each side's saved index of the tree as it stands
        one_row(root, envs[side], searches[0][1], _want(root, envs[side], searches[0][1]), sides[side])
    flip = [False]
    print(f"\nissue 51, {baseline} vs {sys.executable}; tree {root}; median of {repeat}; load {os.getloadavg()[0]:.1f}")
    print(f"{'row':<30} {'rg s':>6} {'base s':>7} {'ratio':>6} {'this s':>7} {'ratio':>6} {'this/base':>9}")
    for scenario in scenarios:
        for label, arguments, rg in searches:
            firsts: dict[str, list[float]] = {side: [] for side in sides}
            rgs: list[float] = []
            for turn in range(repeat):
                if scenario == "1% changed":
                    change_one_percent(root, flip)
                want = _want(root, envs["this"], arguments)
                rgs.append(rg_seconds(rg, runs))
                for side in list(sides)[:: 1 if turn % 2 == 0 else -1]:
                    firsts[side].append(one_row(root, envs[side], arguments, want, sides[side])["first"])
            rg_s = statistics.median(rgs)
            base, this = statistics.median(firsts["baseline"]), statistics.median(firsts["this"])
            print(
                f"{scenario + ': ' + label:<30} {rg_s:>6.2f} {base:>7.2f} {base / rg_s:>5.2f}x {this:>7.2f} "
                f"{this / rg_s:>5.2f}x {this / base:>8.2f}x   load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    _git(root, "checkout", "-q", "-f", "main")
    for cache in caches.values():
        shutil.rmtree(cache, ignore_errors=True)


def _want(root: Path, env: dict[str, str], arguments: dict[str, Any]) -> str:
    scan = Server(root, env, "--no-index")
    try:
        return _body(scan.grep(arguments)[1])
    finally:
        scan.close()


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("runs", type=int, nargs="?", default=3, help="rg runs per row (median)")
    parser.add_argument("--baseline", help="another checkout's interpreter: its rows beside this one's, one run")
    parser.add_argument("--scenarios", default="unchanged,1% changed", help="with --baseline: which rows")
    parser.add_argument("--repeat", type=int, default=3, help="with --baseline: first greps per row (median)")
    options = parser.parse_args()
    if options.baseline:
        baseline_rows(options.tree.resolve(), options.baseline, options.scenarios.split(","), options.repeat)
    else:
        restart_rows(options.tree.resolve(), options.runs)
