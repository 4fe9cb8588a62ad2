"""Probes fired at a tested parameter: the differential control first, then every probe of the catalogue (reads a
few at a time, writes one at a time between snapshots), and the re-runs that name the probe behind what the
kernel or a snapshot saw.
"""

from __future__ import annotations

import time

import anyio

from rootbound.audit.causality import LINKED, caused_events
from rootbound.audit.evidence import AuditorBase
from rootbound.audit.judge import kernel_evidence
from rootbound.audit.mode_context import Learnt, ModeContext
from rootbound.audit.options import (
    PARALLEL,
)
from rootbound.audit.probes import Probe, catalogue, control_paths
from rootbound.audit.report import ParamStatus
from rootbound.audit.session import (
    CallOutcome,
)
from rootbound.audit.trap import (
    Change,
)

__all__ = ["Prober"]


class Prober(AuditorBase):
    """Fires the probe catalogue at each parameter a control proved."""

    async def differential(self, ctx: ModeContext, item: Learnt) -> None:
        """The parameter's control once more, in a window: what the tool does outside the roots with an inside path
        (beyond where W's own links lead) is its noise, and no probe of the tool is judged by it."""
        plan = item.plan
        new = self.trap.new_name(plan.wants)
        if plan.access == "write" and item.shape == "file":
            value = self.scratch(item.style)
        else:
            value = control_paths(self.trap, item.shape, item.style, new)
        args = plan.arguments(
            item.param,
            value,
            item.others(self, self.trap.new_name()),
            item.pattern,
            self.content() if plan.access == "write" else "",
            every_path=item.every,
            others_dir=item.workdir(self),
        )
        self.window_open()
        await ctx.peer.call(plan.name, args)
        events = self.window_close()
        changes = self.diff()
        outside = frozenset(ctx.allowed) | LINKED
        ctx.noise.add_events(plan.name, [ev for ev in events if ev.location not in outside])
        ctx.noise.add_changes(plan.name, self.trap.base, [c for c in changes if self.location(c) not in outside])
        self.undo_beyond(events)
        self.restore(changes)

    async def probe_leaf(
        self,
        ctx: ModeContext,
        item: Learnt,
        pstat: ParamStatus | None = None,
        until: float = float("inf"),
        sent: set[int] | None = None,
    ) -> tuple[int, int]:
        """Every probe at one path parameter, the tool's other path parameters inside W, until ``until`` (the
        parameter's share of the budget): (probes sent, probes in its catalogue). ``sent`` collects the indices
        of the probes sent; given non-empty, the call resumes: only the others are sent (no second differential:
        the first recorded the tool's noise)."""
        plan = item.plan
        resume = bool(sent)
        sent = set() if sent is None else sent
        if not resume:
            await self.differential(ctx, item)
        catalogue_ = self.probes_for(ctx, item)
        if pstat is not None:  # a probe that proved nothing still leaves a trace: which classes were tried
            pstat.classes = sorted({p.class_id for p in catalogue_})
        todo = [(i, p) for i, p in enumerate(catalogue_) if i not in sent]
        if plan.access != "write":
            return await self.fire_reads(ctx, item, todo, until, sent), len(catalogue_)
        count = 0
        probes = catalogue_
        for index, probe in todo:
            if self.hung(ctx) or time.monotonic() > until:
                break
            sent.add(index)
            self.say(f"{ctx.name}: {plan.label} {item.param} {index + 1}/{len(probes)}")
            other = item.others(self, self.trap.new_name())
            args = plan.arguments(
                item.param,
                probe.path,
                other,
                item.pattern,
                self.content(),
                every_path=item.every,
                others_dir=item.workdir(self),
            )
            self.window_open()
            out = await ctx.peer.call(plan.name, args)
            events = self.window_close()
            count += 1
            changes = self.diff()
            self.judge_write(ctx, plan.name, item.param, probe.class_id, probe, out, changes)
            # what it read where it also wrote is part of that write
            self.judge_kernel(ctx, plan.name, item.param, probe, out, events, skip={self.location(c) for c in changes})
            self.undo_beyond(events)
            self.restore(changes)
        return count, len(probes)

    def probes_for(self, ctx: ModeContext, item: Learnt) -> list[Probe]:
        """The probe catalogue for one parameter: its shape, absolute and in its learnt style."""
        plan = item.plan
        new = self.trap.new_name(plan.wants)
        probes = catalogue(self.trap, item.shape, "absolute", home=self.o.trap_home, new_name=new)
        if item.style != "absolute":
            probes += catalogue(self.trap, item.shape, item.style, home=self.o.trap_home, new_name=new)
        elif plan.leaf(item.param).text.startswith("cmd:"):
            # a command runs in a directory: its relative spellings (``ls ..``) are probed whatever the control
            probes += catalogue(self.trap, item.shape, "relative", home=self.o.trap_home, new_name=new)
        if ctx.run.status == "ignores roots":
            # nothing confines it by roots: the plain outside paths show what it reaches; the rest adds nothing
            probes = [p for p in probes if p.class_id == "outside-absolute"]
        if item.shape == "file" and plan.access == "write":
            # a tool that moves, copies or deletes an existing file: aim it at outside files instead
            probes = catalogue(self.trap, "file", "absolute", home=self.o.trap_home)
        return probes

    async def fire_reads(
        self, ctx: ModeContext, item: Learnt, todo: list[tuple[int, Probe]], until: float, sent: set[int]
    ) -> int:
        """Read probes change nothing, so a few run at once (writes stay one at a time, between snapshots). The
        indices of those sent go into ``sent``."""
        plan = item.plan
        probes = [p for _, p in todo]
        limiter = anyio.CapacityLimiter(PARALLEL)
        done = 0
        other = item.others(self, "")
        workdir = item.workdir(self)

        explained: set[str] = set()  # locations the answers already proved (the kernel adds nothing there)

        async def one(index: int, probe: Probe) -> None:
            nonlocal done
            async with limiter:
                if self.hung(ctx) or time.monotonic() > until:
                    return
                sent.add(index)
                args = plan.arguments(
                    item.param, probe.path, other, item.pattern, "", every_path=item.every, others_dir=workdir
                )
                out = await ctx.peer.call(plan.name, args)
                done += 1
                self.say(f"{ctx.name}: {plan.label} {item.param} {done}/{len(probes)}")
                explained.update(
                    self.judge_read(ctx, plan.name, item.param, probe, out, names_paths=item.kind == "path")
                )

        self.window_open()
        async with anyio.create_task_group() as group:
            for index, probe in todo:
                group.start_soon(one, index, probe)
        events = [
            ev
            for ev in self.window_close()
            if not ctx.noise.event(plan.name, ev)
            and any(caused_events(self.trap, p.path, p.aim, [ev], deep=self.git) for p in probes)
        ]
        batch = kernel_evidence(self.trap, events, frozenset(ctx.allowed))
        unexplained = {ev.location for ev in batch} - explained
        if unexplained:
            # the kernel saw the server touch an outside canary that no answer showed: the probes ran four at a
            # time, so the ones aimed there run again alone, each in its own window, to say which spelling did
            # it. No check at all (outside-absolute) settles a location (it explains every other class there);
            # a location no probe aims at gets every probe.
            aimed = [p for p in probes if p.aim in unexplained]
            use_aimed = {p.aim for p in aimed} >= unexplained
            proved: set[tuple[str, str]] = set()  # (location, class) already shown by the kernel
            for probe in aimed if use_aimed else probes:
                if self.hung(ctx) or not unexplained:
                    break
                if use_aimed and (probe.aim not in unexplained or (probe.aim, probe.class_id) in proved):
                    continue
                args = plan.arguments(
                    item.param, probe.path, other, item.pattern, "", every_path=item.every, others_dir=workdir
                )
                self.window_open()
                out = await ctx.peer.call(plan.name, args)
                events = self.window_close()
                self.judge_kernel(ctx, plan.name, item.param, probe, out, events, skip=explained)
                seen = {ev.location for ev in kernel_evidence(self.trap, events, frozenset(ctx.allowed))}
                proved |= {(loc, probe.class_id) for loc in seen}
                if probe.class_id == "outside-absolute":
                    unexplained -= seen
        # a "read" tool that changed the trap after all (its control showed no change): undo it, then find the
        # probe that did it, so the finding carries a request that reproduces it
        changes = self.diff()
        if changes:
            self.restore(changes)
            await self.attribute_writes(ctx, item, probes, changes)
        return done

    async def attribute_writes(
        self, ctx: ModeContext, item: Learnt, probes: list[Probe], changes: list[Change]
    ) -> None:
        """The read probes ran four at a time and one of them changed the trap: run them again alone, those aimed
        where the changes landed first, a snapshot after each, until every changed location has its probe. A
        change no probe repeats is still reported (without a request: the batch did it, not one call)."""
        plan = item.plan
        other = item.others(self, "")
        workdir = item.workdir(self)
        missing = {self.location(c) for c in changes if self.location(c) not in ctx.allowed}
        ordered = [p for p in probes if p.aim in missing] + [p for p in probes if p.aim not in missing]
        for probe in ordered:
            if self.hung(ctx) or not missing:
                break
            args = plan.arguments(
                item.param, probe.path, other, item.pattern, "", every_path=item.every, others_dir=workdir
            )
            self.window_open()
            out = await ctx.peer.call(plan.name, args)
            self.window_close()  # its reads were judged in the batch: only the write is attributed here
            again = self.diff()
            if again:
                self.restore(again)
                landed = {self.location(c) for c in again} & missing
                self.judge_write(ctx, plan.name, item.param, probe.class_id, probe, out, again)
                missing -= landed
        left = [c for c in changes if self.location(c) in missing]
        if left:
            self.judge_write(
                ctx, plan.name, item.param, "read", Probe("outside-absolute", "", "far"), CallOutcome("{}"), left
            )
