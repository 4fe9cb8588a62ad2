"""The audit run: per mode, start the server on a fresh view of the trap, learn each tool from a positive control,
fire the probe catalogue, judge every answer, and (in roots mode) test whether removed roots stay served.

Modes: ``args`` (the workspace on the command line, no roots capability), ``roots`` (no workspace argument; the
workspace and a second root given as MCP roots over the handshake era) and ``roots-2026`` (the same over
2026-07-28, when the server speaks it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio

from rootbound.audit.classes import by_id, severity_for
from rootbound.audit.judge import control_evidence, judge, result_text
from rootbound.audit.mode_context import Learnt, ModeContext
from rootbound.audit.probes import Probe, Shape, Style, catalogue, control_paths
from rootbound.audit.report import Finding, ModeRun, Report, ToolStatus
from rootbound.audit.roots_probes import empty_roots, fifo, stale_roots
from rootbound.audit.session import CallOutcome, CountingProvider, ServerSpec, StartFailed, leaf_error, open_peer
from rootbound.audit.tools import ToolPlan, learn_params, plan_learnt, plan_tool
from rootbound.audit.trap import Change, Snapshot, Trap, build_trap, remove

__all__ = ["AuditOptions", "run_audit"]

ModeName = Literal["args", "roots", "both"]
STYLES: tuple[Style, ...] = ("absolute", "relative", "uri")
PATTERNS = ("rbt", "*rbt*", "**/*rbt*")
PARALLEL = 4  # read probes in flight at once


@dataclass
class AuditOptions:
    spec: ServerSpec
    modes: ModeName = "both"
    write: bool = False
    allow_tools: frozenset[str] = frozenset()
    timeout: float = 5.0
    budget: float = 120.0
    trap_dir: Path | None = None
    trap_home: bool = False
    keep_trap: bool = False
    progress: Callable[[str], None] | None = None


class _Auditor:
    def __init__(self, options: AuditOptions, trap: Trap, report: Report) -> None:
        self.o = options
        self.trap = trap
        self.report = report
        self.baseline: Snapshot = trap.snapshot()
        self.hardlinks = {"ws/rbt-hardlink.txt": trap.hardlink.path} if trap.hardlink else {}
        self.fifo_done = False
        env = dict(os.environ)
        env["PWD"] = str(trap.cwd)
        env["TZ"] = "UTC"  # timestamps in answers are matched in UTC
        if options.trap_home:
            env["HOME"] = str(trap.home)
        self.env = env

    def say(self, message: str) -> None:
        if self.o.progress is not None:
            self.o.progress(message)

    # -- modes -----------------------------------------------------------------------------------------

    async def run(self) -> None:
        spec = self.o.spec
        modes: list[str] = []
        if self.o.modes in ("args", "both") and spec.takes_workspace:
            modes.append("args")
        if self.o.modes in ("roots", "both"):
            modes += ["roots", "roots-2026"]
        if self.o.modes == "args" and not spec.takes_workspace:
            self.report.incomplete_reason = "args mode needs {workspace} in the server command"
        args_started = False
        for name in modes:
            run = ModeRun(name)
            self.report.modes.append(run)
            started = time.monotonic()
            try:
                await self.run_mode(name, run)
            except StartFailed as exc:
                detail = str(exc).splitlines()[-1][:200] if str(exc).strip() else ""
                if name.startswith("roots") and (args_started or spec.takes_workspace):
                    run.status, run.detail = "roots unsupported", f"exited or failed without a workspace: {detail}"
                else:
                    run.status, run.detail = "did not start", detail
            except Exception as exc:  # a server that breaks the session mid-mode: report it, audit the next mode
                leaf = leaf_error(exc)
                run.status, run.detail = "failed", f"{type(leaf).__name__}: {str(leaf)[:200]}"
            finally:
                run.seconds = time.monotonic() - started
                self.restore_all()
            if name == "args" and run.status != "did not start":
                args_started = True
            if name == "roots" and run.status in ("roots unsupported", "did not start"):
                self.report.modes.append(ModeRun("roots-2026", "not applicable", detail="see roots mode"))
                break

    async def run_mode(self, name: str, run: ModeRun) -> None:
        roots_mode = name.startswith("roots")
        provider = CountingProvider([self.trap.workspace, self.trap.second]) if roots_mode else None
        era: Any = "legacy" if name == "roots" else "auto"
        self.say(f"{name}: starting the server")
        async with open_peer(
            self.o.spec,
            workspace=None if roots_mode else self.trap.workspace,
            cwd=self.trap.cwd,
            env=self.env,
            era=era,
            provider=provider,
            call_timeout=self.o.timeout,
        ) as peer:
            run.protocol_version = peer.protocol_version
            if name == "roots-2026" and not peer.modern:
                run.status, run.detail = "not applicable", "the server does not speak 2026-07-28"
                return
            ctx = ModeContext(name, run, peer, provider=provider)
            if roots_mode:
                ctx.allowed.add("second")
            try:
                await self.exercise(ctx)
            finally:
                run.calls = peer.calls

    async def exercise(self, ctx: ModeContext) -> None:
        tools = await ctx.peer.list_tools()
        plans: list[ToolPlan] = []
        for tool in tools:
            plan = plan_tool(tool, self.o.allow_tools, self.o.write)
            schema = tool.get("inputSchema")
            empty = not isinstance(schema, dict) or not schema.get("properties")
            if plan.access != "skip" and empty:
                plan = await self.learn(ctx, plan)
            plans.append(plan)
            ctx.run.tools.append(ToolStatus(plan.name, plan.access, note=plan.reason))
        learnt: list[Learnt] = []
        for plan, status in zip(plans, ctx.run.tools, strict=True):
            if plan.access == "skip" or self.hung(ctx):
                continue
            self.say(f"{ctx.name}: control {plan.name}")
            got = await self.control(ctx, plan)
            if got is None:
                status.note = status.note or "positive control failed (W's own file never came back)"
                continue
            status.tested, status.style, status.shape, status.evidence = True, got.style, got.shape, got.kind
            learnt.append(got)
        if self.hung(ctx):
            ctx.run.status, ctx.run.detail = "hung", "calls stopped answering; the server was killed"
            return
        if ctx.provider is not None and ctx.provider.requests == 0 and not learnt:
            ctx.run.status = "roots unsupported"
            ctx.run.detail = f"never asked for roots and served nothing in {ctx.peer.calls} calls"
            return
        if ctx.provider is not None and ctx.provider.requests == 0 and ctx.peer.calls:
            # It served W without asking for roots: whatever confines it, it is not the client's roots.
            ctx.run.status = "ignores roots"
            ctx.run.detail = f"no roots request in {ctx.peer.calls} calls"
            first = learnt[0].plan.name if learnt else next((t.name for t in ctx.run.tools if t.access != "skip"), "")
            self.finding(
                ctx,
                "ignores-roots",
                "roots",
                first,
                "",
                ctx.last or CallOutcome("{}"),
                f"the server never requested roots in {ctx.peer.calls} tool calls",
            )
            return
        if not learnt:
            ctx.run.status = "no testable tool"
            return
        for item, status in zip(learnt, [s for s in ctx.run.tools if s.tested], strict=True):
            if self.hung(ctx):
                break
            status.probes = await self.probe_tool(ctx, item)
        if not self.fifo_done and not self.hung(ctx):
            await fifo(self, ctx, learnt)
        if ctx.provider is not None and not self.hung(ctx):
            await stale_roots(self, ctx, learnt)
        if ctx.provider is not None and not self.hung(ctx):
            await empty_roots(self, ctx, learnt)
        if self.hung(ctx):
            ctx.run.status = "hung"
            ctx.run.detail = "calls stopped answering; the server was killed"

    def hung(self, ctx: ModeContext) -> bool:
        return ctx.peer.timeouts_in_a_row >= 2

    # -- learning ----------------------------------------------------------------------------------------

    async def learn(self, ctx: ModeContext, plan: ToolPlan) -> ToolPlan:
        """An empty schema: call with no arguments and read the parameter names from the validation error."""
        out = await ctx.peer.call(plan.name, {})
        text = (out.error or "") + "\n" + result_text(out.result)
        names = learn_params(text) if out.is_error else {}
        return plan_learnt(plan.name, names, plan.access)

    async def control(self, ctx: ModeContext, plan: ToolPlan) -> Learnt | None:
        shapes: tuple[Shape, ...] = ("new", "file") if plan.access == "write" else ("file", "dir")
        patterns = PATTERNS if plan.pattern_params else ("rbt",)
        for param in plan.path_params:
            for style in STYLES:
                for shape in shapes:
                    for pattern in patterns:
                        got = await self.try_control(ctx, plan, param, style, shape, pattern)
                        if got is not None:
                            return got
                        if self.hung(ctx):
                            return None
        return None

    async def try_control(
        self, ctx: ModeContext, plan: ToolPlan, param: str, style: Style, shape: Shape, pattern: str
    ) -> Learnt | None:
        new = self.trap.new_name()
        value = control_paths(self.trap, shape, style, new)
        if plan.access == "write":
            other_shape: Shape = "file" if shape == "new" else "new"
            other = self.scratch(style) if other_shape == "file" else control_paths(self.trap, "new", style, new + "2")
            if shape == "file":
                value = self.scratch(style)
            out = await ctx.peer.call(plan.name, plan.arguments(param, value, other, pattern, self.content()))
            changes = self.diff()
            inside = [c for c in changes if self.location(c) in ctx.allowed]
            self.judge_write(ctx, plan.name, param, "control", Probe("outside-absolute", value, "ws"), out, changes)
            self.restore(changes)
            if inside:
                return Learnt(plan, param, style, shape, "write", pattern)
            return None
        out = ctx.last = await ctx.peer.call(plan.name, plan.arguments(param, value, value, pattern, ""))
        # A control answer can itself escape (a recursive listing that follows W's links out).
        self.judge_read(ctx, plan.name, param, Probe("symlink-parent", value, "far"), out)
        kind = control_evidence(self.trap, out.request, out.result, out.is_error)
        if kind is None:
            return None
        return Learnt(plan, param, style, shape, kind, pattern)

    def scratch(self, style: Style) -> str:
        assert self.trap.scratch is not None
        name = self.trap.scratch.name
        return {"absolute": str(self.trap.scratch), "relative": name, "uri": "file://" + str(self.trap.scratch)}[style]

    def content(self) -> str:
        return f"rbt-written-{os.urandom(4).hex()}\n"

    # -- probing -------------------------------------------------------------------------------------------

    async def probe_tool(self, ctx: ModeContext, item: Learnt) -> int:
        plan = item.plan
        new = self.trap.new_name()
        probes = catalogue(self.trap, item.shape, "absolute", home=self.o.trap_home, new_name=new)
        if item.style != "absolute":
            probes += catalogue(self.trap, item.shape, item.style, home=self.o.trap_home, new_name=new)
        if item.shape == "file" and plan.access == "write":
            # a tool that moves or deletes an existing file: aim it at outside files instead of creating new ones
            probes = catalogue(self.trap, "file", "absolute", home=self.o.trap_home)
        other = control_paths(self.trap, item.shape, item.style, new)
        if plan.access == "write":
            other = (
                self.scratch(item.style) if item.shape == "new" else control_paths(self.trap, "new", item.style, new)
            )
        if plan.access != "write":
            await self.fire_reads(ctx, item, probes, other)
            return len(probes)
        count = 0
        for index, probe in enumerate(probes):
            if self.hung(ctx):
                break
            self.say(f"{ctx.name}: {plan.name} {index + 1}/{len(probes)}")
            args = plan.arguments(item.param, probe.path, other, item.pattern, self.content())
            out = await ctx.peer.call(plan.name, args)
            count += 1
            changes = self.diff()
            self.judge_write(ctx, plan.name, item.param, probe.class_id, probe, out, changes)
            self.restore(changes)
        return count

    async def fire_reads(self, ctx: ModeContext, item: Learnt, probes: list[Probe], other: str) -> None:
        """Read probes change nothing, so a few run at once (writes stay one at a time, between snapshots)."""
        plan = item.plan
        limiter = anyio.CapacityLimiter(PARALLEL)
        done = 0

        async def one(probe: Probe) -> None:
            nonlocal done
            async with limiter:
                if self.hung(ctx):
                    return
                args = plan.arguments(item.param, probe.path, other, item.pattern, "")
                out = await ctx.peer.call(plan.name, args)
                done += 1
                self.say(f"{ctx.name}: {plan.name} {done}/{len(probes)}")
                self.judge_read(ctx, plan.name, item.param, probe, out)

        async with anyio.create_task_group() as group:
            for probe in probes:
                group.start_soon(one, probe)

    def judge_read(self, ctx: ModeContext, tool: str, param: str, probe: Probe, out: CallOutcome) -> None:
        found = judge(self.trap, out.request, out.result, out.is_error, frozenset(ctx.allowed))
        for ev in found:
            class_id = "hardlink" if ev.location == "hardlink" else probe.class_id
            self.finding(ctx, class_id, ev.kind, tool, param, out, ev.detail, probe.path, ev.location)

    def judge_write(
        self, ctx: ModeContext, tool: str, param: str, label: str, probe: Probe, out: CallOutcome, changes: list[Change]
    ) -> None:
        for change in changes:
            loc = self.location(change)
            if loc in ctx.allowed:
                continue
            rel = change.path.relative_to(self.trap.base).as_posix()
            class_id = "hardlink" if probe.class_id == "hardlink" else probe.class_id
            if label == "control":
                class_id = "symlink-parent" if loc == "far" else "outside-absolute"
            self.finding(
                ctx,
                class_id,
                "write",
                tool,
                param,
                out,
                f"{change.what} {rel} outside the roots",
                probe.path,
                loc,
            )
        self.judge_read(ctx, tool, param, probe, out)

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
    ) -> None:
        by_id(class_id)  # unknown classes are a bug here, not in the server
        severity = severity_for(class_id, kind)
        self.report.add(
            Finding(class_id, kind, severity, tool, ctx.name, param, probe, evidence, out.request, location)
        )

    # -- the trap between writes -------------------------------------------------------------------------

    def location(self, change: Change) -> str:
        rel = change.path.relative_to(self.trap.base)
        return rel.parts[0] if rel.parts else ""

    def diff(self) -> list[Change]:
        return self.baseline.diff(Snapshot.take(self.trap.base))

    def restore(self, changes: list[Change]) -> None:
        if changes:
            self.baseline.restore(changes, self.hardlinks)

    def restore_all(self) -> None:
        self.restore(self.diff())


async def run_audit(options: AuditOptions) -> Report:
    """Build a trap, audit the server in each mode, remove the trap; never raises for a misbehaving server."""
    started = time.monotonic()
    trap = build_trap(options.trap_dir)
    report = Report(options.spec.label(), str(trap.base), options.write)
    auditor = _Auditor(options, trap, report)
    try:
        with anyio.move_on_after(options.budget) as scope:
            await auditor.run()
        if scope.cancelled_caught:
            report.incomplete_reason = f"the server used up its {options.budget:.0f}s budget"
        report.fold_causes()
    finally:
        if not options.keep_trap:
            remove(trap.base)
        report.seconds = time.monotonic() - started
    return report
