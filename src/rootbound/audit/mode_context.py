"""What one audit mode knows while it runs (its peer, what each tool's control proved), and what the roots probes
need of the auditor: kept apart from the runner so that the roots probes and the runner do not import each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from rootbound.audit.probes import Shape, Style
from rootbound.audit.report import ModeRun
from rootbound.audit.session import CallOutcome, CountingProvider, Peer
from rootbound.audit.tools import ToolPlan
from rootbound.audit.trap import Trap

__all__ = ["AuditorView", "Learnt", "ModeContext"]


@dataclass
class Learnt:
    """What a tool's positive control proved: which parameter, spelling style, target shape, evidence kind."""

    plan: ToolPlan
    param: str
    style: Style
    shape: Shape
    kind: str
    pattern: str


@dataclass
class ModeContext:
    name: str
    run: ModeRun
    peer: Peer
    allowed: set[str] = field(default_factory=lambda: {"ws"})
    provider: CountingProvider | None = None
    last: CallOutcome | None = None


class AuditorView(Protocol):
    """The runner's auditor as the roots probes use it."""

    trap: Trap
    fifo_done: bool

    def say(self, message: str) -> None: ...

    def hung(self, ctx: ModeContext) -> bool: ...

    def finding(
        self,
        ctx: ModeContext,
        class_id: str,
        kind: Any,
        tool: str,
        param: str,
        out: CallOutcome,
        evidence: str,
        probe: str = "",
        location: str = "",
    ) -> None: ...
