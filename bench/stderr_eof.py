"""Issue 50 item 5: how long after ``rootbound serve`` (stdio) has exited does its stderr reach its end?

A host that waits for the end of a server's stderr (its log) before calling the server gone waited 1-5 s while the
scan helper outlived the server (the exit path's ``os._exit`` skipped the helper's ``atexit`` close). Target: the
end within 100 ms of the exit. Per session (``tests/helpers/quiet_exit.py``): initialize, tools/list, a grep once
the helper waits for work, stdin closed; measured from the server's wait returning to stderr's end (negative: the
end came first), and the session's processes alive at the exit and 1 s later.

Variants, alternated so machine drift hits all alike: this checkout; this checkout with ``--no-scan-helper`` (no
second process: the floor); with ``--baseline SRC`` that source tree (the code before the fix:
``git archive 760ab21^ src | tar -x -C /tmp/old50``); with ``--command 'ARGV'`` an installed form (pipx's
``rootbound``, ``uvx --from WHEEL rootbound``), given the words before ``serve``.

    .venv/bin/python bench/stderr_eof.py --runs 10 --baseline /tmp/old50/src
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.quiet_exit import run_session


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--baseline", type=Path, help="a source tree (its src/) to run as well")
    parser.add_argument("--command", action="append", default=[], help="an install form's words before 'serve'")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    here = [sys.executable, "-m", "rootbound"]
    variants: list[tuple[str, list[str], list[str], dict[str, str], bool]] = [
        ("this checkout", here, [], env, True),
        ("--no-scan-helper", here, ["--no-scan-helper"], env, False),
    ]
    if args.baseline is not None:
        old = {**env, "PYTHONPATH": str(args.baseline.resolve())}
        variants.append((f"baseline {args.baseline}", here, [], old, True))
    for command in args.command:
        variants.append((command, shlex.split(command), [], env, True))
    results: dict[str, list[float]] = {name: [] for name, *_ in variants}
    at_exit: dict[str, int] = dict.fromkeys(results, 0)
    left: dict[str, int] = dict.fromkeys(results, 0)
    noisy: dict[str, int] = dict.fromkeys(results, 0)
    with tempfile.TemporaryDirectory() as base:
        workspace = Path(base)
        for n in range(300):
            (workspace / f"f{n:03d}.txt").write_text("a needle\n" if n % 10 == 0 else "hay\n")
        for _ in range(args.runs):
            for name, prefix, flags, environment, helper in variants:
                argv = [*prefix, "serve", *flags, str(workspace)]
                session = run_session(argv, workspace, env=environment, cwd=workspace, helper=helper)
                results[name].append(session.eof_after_exit * 1000)
                at_exit[name] += len(session.at_exit)
                left[name] += len(session.left)
                noisy[name] += len(session.stderr) != 1
    print(f"load {os.getloadavg()[0]:.1f}, {len(os.sched_getaffinity(0))} CPUs, {args.runs} sessions each")
    print(f"{'variant':<34} {'median ms':>10} {'max ms':>8} {'alive at exit':>14} {'left 1 s':>9} {'stderr>1':>9}")
    for name, values in results.items():
        print(
            f"{name:<34} {statistics.median(values):>10.1f} {max(values):>8.1f} {at_exit[name]:>14} {left[name]:>9} "
            f"{noisy[name]:>9}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
