"""``rootbound audit`` as a library: build a trap, probe a server, judge the evidence, report.

Public pieces: :func:`run_audit` with :class:`AuditOptions` and :class:`ServerSpec` (the runner), :func:`build_trap`
(the trap), :data:`CLASSES` (the class catalogue), :func:`catalogue` (the probes), :func:`judge` (the evidence
judge) and :class:`Report` (text, JSON and SARIF). See docs/audit.md for how to add a class.
"""

from __future__ import annotations

from .classes import CLASSES, EscapeClass
from .judge import Evidence, judge
from .probes import Probe, catalogue
from .report import Finding, ModeRun, Report
from .runner import AuditOptions, run_audit
from .session import ServerSpec
from .trap import Trap, build_trap

__all__ = [
    "CLASSES",
    "AuditOptions",
    "EscapeClass",
    "Evidence",
    "Finding",
    "ModeRun",
    "Probe",
    "Report",
    "ServerSpec",
    "Trap",
    "build_trap",
    "catalogue",
    "judge",
    "run_audit",
]
