"""One mode's work: plan every tool, learn each path parameter from its positive control, then probe what was
learnt, the roots probes and the self-widening tools last.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from typing import Any

import anyio

from rootbound.audit.asks import wanted_type
from rootbound.audit.controls import control_leaf, learn
from rootbound.audit.free_text import chained_id_reach, free_text_reach
from rootbound.audit.git_trap import git_fillers
from rootbound.audit.judge import result_text
from rootbound.audit.mode_context import Learnt, ModeContext
from rootbound.audit.options import (
    ROOTS_WAIT,
    UNCONFIGURED,
)
from rootbound.audit.probes import Probe
from rootbound.audit.probing import Prober
from rootbound.audit.report import ParamStatus, ToolStatus
from rootbound.audit.roots_probes import empty_roots, fifo, stale_roots
from rootbound.audit.session import (
    CallOutcome,
)
from rootbound.audit.shown import shown
from rootbound.audit.text_plans import text_shapes
from rootbound.audit.tools import PathLeaf, ToolPlan, plan_shapes
from rootbound.audit.widening import probe_widening, widens

__all__ = ["Exerciser", "fair_share"]


def fair_share(left_time: float, left: int, modes_left: int) -> float:
    """One parameter's share of the budget: at most twice an equal share of what is left, over the parameters
    left in its mode and the modes still to run (what it leaves goes to those after it)."""
    return min(left_time, 2 * left_time / max(1, left) / max(1, modes_left))


class Exerciser(Prober):
    """Plans, controls and probes the tools of one mode."""

    # parameters whose share of the budget ran out partway: resumed at the end of the mode (the probes they sent)
    unfinished: list[tuple[Learnt, ParamStatus, ToolStatus, set[int]]]

    async def exercise(self, ctx: ModeContext) -> None:
        self.unfinished = []
        tools = await ctx.peer.list_tools()
        self.adopt_startup(ctx.name)
        ctx.tool_names = frozenset(str(t.get("name", "")) for t in tools[:200])
        work: list[tuple[ToolPlan, ToolStatus]] = []
        widening: list[tuple[ToolPlan, list[ParamStatus]]] = []
        pstats: dict[tuple[int, str], ParamStatus] = {}
        planned: list[tuple[dict[str, Any], ToolStatus]] = []
        for tool in tools[:200]:
            status = ToolStatus(shown(tool.get("name", ""), 120), "skip")
            ctx.run.tools.append(status)
            planned.append((tool, status))
            refs = git_fillers(str(tool.get("name", ""))) if self.git else None
            shapes = plan_shapes(tool, self.o.allow_tools, self.o.write, refs)
            shapes = text_shapes(tool, shapes, self.o.write, self.o.allow_tools)
            wants = wanted_type(tool) or ""
            for shape in shapes:
                shape.wants = wants
            schema = tool.get("inputSchema")
            # a schema that declares no parameters (``"properties": {}``) takes no path; one that says nothing
            # (no ``properties`` at all) may take one, learnt from its validation error
            empty = not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict)
            if (
                isinstance(schema, dict)
                and schema.get("properties") == {}
                and not (schema.get("anyOf") or schema.get("oneOf"))
            ):
                shapes[0].reason = shapes[0].reason or "no parameters"
            failed = True  # an empty schema the audit did not (or could not) learn from: it may take a path
            if shapes[0].access != "skip" and empty and not any(p.leaves for p in shapes):
                learnt_plan, failed = await learn(ctx, shapes[0])
                shapes = [learnt_plan]
            status.access = shapes[0].access
            status.note = shapes[0].reason
            status.takes_path = any(p.leaves for p in shapes) or (empty and failed)
            status.reaches = free_text_reach(tool, shapes[0].reason, status.takes_path)
            if self.watch is not None and status.access == "skip" and shapes[0].reason == "no path parameter":
                found = await self.find_by_behaviour(ctx, shapes[0])
                if found is not None:
                    shapes = [found]
                    status.access, status.note, status.takes_path = found.access, found.reason, True
            if widens(tool) and shapes[0].leaves and not shapes[0].reason.startswith("looks like exec"):
                # it moves the server's own bounds: probed last (the server keeps the widened state)
                plan = dataclasses.replace(shapes[0], access="write", reason="")
                status.access, status.note = "widen", "changes the server's own bounds: probed last"
                rows = [ParamStatus(shown(leaf.name, 100), "not tested", "probed last") for leaf in plan.leaves]
                status.params += rows
                widening.append((plan, rows))
                continue
            for plan in shapes:
                for leaf in plan.leaves:
                    param = f"{leaf.name} ({plan.shape})" if plan.shape else leaf.name
                    detail = plan.reason if plan.access == "skip" else ""
                    pstats[id(plan), leaf.name] = ParamStatus(shown(param, 100), "not tested", detail)
                    status.params.append(pstats[id(plan), leaf.name])
                if plan.access != "skip":
                    work.append((plan, status))
        path_tools = [str(tool.get("name", "")) for tool, status in planned if status.takes_path]
        for tool, status in planned:  # read by an id another tool returns for a path: a gap, not "not a path tool"
            if not status.takes_path and not status.reaches:
                status.reaches = chained_id_reach(tool, path_tools)
        if len(tools) > 200:
            self.report.notes.append(f"{ctx.name}: the server listed {len(tools)} tools; the first 200 were planned")
        learnt: list[tuple[Learnt, ParamStatus, ToolStatus]] = []
        for position, (plan, status) in enumerate(work):
            index = 0
            while index < len(plan.leaves):  # a control may learn a parameter from an error: it is controlled too
                leaf = plan.leaves[index]
                index += 1
                if self.hung(ctx):
                    break
                pstat = pstats.get((id(plan), leaf.name))
                if pstat is None:
                    param = f"{leaf.name} ({plan.shape})" if plan.shape else leaf.name
                    pstat = pstats[id(plan), leaf.name] = ParamStatus(shown(param, 100), "not tested")
                    status.params.append(pstat)
                    status.takes_path = True
                self.say(f"{ctx.name}: control {plan.label} {leaf.name}")
                got = await control_leaf(self, ctx, plan, leaf.name, pstat)
                if got is None and ctx.provider is not None and not ctx.any_control and not ctx.retried:
                    # roots mode, nothing has worked yet: give a slow roots fetch its chance, then try again
                    ctx.retried = True
                    with anyio.move_on_after(min(ROOTS_WAIT, self.o.timeout)):
                        await ctx.provider.asked.wait()
                    got = await control_leaf(self, ctx, plan, leaf.name, pstat)
                if got is None:
                    if leaf.free and plan.shape and await self.ignores_path(ctx, plan, leaf):
                        pstat.status = "no path"
                        pstat.detail = f"this action answers the same without {leaf.name}: it takes no path"
                    continue
                if not ctx.any_control:
                    self.served_without_roots(ctx, got)
                ctx.any_control = True
                pstat.style, pstat.shape, pstat.evidence = got.style, got.shape, got.kind
                status.access = got.plan.access
                status.style, status.shape, status.evidence = got.style, got.shape, got.kind
                learnt.append((got, pstat, status))
                # probed at once, while the budget lasts: each parameter gets an equal share of what is left
                left = 1 + len(plan.leaves) - index + sum(len(p.leaves) for p, _ in work[position + 1 :])
                await self.probe_now(ctx, got, pstat, status, left)
        # the parameters whose share ran out resume, in what this mode may still use of the budget
        await self.finish_partial(ctx)
        if self.hung(ctx):
            ctx.run.status, ctx.run.detail = "hung", "calls stopped answering; the server was killed"
            return
        items = [item for item, _, _ in learnt]
        if ctx.run.tools and not any(t.takes_path for t in ctx.run.tools):
            ctx.run.status, ctx.run.detail = "no path tool", "none of its tools takes a path"
            return
        if ctx.provider is not None and ctx.provider.requests == 0 and not learnt:
            rows = [p for t in ctx.run.tools for p in t.params]
            if rows and all(p.status == "blocked" and UNCONFIGURED.search(p.detail) for p in rows):
                # every call refused in the server's own words for having no directory: it does not run without
                # its argument, as if it had exited (politely)
                ctx.run.status = "roots unsupported"
                ctx.run.detail = "refuses every call without its argument: " + rows[0].detail.split(": ", 1)[-1]
                return
            # it started and answers, without roots: not "roots unsupported" (that is a server that exits, fails
            # the handshake, or refuses every call for having no directory); what it serves is not the client's
            # roots, and every control failed: each of its path parameters is a gap
            ctx.run.status = "ignores roots"
            ctx.run.detail = f"never asked for roots in {ctx.peer.calls} calls, and no control passed: nothing tested"
            return
        if not learnt:
            ctx.run.status = "no testable tool"
            return
        # the roots probes read the second root (allowed, then removed) and W: judged by their answers only
        self.window_open()
        if not self.fifo_done and not self.hung(ctx):
            await fifo(self, ctx, items)
        if ctx.provider is not None and ctx.run.status == "ok" and not self.hung(ctx):
            await stale_roots(self, ctx, items)
        if ctx.provider is not None and ctx.run.status == "ok" and not self.hung(ctx):
            await empty_roots(self, ctx, items)
        self.settle()
        if widening and not self.hung(ctx):
            await probe_widening(self, ctx, widening, items)
        if self.hung(ctx):
            ctx.run.status = "hung"
            ctx.run.detail = "calls stopped answering; the server was killed"

    def served_without_roots(self, ctx: ModeContext, got: Learnt) -> None:
        """The first control passed in a roots mode before any roots request: the server served W without asking
        for roots, so whatever confines it is not the client's roots. One server-wide finding; its tools are still
        probed (an unconfined server shows what it reaches)."""
        if ctx.provider is None or ctx.provider.requests or not ctx.peer.calls:
            return
        ctx.run.status = "ignores roots"
        ctx.run.detail = f"no roots request in {ctx.peer.calls} calls before it served W"
        self.finding(
            ctx,
            "ignores-roots",
            "roots",
            got.plan.name,
            "",
            ctx.last or CallOutcome("{}"),
            f"the server never requested roots in {ctx.peer.calls} tool calls",
        )

    async def probe_now(
        self, ctx: ModeContext, item: Learnt, pstat: ParamStatus, status: ToolStatus, left: int
    ) -> None:
        """Probe one parameter right after its control passed, within its share of the budget: at most twice an
        equal share of what is left (over the parameters left in this mode and the modes still to run), so one slow
        parameter cannot starve the rest, and what a fast one leaves goes to those after it. "tested" only with
        probes."""
        left_time = max(0.0, self.deadline - time.monotonic())
        share = fair_share(left_time, left, self.modes_left)
        pstat.status = "not tested"
        pstat.detail = "its control passed, but no probe ran (the audit's budget ran out first)"
        sent: set[int] = set()
        pstat.probes, total = await self.probe_leaf(ctx, item, pstat, until=time.monotonic() + share, sent=sent)
        status.probes += pstat.probes
        if pstat.probes < total and not self.hung(ctx):
            self.unfinished.append((item, pstat, status, sent))
        if pstat.probes == 0:
            pstat.detail = "0 probes: " + (
                "calls stopped answering" if self.hung(ctx) else f"its share of the budget ({share:.1f}s) ran out"
            )
            return
        status.tested = True
        if pstat.probes < total:
            pstat.status = "partly tested"
            pstat.detail = f"{pstat.probes} of {total} probes: its share of the budget ({share:.1f}s) ran out"
        else:
            pstat.status, pstat.detail = "tested", ""

    async def finish_partial(self, ctx: ModeContext) -> None:
        """At the end of a mode, the parameters whose share ran out get the probes they missed, in the time this
        mode may still use (what is left over the modes still to run, this one included), shared equally."""
        pending, self.unfinished = self.unfinished, []
        spare = max(0.0, self.deadline - time.monotonic()) / max(1, self.modes_left)
        end = time.monotonic() + spare
        for position, (item, pstat, status, sent) in enumerate(pending):
            now = time.monotonic()
            if self.hung(ctx) or now >= end:
                break
            share = (end - now) / (len(pending) - position)
            more, total = await self.probe_leaf(ctx, item, pstat, until=now + share, sent=sent)
            pstat.probes += more
            status.probes += more
            status.tested = status.tested or pstat.probes > 0
            if pstat.probes >= total:
                pstat.status, pstat.detail = "tested", ""
            else:
                pstat.status = "partly tested" if pstat.probes else "not tested"
                pstat.detail = (
                    f"{pstat.probes} of {total} probes: its share of the budget ran out, and so did the time left "
                    "at the end of the mode"
                )

    async def ignores_path(self, ctx: ModeContext, plan: ToolPlan, leaf: PathLeaf) -> bool:
        """A dispatcher's action whose control never showed W: called with W's marker in its free-form arguments
        and with them empty, it succeeds and answers the same both times: the action takes no path (not a gap)."""
        marker = str(self.trap.marker.path)
        full = plan.arguments(leaf.name, marker, marker, "rbt", "")
        bare = copy.deepcopy(full)
        here: Any = bare
        for key in leaf.pointer[:-1]:
            here = here.get(key) if isinstance(here, dict) else None
        if not isinstance(here, dict):
            return False
        here.pop(leaf.pointer[-1], None)
        first = await ctx.peer.call(plan.name, full)
        second = await ctx.peer.call(plan.name, bare)
        if first.is_error or second.is_error or first.timed_out or second.timed_out:
            return False
        return result_text(first.result) == result_text(second.result)

    async def find_by_behaviour(self, ctx: ModeContext, plan: ToolPlan) -> ToolPlan | None:
        """A tool whose parameter names say no path: put W's marker in each string parameter in turn; one the
        kernel sees the server open the marker through takes a path, whatever it is called."""
        if plan.by_name != "read" and not self.o.write:
            return None
        # W's canary of the type the tool asks for (an archive tool refuses a text file unopened), then W's marker
        names = [self.trap.marker.name]
        if plan.wants:
            names.insert(0, self.trap.typed[self.typed_shape(plan.wants)]["ws"].name)
        for pointer, name in [(p, n) for p in plan.string_roles()[:4] for n in names]:
            if self.hung(ctx):
                return None
            trial = plan.as_path(pointer)
            trial.access, trial.reason = plan.by_name, ""
            leaf = trial.leaves[-1]
            marker = str(self.trap.workspace / name)
            self.window_open()
            out = await ctx.peer.call(plan.name, trial.arguments(leaf.name, marker, marker, "rbt", self.content()))
            events = self.window_close()
            changes = self.diff()
            self.judge_write(
                ctx, plan.name, leaf.name, "control", Probe("outside-absolute", marker, "far"), out, changes
            )
            self.restore(changes)
            if any(ev.location == "ws" and ev.name == name for ev in events):
                self.report.notes.append(
                    f"{ctx.name}: {shown(plan.name, 80)} {shown(leaf.name, 80)} takes a path (the kernel saw the "
                    "server open W's marker through it), though its name says otherwise"
                )
                return trial
        return None
