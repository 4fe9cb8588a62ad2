"""What one audit mode knows while it runs (its peer, what each parameter's control proved), and what the controls
and the roots probes need of the auditor: kept apart from the runner so that they and the runner do not import
each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from rootbound.audit.causality import Noise
from rootbound.audit.kernel_events import KernelEvent
from rootbound.audit.probes import Probe, Shape, Style, control_paths
from rootbound.audit.report import Finding, ModeRun
from rootbound.audit.session import CallOutcome, CountingProvider, Peer
from rootbound.audit.tools import ToolPlan
from rootbound.audit.trap import Change, Trap

__all__ = ["AuditorView", "Learnt", "ModeContext", "Where"]


@dataclass
class ModeContext:
    name: str
    run: ModeRun
    peer: Peer
    allowed: set[str] = field(default_factory=lambda: {"ws"})
    provider: CountingProvider | None = None
    last: CallOutcome | None = None
    any_control: bool = False  # some control passed in this mode
    retried: bool = False  # the roots-mode retry after waiting for a slow roots fetch was spent
    tool_names: frozenset[str] = frozenset()  # the server's tools: a name an error quotes is not a parameter
    noise: Noise = field(default_factory=Noise)  # what each tool does outside the roots under an inside control


class AuditorView(Protocol):
    """What a control (and the roots probes) need from the auditor that runs them."""

    trap: Trap
    fifo_done: bool

    @property
    def o(self) -> Any: ...

    def say(self, message: str) -> None: ...
    def typed_shape(self, ext: str) -> str: ...
    def hung(self, ctx: ModeContext) -> bool: ...
    def scratch(self, style: str) -> str: ...
    def existing(self, wants: str, style: str) -> str: ...
    def content(self) -> str: ...
    def diff(self) -> list[Change]: ...
    def restore(self, changes: list[Change]) -> None: ...
    def location(self, change: Change) -> str: ...
    def judge_read(
        self, ctx: ModeContext, tool: str, param: str, probe: Probe, out: CallOutcome, *, names_paths: bool = False
    ) -> set[str]: ...
    def judge_kernel(
        self,
        ctx: ModeContext,
        tool: str,
        param: str,
        probe: Probe,
        out: CallOutcome,
        events: list[KernelEvent],
        *,
        skip: set[str] | frozenset[str] = ...,
        control: bool = ...,
    ) -> None: ...
    def window_open(self) -> None: ...
    def findings_of(self, mode: str) -> list[Finding]: ...
    def window_close(self) -> list[KernelEvent]: ...
    def settle(self) -> None: ...
    def judge_write(
        self, ctx: ModeContext, tool: str, param: str, label: str, probe: Probe, out: CallOutcome, changes: list[Change]
    ) -> None: ...
    def finding(
        self,
        ctx: ModeContext,
        class_id: str,
        kind: Any,
        tool: str,
        param: str,
        out: CallOutcome,
        evidence: str,
        where: Where | str = "",
    ) -> None: ...


class Where(NamedTuple):
    """Where a finding was seen: the probe's spelling, the outside location, and what saw it (default: by kind)."""

    probe: str
    location: str = ""
    source: str = ""


@dataclass
class Learnt:
    """What a positive control proved for one parameter: spelling style, target shape, evidence kind."""

    plan: ToolPlan
    param: str
    style: Style
    shape: Shape
    kind: str
    pattern: str
    every: bool = False  # the call needed every path parameter filled (not only the required ones)

    def others(self, host: AuditorView, new: str) -> str:
        """What the tool's other path parameters get: inside W, of the kind the call needs."""
        if self.plan.access == "write":
            if self.shape == "new":
                return host.existing(self.plan.wants, self.style)
            fresh = new if new and not self.plan.wants else host.trap.new_name(self.plan.wants)
            return control_paths(host.trap, "new", self.style, fresh)
        if self.plan.workdir(self.param) and self.shape in ("dir", "clean"):
            return control_paths(host.trap, "file", self.style, new)  # probing the working directory: a file in it
        return control_paths(host.trap, self.shape, self.style, new)

    def workdir(self, host: AuditorView) -> str:
        """What a sibling naming a working directory gets: W itself, in the learnt style."""
        return control_paths(host.trap, "dir", self.style, "")

    @property
    def label(self) -> str:
        return self.plan.label
