"""Audit a list of published MCP servers and print one table: verdict, coverage, findings by severity, time.

    python bench/audit_corpus.py [LIST] [--write] [--budget S] [--only NAME] [--reports DIR]

LIST (default bench/audit_corpus.tsv) has one server per line, ``name<TAB>command``; the command may use
``{workspace}`` (as for ``rootbound audit``), ``{deps}`` (this checkout's .deps/), ``{python}`` (this Python).
Lines starting with ``!`` install what the commands need, into .deps/corpus/ (idempotent):

    !npm  fs-2.0.1  @modelcontextprotocol/server-filesystem@2.0.1     -> {deps}/corpus/npm/node_modules/fs-2.0.1
    !pypi git-latest  mcp-server-git==2026.10.19                      -> {deps}/corpus/pypi/git-latest/bin/...

Each audit runs as a real ``rootbound audit --format json`` process. With ``--reports DIR`` each server's JSON
report is kept as ``DIR/NAME.json`` (its stderr log beside it, and ``NAME.run.json``: exit code, time, peak KiB)
and the audit runs in ``DIR/NAME.cwd/`` (the server's cwd, where a canary is planted), so
``bench/audit_reproduce.py`` can replay every finding by hand and ``bench/audit_truth.py`` can judge the reports
against a hand truth. Only counts are printed (never a third party's findings): what a server does wrong is for
its maintainers, through the advisories the docs cite.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEPS = ROOT / ".deps"
CORPUS = DEPS / "corpus"


def install(kind: str, alias: str, specs: list[str]) -> None:
    if kind == "npm":
        target = CORPUS / "npm" / "node_modules" / alias
        if not target.exists():
            (CORPUS / "npm").mkdir(parents=True, exist_ok=True)
            spec = specs[0]
            subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(CORPUS / "npm"),
                 f"{alias}@npm:{spec}"],
                check=True,
            )  # fmt: skip
    elif kind == "pypi":
        venv = CORPUS / "pypi" / alias
        stamp = venv / ".installed"
        want = " ".join(specs)
        if not stamp.exists() or stamp.read_text() != want:
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *specs], check=True)
            stamp.write_text(want)
    else:
        raise SystemExit(f"unknown installer {kind!r} (npm or pypi)")


def read_list(path: Path) -> list[tuple[str, list[str]]]:
    servers: list[tuple[str, list[str]]] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("!"):
            kind, alias, *specs = line[1:].split()
            install(kind, alias, specs)
            continue
        name, _, command = raw.partition("\t")
        if not command:
            raise SystemExit(f"{path}: expected name<TAB>command, got {raw!r}")
        filled = command.replace("{deps}", str(DEPS)).replace("{python}", sys.executable)
        servers.append((name.strip(), shlex.split(filled)))
    return servers


def _peak_kib(pid: int) -> int:
    """The process's own peak resident set (VmHWM), not its children's (the server's memory is not the audit's)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def audit(
    command: list[str], write: bool, budget: float, keep: Path | None = None
) -> tuple[int, dict[str, object], float, int]:
    """One real ``rootbound audit`` process: exit code, JSON report, wall time, and its peak RSS in KiB (polled
    from /proc while it runs). ``keep`` (``DIR/NAME``): the report, log and cwd are kept there."""
    with tempfile.TemporaryDirectory(prefix="rb-corpus-") as scratch:
        tmp = f"{keep}.cwd" if keep is not None else scratch
        os.makedirs(tmp, exist_ok=True)
        out = Path(f"{keep}.json") if keep is not None else Path(tmp) / "report.json"
        log = Path(f"{keep}.stderr.log") if keep is not None else Path(tmp) / "stderr.log"
        out.unlink(missing_ok=True)
        argv = [sys.executable, "-m", "rootbound", "audit", "-q", "--format", "json", "-o", str(out),
                "--budget", str(budget), "--stderr-log", str(log)]  # fmt: skip
        if write:
            argv.append("--write")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
        started = time.monotonic()
        proc = subprocess.Popen(  # its cwd is the temp dir: the canary planted in the server's cwd lands there
            [*argv, "--", *command], cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        peak = 0
        while proc.poll() is None and time.monotonic() - started < budget + 120:
            peak = max(peak, _peak_kib(proc.pid))
            time.sleep(0.2)
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
        took = time.monotonic() - started
        report = json.loads(out.read_text()) if out.exists() else {}
        return code, report, took, peak


def row(name: str, code: int, report: dict[str, object], took: float, peak: int) -> str:
    coverage = report.get("coverage") or []
    assert isinstance(coverage, list)
    modes = report.get("modes") or []
    assert isinstance(modes, list)
    offered = {m["mode"] for m in modes if m["status"] not in ("roots unsupported", "not applicable")}
    params = [r for r in coverage if r.get("param") and r.get("mode") in offered]
    tested = sum(1 for r in params if r.get("status") == "tested")
    mode_text = " ".join(f"{m['mode']}:{m['status'].replace(' ', '-')}" for m in modes)
    counts: dict[str, int] = {}
    findings = report.get("findings") or []
    assert isinstance(findings, list)
    causes: dict[tuple[str, ...], str] = {}  # root causes across modes, as the text report counts them
    for f in findings:
        causes.setdefault((f["tool"], f["param"], f["class_id"], f["kind"]), f["severity"])
    for severity in causes.values():
        counts[severity] = counts.get(severity, 0) + 1
    kernel = sum(1 for f in findings if f.get("source") == "kernel")
    sev = " ".join(f"{k[0].upper()}{counts[k]}" for k in ("critical", "high", "medium", "low", "info") if k in counts)
    verdict = report.get("verdict", "no report")
    return (
        f"{name:<24} {code:>4} {verdict!s:<12} {tested:>3}/{len(params):<3} {sev or '-':<18} {kernel:>3} "
        f"{took:6.1f}s {peak / 1024:6.1f}  {mode_text}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("list", nargs="?", type=Path, default=Path(__file__).with_name("audit_corpus.tsv"))
    parser.add_argument("--write", action="store_true", help="pass --write to every audit")
    parser.add_argument("--budget", type=float, default=120.0)
    parser.add_argument("--only", action="append", default=[], metavar="NAME")
    parser.add_argument("--reports", type=Path, metavar="DIR", help="keep each JSON report as DIR/NAME.json")
    args = parser.parse_args()
    servers = [(n, c) for n, c in read_list(args.list) if not args.only or n in args.only]
    load = os.getloadavg()[0]
    print(f"rootbound audit corpus: {len(servers)} servers, --write {'on' if args.write else 'off'}, load {load:.1f}")
    print(f"{'server':<24} {'exit':>4} {'verdict':<12} {'tested':<7} {'root causes':<18} {'krn':>3} {'time':>7} "
          f"{'MiB':>6}  modes")  # fmt: skip
    times: list[float] = []
    peaks: list[int] = []
    for name, command in servers:
        if args.reports is not None:
            args.reports.mkdir(parents=True, exist_ok=True)
        keep = args.reports.resolve() / name if args.reports is not None else None
        code, report, took, peak = audit(command, args.write, args.budget, keep)
        if keep is not None:  # what bench/audit_truth.py judges besides the report: the exit code
            Path(f"{keep}.run.json").write_text(json.dumps({"exit": code, "seconds": round(took, 1), "peak_kib": peak}))
        times.append(took)
        peaks.append(peak)
        print(row(name, code, report, took, peak), flush=True)
    if times:
        print(f"time per server: median {statistics.median(times):.1f}s, worst {max(times):.1f}s (wall, with start-up)")
        print(f"audit peak RSS: median {statistics.median(peaks) / 1024:.1f} MiB, worst {max(peaks) / 1024:.1f} MiB")
    print("krn: findings whose evidence the kernel saw (inotify); root causes by severity across modes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
