"""``rootbound audit`` as a library: build a trap, probe a server, judge the evidence, report.

Public pieces: :func:`run_audit` with :class:`AuditOptions` and :class:`ServerSpec` (the runner), :func:`build_trap`
(the trap), :data:`CLASSES` (the class catalogue), :func:`catalogue` (the probes), :func:`judge` (the evidence
judge) and :class:`Report` (text, JSON and SARIF). See docs/audit.md for how to add a class. The runner's
names load on first use (:mod:`rootbound._lazy`), so ``rootbound audit --help`` does not import the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names
from .classes import CLASSES, EscapeClass
from .judge import Evidence, judge
from .probes import Probe, catalogue
from .report import Finding, ModeRun, Report
from .trap import Trap, build_trap

if TYPE_CHECKING:
    from .runner import AuditOptions, run_audit
    from .session import ServerSpec

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
