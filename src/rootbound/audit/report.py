"""Findings, coverage and the audit report: a readable terminal summary (coverage first), JSON, and SARIF 2.1.0.

Every probe that proved an escape is kept (:meth:`Report.add`); grouping into root causes happens once, after the
run (:meth:`Report.fold_causes`), over the whole set and in a fixed order, so the same server gives the same groups
every run and a distinct bug is never folded into another because of which probe answered first. Fingerprints
hash only what is stable between runs (server label, mode, tool, parameter, class, kind), never trap paths.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from rootbound import __version__
from rootbound.audit.classes import CLASSES, SEVERITIES, Kind, Severity, by_id
from rootbound.audit.shown import shown

__all__ = [
    "EXIT_FINDINGS",
    "EXIT_INCOMPLETE",
    "EXIT_OK",
    "Finding",
    "ModeRun",
    "ParamStatus",
    "Report",
    "ToolStatus",
]

# Classes whose own evidence stands apart from "no check at all" (kept even when outside-absolute fired).
_INDEPENDENT = {"hardlink", "fifo-block", "stale-roots", "empty-roots", "ignores-roots"}
# Behaviours of the whole server, not of one tool: one finding per mode, whatever tools showed it.
SERVER_WIDE = {"stale-roots", "empty-roots", "ignores-roots", "fifo-block"}
WORKSPACE = "ws"  # the trap's workspace location: siblings sharing its prefix are "ws-evil", "ws.", "ws "
# Mode statuses that mean the server does not offer that mode (not a gap in the audit).
DONE = ("tested", "no path")  # a parameter row that is no gap ("no path": a dispatcher's action that takes none)
NOT_OFFERED = {"roots unsupported", "not applicable", "not requested"}

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_INCOMPLETE = 2


@dataclass
class Finding:
    class_id: str
    kind: Kind
    severity: Severity
    tool: str
    mode: str
    param: str
    probe: str  # the path spelling that escaped
    evidence: str
    request: str  # exact JSON-RPC request reproducing it
    location: str = ""  # the outside location the evidence came from ("far", "ws-evil", "second", ...)
    source: str = "answer"  # what saw it: the answer, the kernel (inotify), the trap snapshot, or behaviour
    also: int = 0  # further probes that proved the same root cause
    tools: list[str] = field(default_factory=list)  # server-wide findings: every tool that showed it

    @property
    def key(self) -> tuple[str, str, str, str]:
        """The root cause: (tool, parameter, class, kind); a server-wide behaviour has no tool or parameter."""
        if self.server_wide:
            return ("", "", self.class_id, self.kind)
        return (self.tool, self.param, self.class_id, self.kind)

    @property
    def server_wide(self) -> bool:
        """One root cause for the whole server: a roots behaviour, a FIFO hang, or the hard link in W read as the
        informational note it is (a hard link is the file itself: no path check can see it), whatever tool read it."""
        return self.class_id in SERVER_WIDE or (self.class_id == "hardlink" and self.severity == "info")

    def fingerprint(self, server: str) -> str:
        tool, param, class_id, kind = self.key
        text = "\x1f".join((server, self.mode, tool, param, class_id, kind))
        return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass
class ParamStatus:
    """Coverage of one path parameter of one tool (call shape) in one mode."""

    param: str
    status: str = "not tested"  # "tested" (control passed, every probe sent), "partly tested", "blocked", "not tested"
    detail: str = ""  # the server's refusal (bounded, escaped) or why it was not tested
    style: str = ""
    shape: str = ""
    evidence: str = ""  # what the control proved: read, list, meta, write, open (the kernel saw it), path (named)
    probes: int = 0
    classes: list[str] = field(default_factory=list)  # the escape classes its probes tried (found or not)


@dataclass
class ToolStatus:
    name: str
    access: str  # "read", "write", "skip"
    tested: bool = False
    style: str = ""
    shape: str = ""
    evidence: str = ""
    probes: int = 0
    note: str = ""
    takes_path: bool = True  # a tool with a path parameter (or an empty schema): it counts for the verdict
    reaches: str = ""  # why it can name files though it was not probed (free_text.py): a gap, never clean
    params: list[ParamStatus] = field(default_factory=list)

    @property
    def covered(self) -> bool:
        return not self.takes_path or (bool(self.params) and all(p.status in DONE for p in self.params))


@dataclass
class ModeRun:
    mode: str  # "args", "roots", "roots-2026"
    # ok, did not start, roots unsupported, ignores roots, hung, not applicable, no testable tool, no path tool
    status: str = "ok"
    protocol_version: str = ""
    seconds: float = 0.0
    calls: int = 0
    detail: str = ""
    tools: list[ToolStatus] = field(default_factory=list)

    @property
    def tested(self) -> bool:
        return any(t.tested for t in self.tools)


@dataclass
class Report:
    server: str
    trap: str
    write: bool
    modes: list[ModeRun] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    incomplete_reason: str = ""
    accept_partial: bool = False
    stderr_log: str = ""  # where the server's stderr went
    stderr_note: str = ""  # how much of it was kept
    unparseable: int = 0  # stdout lines from the server that were not JSON-RPC
    unparseable_sample: str = ""
    trap_kept: bool = False
    seed: str = ""  # rebuilds the same trap (names, tokens, mtimes): rootbound audit --replay
    command: list[str] = field(default_factory=list)  # the server command as given (for --replay)
    workspace_kind: str = "dir"
    far: dict[str, str] = field(default_factory=dict)  # canaries beyond the trap: location -> directory (--replay)
    typed: dict[str, dict[str, str]] = field(default_factory=dict)  # typed canaries: shape -> location -> path
    notes: list[str] = field(default_factory=list)  # what was capped, skipped or cut short

    def add(self, finding: Finding) -> None:
        """Keep every probe that proved an escape; :meth:`fold_causes` groups them after the run."""
        finding.tool, finding.param = shown(finding.tool, 120), shown(finding.param, 120)
        if len(self.findings) < 5000:  # a server that "escapes" on every probe cannot grow the report without end
            self.findings.append(finding)
        else:
            self.findings[-1].also += 1

    def fold_causes(self) -> None:
        """Group the probes into root causes, per mode: (tool, parameter, class, kind).

        No check at all (``outside-absolute``) explains every other escape of that tool and parameter. A
        string-prefix check (``prefix-bypass``) explains every probe that landed in a sibling sharing W's prefix
        (``ws-evil``, ``ws.``, ``ws "``), except ``symlink-prefix``, which is its own bug; a look-alike that does
        not share the prefix (``WS``, ``ｗｓ``) stays its own finding. Server-wide behaviours are one finding per
        mode. The representative of a group is its first probe in sorted order: the same set, the same report.
        """
        # the representative of a group is the plainest proof: an answer before the snapshot before the kernel
        rank = {"answer": 0, "snapshot": 1, "behaviour": 2, "kernel": 3}
        raw = sorted(
            self.findings,
            key=lambda f: (f.mode, *f.key, f.tool, f.param, rank.get(f.source, 4), f.location, f.probe, f.evidence),
        )
        raw = self._fold_ignored_roots(raw)
        present = {(f.mode, f.tool, f.param, f.kind, f.class_id) for f in raw}
        tools_with = {(f.mode, f.tool, f.class_id) for f in raw}

        def cause(f: Finding) -> str | None:
            if f.class_id in ("stale-roots", "empty-roots") and (f.mode, f.tool, "outside-absolute") in tools_with:
                return "outside-absolute"  # a tool with no check serves a removed root too: not a roots bug
            if f.class_id in _INDEPENDENT:
                return None
            if f.class_id != "outside-absolute" and (f.mode, f.tool, f.param, f.kind, "outside-absolute") in present:
                return "outside-absolute"
            shares_prefix = f.location.startswith(WORKSPACE) and f.location != WORKSPACE
            if (
                shares_prefix
                and f.class_id not in ("prefix-bypass", "symlink-prefix", "outside-absolute")
                and (f.mode, f.tool, f.param, f.kind, "prefix-bypass") in present
            ):
                return "prefix-bypass"
            return None

        groups: dict[tuple[str, ...], Finding] = {}
        folded: list[tuple[Finding, str]] = []
        for f in raw:
            target = cause(f)
            if target is not None:
                folded.append((f, target))
                continue
            key = (f.mode, *f.key)
            if key in groups:
                head = groups[key]
                head.also += 1 + f.also
                if f.tool not in head.tools:
                    head.tools.append(f.tool)
            else:
                f.tools = [f.tool]
                groups[key] = f
        for f, target in folded:
            for head in groups.values():
                if head.mode != f.mode or head.tool != f.tool or head.class_id != target:
                    continue
                if head.param == f.param and (head.kind == f.kind or f.kind == "roots"):
                    head.also += 1 + f.also
                    break
                if f.kind == "roots":
                    head.also += 1 + f.also
                    break
        self.findings = sorted(groups.values(), key=lambda f: (f.mode, *f.key))

    @staticmethod
    def _fold_ignored_roots(raw: list[Finding]) -> list[Finding]:
        """In a mode where the server never asked for roots, the ``ignores-roots`` finding (on the tool whose
        control first served W) takes that tool's own escapes, its worst severity and its worst escape as
        evidence. Every other tool's escape stays its own finding at its own severity: what a tool reaches (a
        write outside is critical, a read high) is that tool's, whatever else the server ignores."""
        ignoring = {f.mode: f for f in raw if f.class_id == "ignores-roots"}
        if not ignoring:
            return raw
        kept: list[Finding] = []
        for f in raw:
            head = ignoring.get(f.mode)
            if head is None or f is head or f.tool != head.tool:
                kept.append(f)
                continue
            head.also += 1 + f.also
            if f.tool not in head.tools:
                head.tools.append(f.tool)
            if SEVERITIES.index(f.severity) > SEVERITIES.index(head.severity):
                head.severity = f.severity
                head.evidence = (
                    f"the server never requested roots, and {f.tool} {f.param} reached outside them "
                    f"({f.kind}: {f.evidence})"
                )
                head.probe, head.request, head.location, head.tool, head.param = (
                    f.probe,
                    f.request,
                    f.location,
                    f.tool,
                    f.param,
                )
        return kept

    # -- coverage and the verdict ----------------------------------------------------------------------

    def gaps(self) -> list[str]:
        """Everything the audit did not test, one line each (escaped): each is a reason for exit 2."""
        out: list[str] = []
        if self.incomplete_reason:
            out.append(self.incomplete_reason)
        started = [m for m in self.modes if m.tools]
        pathless = bool(started) and all(m.status == "no path tool" for m in started)
        if not any(m.tested for m in self.modes) and not pathless:
            # (a server none of whose tools takes a path has nothing to test: that is clean, not a gap)
            out.append("no tool was tested in any mode")
        for m in self.modes:
            if m.status in NOT_OFFERED:
                continue
            out += [f"mode {m.mode}: {t.name} not tested ({t.reaches})" for t in m.tools if t.reaches and not t.probes]
            if m.status == "no path tool":
                continue  # none of its tools takes a path parameter: nothing else to test
            if m.status not in ("ok", "ignores roots"):  # ignoring roots is a finding, and its tools were probed
                out.append(f"mode {m.mode}: {m.status}" + (f" ({m.detail})" if m.detail else ""))
                continue
            for t in m.tools:
                if t.covered:
                    continue
                if not t.params:
                    out.append(f"mode {m.mode}: {t.name} not tested ({t.note or t.access})")
                for p in t.params:
                    if p.status not in DONE:
                        why = f": {p.detail}" if p.detail else ""
                        out.append(f"mode {m.mode}: {t.name} {p.param} {p.status}{why}")
        return out

    @property
    def incomplete(self) -> bool:
        return bool(self.gaps())

    def at_or_above(self, level: Severity) -> list[Finding]:
        floor = SEVERITIES.index(level)
        return [f for f in self.findings if SEVERITIES.index(f.severity) >= floor]

    def exit_code(self, fail_on: Severity, accept_partial: bool | None = None) -> int:
        """1 for findings at or above ``fail_on``; else 2 while anything is untested (unless the gaps are
        accepted, and something was tested, and the audit ran to its end); else 0."""
        if self.at_or_above(fail_on):
            return EXIT_FINDINGS
        accept = self.accept_partial if accept_partial is None else accept_partial
        if not self.gaps():
            return EXIT_OK
        if accept and any(m.tested for m in self.modes) and not self.incomplete_reason:
            return EXIT_OK
        return EXIT_INCOMPLETE

    def coverage(self) -> list[dict[str, str]]:
        """The coverage table: mode x tool x parameter -> tested / blocked (the server's message) / not tested."""
        rows: list[dict[str, str]] = []
        for m in self.modes:
            if not m.tools:
                rows.append({"mode": m.mode, "tool": "", "param": "", "status": m.status, "detail": m.detail})
            for t in m.tools:
                if not t.params:
                    status = "not tested" if t.takes_path or t.reaches else "not a path tool"
                    detail = t.reaches or t.note
                    rows.append({"mode": m.mode, "tool": t.name, "param": "", "status": status, "detail": detail})
                for p in t.params:
                    rows.append(
                        {"mode": m.mode, "tool": t.name, "param": p.param, "status": p.status, "detail": p.detail}
                    )
        return rows

    def ordered(self) -> list[Finding]:
        """The findings (one per root cause and mode) in the order the text shows them: worst first, then by root
        cause, then by mode. The JSON lists them in this order, so ``--replay REPORT N`` is the text's ``#N``."""
        modes = {m.mode: i for i, m in enumerate(self.modes)}
        return sorted(
            self.findings, key=lambda f: (-SEVERITIES.index(f.severity), *f.key, modes.get(f.mode, 99), f.mode)
        )

    def causes(self) -> list[tuple[Finding, list[str]]]:
        """Root causes across modes, worst first, with the modes that showed each (the first finding of each is
        its representative, numbered as in :meth:`ordered`)."""
        groups: dict[tuple[str, str, str, str], tuple[Finding, list[str]]] = {}
        for f in self.ordered():
            if f.key in groups:
                groups[f.key][1].append(f.mode)
            else:
                groups[f.key] = (f, [f.mode])
        return list(groups.values())  # already worst first: a root cause's severity is its worst mode's

    # -- renderings ------------------------------------------------------------------------------------

    def _verdict(self) -> str:
        gaps = self.gaps()
        if self.at_or_above("low"):
            return "findings"
        if gaps:
            if self.exit_code("info") != EXIT_OK:
                return "incomplete"
            untested = [m.mode for m in self.modes if m.status not in (*NOT_OFFERED, "no path tool") and not m.tested]
            partly = [m.mode for m in self.modes if m.tested and not all(t.covered for t in m.tools)]
            said = "; ".join(
                x
                for x in (
                    f"mode {', '.join(untested)} not tested at all" if untested else "",
                    f"mode {', '.join(partly)} partly tested" if partly else "",
                )
                if x
            )
            return f"incomplete (accepted with --accept-partial: {said or 'gaps'})"
        return "clean"

    def to_json(self) -> dict[str, Any]:
        cause_of = {f.key: i for i, (f, _) in enumerate(self.causes(), start=1)}
        return {
            "tool": {"name": "rootbound audit", "version": __version__},
            "server": shown(self.server, 400),
            "trap": self.trap,
            "trapKept": self.trap_kept,
            "seed": self.seed,
            "command": self.command,
            "workspaceKind": self.workspace_kind,
            "beyondTrap": self.far,
            "typedCanaries": self.typed,
            "write": self.write,
            "seconds": round(self.seconds, 2),
            "verdict": self._verdict(),
            "incomplete": self.incomplete,
            "incompleteReason": self.incomplete_reason or None,
            "gaps": self.gaps(),
            "coverage": self.coverage(),
            "serverStderr": {"file": self.stderr_log, "note": self.stderr_note},
            "unparseableStdoutLines": self.unparseable,
            "notes": self.notes,
            "modes": [asdict(m) for m in self.modes],
            "rootCauses": len(self.causes()),
            "findings": [
                {
                    "number": number,
                    "rootCause": cause_of[f.key],
                    "class": f.class_id,
                    **asdict(f),
                    "request": json.loads(f.request),
                    "fingerprint": f.fingerprint(self.server),
                }
                for number, f in enumerate(self.ordered(), start=1)
            ],
        }

    def to_sarif(self, artifact: str = "mcp-server") -> dict[str, Any]:
        rules = [
            {
                "id": cls.id,
                "name": "".join(part.capitalize() for part in cls.id.split("-")),
                "shortDescription": {"text": cls.title},
                "fullDescription": {"text": cls.description},
                "help": {"text": cls.description + (f" See {cls.reference}." if cls.reference else "")},
                "properties": {"tags": ["security", cls.cwe]},
            }
            for cls in CLASSES
        ]
        index = {cls.id: i for i, cls in enumerate(CLASSES)}
        results = []
        for f in self.findings:
            where = f"tools {', '.join(f.tools)!r}" if f.server_wide else f"tool {f.tool!r} ({f.param})"
            results.append(
                {
                    "ruleId": f.class_id,
                    "ruleIndex": index[f.class_id],
                    "level": _LEVEL[f.severity],
                    "message": {
                        "text": f"{by_id(f.class_id).title}: {where} ({f.mode} mode, {f.kind}) escaped its "
                        f"roots with {shown(f.probe)!r}. Evidence: {f.evidence}. Reproduce: {f.request}"
                    },
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact}}}],
                    "partialFingerprints": {"rootboundAudit/v1": f.fingerprint(self.server)},
                    "properties": {
                        "severity": f.severity,
                        "security-severity": _SECURITY_SEVERITY[f.severity],
                        "tool": f.tool,
                        "param": f.param,
                        "mode": f.mode,
                        "kind": f.kind,
                        "request": json.loads(f.request),
                    },
                }
            )
        return {
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [
                {
                    "tool": {"driver": {"name": "rootbound-audit", "version": __version__, "rules": rules}},
                    "results": results,
                    "invocations": [{"executionSuccessful": not self.incomplete}],
                    "properties": {"verdict": self._verdict(), "gaps": self.gaps(), "coverage": self.coverage()},
                }
            ],
        }

    def summary(self, fail_on: Severity = "low") -> str:
        """One line for the terminal when the report goes to a file (``-o``), even with ``-q``."""
        causes = self.causes()
        worst: dict[str, int] = {}
        for f, _ in causes:
            worst[f.severity] = worst.get(f.severity, 0) + 1
        counts = ", ".join(f"{worst[s]} {s}" for s in reversed(SEVERITIES) if s in worst)
        found = f"{len(causes)} root cause(s) ({counts})" if causes else "no escape found"
        gaps = len(self.gaps())
        return f"rootbound audit: {self._verdict()}: {found}, {gaps} gap(s); exit {self.exit_code(fail_on)}\n"

    def to_text(self) -> str:
        lines = [
            f"rootbound audit: {shown(self.server, 300)}",
            f"  trap {shown(self.trap)}{' (kept)' if self.trap_kept else ''}; writes {'on' if self.write else 'off'}",
        ]
        gaps = self.gaps()
        lines.append("Coverage:" if not gaps else f"Coverage: INCOMPLETE, {len(gaps)} gap(s)")
        for m in self.modes:
            head = f"  mode {m.mode}: {m.status}"
            if m.protocol_version:
                head += f" (protocol {m.protocol_version})"
            tested = sum(1 for t in m.tools if t.tested)
            head += f", {tested}/{sum(1 for t in m.tools if t.takes_path)} path tool(s) tested, {m.calls} calls, "
            head += f"{m.seconds:.1f}s"
            lines.append(head)
            if m.detail:
                lines.append(f"    {m.detail}")
            for t in m.tools:
                if not t.params:
                    if t.takes_path:
                        lines.append(f"    - {t.name}: not tested ({t.note or t.access})")
                    continue
                for p in t.params:
                    what = p.status if p.status != "tested" else f"tested ({p.evidence}, {p.probes} probes)"
                    why = f": {p.detail}" if p.detail and p.status != "tested" else ""
                    mark = "+" if p.status == "tested" else "." if p.status in DONE else "-"
                    lines.append(f"    {mark} {t.name} {p.param}: {what}{why}")
        causes = self.causes()
        number = {id(f): i for i, f in enumerate(self.ordered(), start=1)}
        if not causes:
            lines.append(
                "No escape found." if not gaps else "No escape found in what was tested; the audit is incomplete."
            )
        else:
            per_mode = (
                f" ({len(self.findings)} findings, one per root cause and mode)"
                if len(self.findings) > len(causes)
                else ""
            )
            lines.append(f"{len(causes)} root cause(s){per_mode}:")
        for index, (f, modes) in enumerate(causes, start=1):  # root causes 1..N; the JSON numbers findings
            cls = by_id(f.class_id)
            ref = f" [{cls.reference}]" if cls.reference else ""
            more = f" (+{f.also} more probes)" if f.also else ""
            where = ", ".join(f.tools) if f.server_wide else f"{f.tool} {f.param}".strip()
            lines.append(
                f"  #{index} [{f.severity.upper()}] {cls.title}{ref}: {where} ({f.kind}) in {', '.join(modes)}{more}"
            )
            if number[id(f)] != index:
                lines.append(f"    replay   finding {number[id(f)]} of the JSON (--replay REPORT.json {number[id(f)]})")
            lines.append(f"    seen by  {_EVIDENCE_SOURCE.get(f.source, f.source)}")
            lines.append(f"    probe    {shown(f.probe)!r}")
            lines.append(f"    evidence {f.evidence}")
            lines.append(f"    request  {shown(f.request, 2000)}")
        if gaps:
            accepted = self.exit_code("critical") == EXIT_OK
            lines.append("Incomplete" + (" (accepted with --accept-partial):" if accepted else ":"))
            lines += [f"  {g}" for g in gaps[:40]]
            if len(gaps) > 40:
                lines.append(f"  ... and {len(gaps) - 40} more (see --format json)")
        for note in self.notes:
            lines.append(f"Note: {note}")
        if self.unparseable:
            lines.append(
                f"Note: the server wrote {self.unparseable} line(s) to stdout that are not JSON-RPC "
                f"(first: {self.unparseable_sample})"
            )
        if self.stderr_log:
            lines.append(
                f"Server stderr: {shown(self.stderr_log)}" + (f" ({self.stderr_note})" if self.stderr_note else "")
            )
        if self.findings and not self.trap_kept:
            lines.append(
                "The requests above name files in the trap, which is removed: rerun with --keep-trap to keep it, or "
                "rebuild it with --replay REPORT.json N (from a --format json report)."
            )
        lines.append(f"Done in {self.seconds:.1f}s.")
        return "\n".join(lines) + "\n"


_EVIDENCE_SOURCE: dict[str, str] = {
    "answer": "the answer (an outside canary's token, name or mtime in the result)",
    "kernel": "the kernel (inotify saw the server touch an outside canary during the call)",
    "snapshot": "the trap's snapshot (a file created, changed or deleted outside the roots)",
    "behaviour": "the server's behaviour (roots requests, a blocked call)",
}
_LEVEL: dict[str, str] = {"info": "note", "low": "note", "medium": "warning", "high": "error", "critical": "error"}
_SECURITY_SEVERITY: dict[str, str] = {"info": "0.0", "low": "3.0", "medium": "5.5", "high": "8.0", "critical": "9.5"}
