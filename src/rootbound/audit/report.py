"""Findings and the audit report: a readable terminal summary, JSON, and SARIF 2.1.0 for code scanning.

Findings are grouped into root causes (tool × class × kind); each group keeps one reproduction, the exact
JSON-RPC ``tools/call`` request, plus how many other probes proved the same cause. Fingerprints hash only what is
stable between runs (server label, mode, tool, class, kind), never the random trap paths.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from rootbound import __version__
from rootbound.audit.classes import CLASSES, SEVERITIES, Kind, Severity, by_id

__all__ = ["EXIT_FINDINGS", "EXIT_INCOMPLETE", "EXIT_OK", "Finding", "ModeRun", "Report", "ToolStatus"]

# Classes whose own evidence stands apart from "no check at all" (kept even when outside-absolute fired).
_INDEPENDENT = {"hardlink", "fifo-block", "stale-roots", "empty-roots", "ignores-roots"}
WORKSPACE = "ws"  # the trap's workspace location: siblings sharing its prefix are "ws-evil", "ws.", "ws "

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
    also: int = 0  # further probes that proved the same root cause

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.tool, self.class_id, self.kind)

    def fingerprint(self, server: str) -> str:
        text = "\x1f".join((server, self.mode, self.tool, self.class_id, self.kind))
        return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass
class ToolStatus:
    name: str
    access: str  # "read", "write", "skip"
    tested: bool = False
    style: str = ""
    shape: str = ""
    evidence: str = ""  # what the positive control proved: read, list, meta, write
    probes: int = 0
    note: str = ""


@dataclass
class ModeRun:
    mode: str  # "args", "roots", "roots-2026"
    status: str = "ok"  # ok, did not start, roots unsupported, ignores roots, hung, not applicable, no testable tool
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

    def add(self, finding: Finding) -> None:
        """Keep one reproduction per (mode, tool, class, kind); count the rest."""
        for old in self.findings:
            if old.key == finding.key and old.mode == finding.mode:
                old.also += 1
                return
        self.findings.append(finding)

    def fold_causes(self) -> None:
        """Fold findings into the root cause that explains them, per mode, tool and kind.

        No check at all (``outside-absolute``) explains every other escape. A string-prefix check
        (``prefix-bypass``) explains every other probe that landed in a sibling sharing W's prefix (``ws-evil``,
        ``ws.``, ``ws ``), except ``symlink-prefix``, which is its own bug (a link followed, then prefix-compared).
        """

        def cause(f: Finding) -> str | None:
            if f.class_id in ("stale-roots", "empty-roots") and any(
                k[:2] == (f.mode, f.tool) and k[3] == "outside-absolute" for k in present
            ):
                return "outside-absolute"  # a tool with no check serves a removed root too: not a roots bug
            if f.class_id in _INDEPENDENT:
                return None
            if f.class_id != "outside-absolute" and (f.mode, f.tool, f.kind, "outside-absolute") in present:
                return "outside-absolute"
            shares_prefix = f.location.startswith(WORKSPACE) and f.location != WORKSPACE
            if (
                shares_prefix
                and f.class_id not in ("prefix-bypass", "symlink-prefix", "outside-absolute")
                and (f.mode, f.tool, f.kind, "prefix-bypass") in present
            ):
                return "prefix-bypass"
            return None

        present = {(f.mode, f.tool, f.kind, f.class_id) for f in self.findings}
        kept: list[Finding] = []
        folded: list[tuple[Finding, str]] = []
        for f in self.findings:
            target = cause(f)
            if target is None:
                kept.append(f)
            else:
                folded.append((f, target))
        for f, target in folded:
            for r in kept:
                if (r.mode, r.tool, r.class_id) == (f.mode, f.tool, target) and (r.kind == f.kind or f.kind == "roots"):
                    r.also += 1 + f.also
                    break
        self.findings = kept

    @property
    def incomplete(self) -> bool:
        return bool(self.incomplete_reason) or not any(m.tested for m in self.modes)

    def at_or_above(self, level: Severity) -> list[Finding]:
        floor = SEVERITIES.index(level)
        return [f for f in self.findings if SEVERITIES.index(f.severity) >= floor]

    def exit_code(self, fail_on: Severity) -> int:
        if self.at_or_above(fail_on):
            return EXIT_FINDINGS
        return EXIT_INCOMPLETE if self.incomplete else EXIT_OK

    def causes(self) -> list[tuple[Finding, list[str]]]:
        """Root causes (tool × class × kind) across modes, worst first, with the modes that showed each."""
        groups: dict[tuple[str, str, str], tuple[Finding, list[str]]] = {}
        for f in self.findings:
            if f.key in groups:
                groups[f.key][1].append(f.mode)
            else:
                groups[f.key] = (f, [f.mode])
        return sorted(groups.values(), key=lambda g: (-SEVERITIES.index(g[0].severity), g[0].tool, g[0].class_id))

    # -- renderings ------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": {"name": "rootbound audit", "version": __version__},
            "server": self.server,
            "trap": self.trap,
            "write": self.write,
            "seconds": round(self.seconds, 2),
            "incomplete": self.incomplete,
            "incompleteReason": self.incomplete_reason or None,
            "modes": [asdict(m) for m in self.modes],
            "findings": [
                {
                    "class": f.class_id,
                    **asdict(f),
                    "request": json.loads(f.request),
                    "fingerprint": f.fingerprint(self.server),
                }
                for f in self.findings
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
            results.append(
                {
                    "ruleId": f.class_id,
                    "ruleIndex": index[f.class_id],
                    "level": _LEVEL[f.severity],
                    "message": {
                        "text": f"{by_id(f.class_id).title}: tool {f.tool!r} ({f.mode} mode, {f.kind}) escaped its "
                        f"roots with {f.probe!r}. Evidence: {f.evidence}. Reproduce: {f.request}"
                    },
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact}}}],
                    "partialFingerprints": {"rootboundAudit/v1": f.fingerprint(self.server)},
                    "properties": {
                        "severity": f.severity,
                        "security-severity": _SECURITY_SEVERITY[f.severity],
                        "tool": f.tool,
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
                    "tool": {
                        "driver": {
                            "name": "rootbound-audit",
                            "version": __version__,
                            "rules": rules,
                        }
                    },
                    "results": results,
                    "invocations": [{"executionSuccessful": not self.incomplete}],
                }
            ],
        }

    def to_text(self) -> str:
        lines = [f"rootbound audit: {self.server}", f"  trap {self.trap}; writes {'on' if self.write else 'off'}"]
        for m in self.modes:
            tested = [t for t in m.tools if t.tested]
            head = f"  mode {m.mode}: {m.status}"
            if m.protocol_version:
                head += f" (protocol {m.protocol_version})"
            head += f", {len(tested)} tool(s) tested, {m.calls} calls, {m.seconds:.1f}s"
            lines.append(head)
            if m.detail:
                lines.append(f"    {m.detail}")
            for t in m.tools:
                if not t.tested:
                    lines.append(f"    - {t.name}: not tested ({t.note or t.access})")
        causes = self.causes()
        if not causes:
            lines.append("No escape found." if not self.incomplete else "No escape found, but the audit is incomplete.")
        else:
            lines.append(f"{len(causes)} root cause(s):")
        for f, modes in causes:
            cls = by_id(f.class_id)
            ref = f" [{cls.reference}]" if cls.reference else ""
            more = f" (+{f.also} more probes)" if f.also else ""
            lines.append(f"  [{f.severity.upper()}] {cls.title}{ref}: {f.tool} ({f.kind}) in {', '.join(modes)}{more}")
            lines.append(f"    probe    {f.probe!r}")
            lines.append(f"    evidence {f.evidence}")
            lines.append(f"    request  {f.request}")
        if self.incomplete_reason:
            lines.append(f"Incomplete: {self.incomplete_reason}")
        lines.append(f"Done in {self.seconds:.1f}s.")
        return "\n".join(lines) + "\n"


_LEVEL: dict[str, str] = {"info": "note", "low": "note", "medium": "warning", "high": "error", "critical": "error"}
_SECURITY_SEVERITY: dict[str, str] = {"info": "0.0", "low": "3.0", "medium": "5.5", "high": "8.0", "critical": "9.5"}
