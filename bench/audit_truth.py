"""Check ``rootbound audit`` reports against the hand truth: every hand-found escape found at its true severity, no
false escape claim, and every server clean by hand exiting 0.

    python bench/audit_truth.py REPORTS_DIR [TRUTH.tsv] [-v]

REPORTS_DIR is what ``bench/audit_corpus.py LIST --write --reports DIR`` leaves: ``NAME.json`` (the report) and
``NAME.run.json`` (exit code, seconds, peak KiB). TRUTH (default ``bench/audit_truth_published.tsv``) has one
server a line, ``name<TAB>clean|escapes<TAB>TOOL=KIND ...``: each tool through which the server was shown by hand
to reach outside its roots, with the worst kind of access proved (``write`` critical, ``read`` high, ``list``
medium, ``meta`` low; the audit's own scale, ``rootbound.audit.classes.severity_for``). ``A|B=KIND``: one root cause
reached through several tools (a finding on any of them counts); ``roots:*=KIND``: in roots mode the server ignores
the roots and every path tool reaches anywhere (one root cause: a finding on any tool in a roots mode counts, and
a finding in args mode is then a false claim unless another item names it). The hand write-ups in
``bench/audit_published.md`` say how each was proved.

Judged per tool, by the worst severity the report gives it (``info`` findings, such as hard links, are not claims):
``found`` at the true severity, ``under``/``over`` at another, ``missed`` (no finding), ``false`` (a finding on a
tool the hand check found no escape through). A server passes when nothing is missed, false or of the wrong
severity, and its exit code is 1 (escapes) or 0 (clean). Exit 0 when every server passes, 1 otherwise, 64 for a
bad truth file. Printed: counts per server, and with ``-v`` the tools (public tool names and severities only).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXIT_USAGE = 64
KIND_SEVERITY = {"write": "critical", "read": "high", "list": "medium", "meta": "low"}
RANK = {"info": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}


@dataclass
class Truth:
    name: str
    clean: bool
    tools: dict[str, str] = field(default_factory=dict)  # "tool" or "a|b" (one cause, several tools) -> severity


def read_truth(path: Path) -> list[Truth]:
    out: list[Truth] = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        name, expect, *rest = raw.split("\t")
        if expect not in ("clean", "escapes"):
            raise SystemExit(f"{path}:{n}: expected 'clean' or 'escapes', got {expect!r}")
        truth = Truth(name.strip(), expect == "clean")
        for item in " ".join(rest).split():
            if item == "-":
                continue
            tool, _, kind = item.partition("=")
            if kind not in KIND_SEVERITY:
                raise SystemExit(f"{path}:{n}: {item!r}: expected TOOL=read|write|list|meta")
            severity = KIND_SEVERITY[kind]
            if RANK[severity] > RANK[truth.tools.get(tool, "info")]:
                truth.tools[tool] = severity
        if truth.clean == bool(truth.tools):
            raise SystemExit(f"{path}:{n}: a clean server lists no tools; an escaping one lists at least one")
        out.append(truth)
    return out


ROOTS_MODES = ("roots", "roots-2026")


def worst_by_tool(report: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(mode, tool) -> the worst severity of its findings (``info`` ones are not claims)."""
    got: dict[tuple[str, str], str] = {}
    for finding in report.get("findings") or []:
        severity = str(finding.get("severity", "info"))
        key = (str(finding.get("mode", "")), str(finding.get("tool", "")))
        if RANK.get(severity, 0) > RANK[got.get(key, "info")]:
            got[key] = severity
    return got


def _matches(group: str, mode: str, tool: str) -> bool:
    """``a|b``: those tools in any mode; ``roots:*``: any tool in a roots mode (a server that ignores roots)."""
    scope, _, tools = group.rpartition(":")
    if scope == "roots" and mode not in ROOTS_MODES:
        return False
    return tools == "*" or tool in tools.split("|")


def judge(truth: Truth, report: dict[str, Any], exit_code: int | None) -> tuple[dict[str, list[str]], list[str]]:
    """Per outcome, the tools in it; and the problems that fail the server."""
    got = worst_by_tool(report)
    outcome: dict[str, list[str]] = {"found": [], "under": [], "over": [], "missed": [], "false": []}
    for group, severity in sorted(truth.tools.items()):
        seen = [sev for (mode, tool), sev in got.items() if _matches(group, mode, tool)]
        if not seen:
            outcome["missed"].append(f"{group} ({severity})")
            continue
        worst = max(seen, key=lambda s: RANK[s])
        if worst == severity:
            outcome["found"].append(f"{group} ({severity})")
        else:
            key = "under" if RANK[worst] < RANK[severity] else "over"
            outcome[key].append(f"{group} ({worst}, true {severity})")
    for (mode, tool), severity in sorted(got.items()):
        if not any(_matches(group, mode, tool) for group in truth.tools):
            outcome["false"].append(f"{tool} in {mode} ({severity})")
    problems = [f"{len(v)} {k}" for k, v in outcome.items() if k != "found" and v]
    want = 0 if truth.clean else 1
    if exit_code != want:
        problems.append(f"exit {exit_code} (want {want})")
    if not report:
        problems.append("no report")
    return outcome, problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", type=Path)
    parser.add_argument("truth", nargs="?", type=Path, default=Path(__file__).with_name("audit_truth_published.tsv"))
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    try:
        truths = read_truth(args.truth)
    except (OSError, ValueError) as exc:
        print(f"audit_truth: {exc}", file=sys.stderr)
        return EXIT_USAGE
    failed = 0
    print(f"{'server':<28} {'hand':<18} {'exit':>4}  found under over missed false  result")
    for truth in truths:
        report_path = args.reports / f"{truth.name}.json"
        run_path = args.reports / f"{truth.name}.run.json"
        report: dict[str, Any] = json.loads(report_path.read_text()) if report_path.exists() else {}
        run: dict[str, Any] = json.loads(run_path.read_text()) if run_path.exists() else {}
        code = run.get("exit")
        outcome, problems = judge(truth, report, code if isinstance(code, int) else None)
        hand = (
            "clean"
            if truth.clean
            else f"{len(truth.tools)} tools, worst " + max(truth.tools.values(), key=lambda s: RANK[s])
        )
        counts = "  ".join(f"{len(outcome[k]):>{len(k)}}" for k in ("found", "under", "over", "missed", "false"))
        result = "ok" if not problems else "FAIL: " + ", ".join(problems)
        print(f"{truth.name:<28} {hand:<18} {code!s:>4}  {counts}  {result}")
        if args.verbose:
            for key, tools in outcome.items():
                for tool in tools:
                    print(f"    {key:<7} {tool}")
        failed += bool(problems)
    print(f"{len(truths) - failed} of {len(truths)} servers as the hand truth says")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
