"""``rootbound audit`` as a library: build a trap, probe a server, judge the evidence, report.

Public pieces: :func:`run_audit` with :class:`AuditOptions` and :class:`ServerSpec` (the runner), :func:`build_trap`
(the trap), :data:`CLASSES` (the class catalogue), :func:`catalogue` (the probes), :func:`judge` (the evidence
judge) and :class:`Report` (text, JSON and SARIF). See docs/audit.md for how to add a class. The runner's
names load on first use (:mod:`rootbound.core.lazy_exports`), so ``rootbound audit --help`` does not import the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rootbound.audit.classes import CLASSES, EscapeClass
from rootbound.audit.judge import Evidence, judge
from rootbound.audit.probes import Probe, catalogue
from rootbound.audit.report import Finding, ModeRun, Report
from rootbound.audit.trap import Trap, build_trap
from rootbound.core.lazy_exports import lazy_names

if TYPE_CHECKING:
    from rootbound.audit.runner import AuditOptions, run_audit
    from rootbound.audit.session import ServerSpec

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

__getattr__, __dir__ = lazy_names(__name__, {"AuditOptions": "runner", "run_audit": "runner", "ServerSpec": "session"})
