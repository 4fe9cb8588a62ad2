"""The audit run: per mode, start the server on a fresh view of the trap, learn each path parameter of each tool
from a positive control, fire the probe catalogue at each one, judge every answer, and (in roots mode) test
whether removed roots stay served. Coverage (what was tested, blocked or not tested, and why) is recorded per
mode, tool and parameter as it goes: it is half of the verdict.

Modes: ``args`` (the workspace on the command line, no roots capability), ``roots`` (no workspace argument; the
workspace and a second root given as MCP roots over the handshake era) and ``roots-2026`` (the same over
2026-07-28, when the server speaks it).
"""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio

from rootbound.audit import _sdk
from rootbound.audit.asks import shape_for, wanted_type
from rootbound.audit.causality import ATTRIBUTION, CONTROL, LINKED, caused_changes, caused_events
from rootbound.audit.classes import by_id, severity_for
from rootbound.audit.controls import control_leaf, learn
from rootbound.audit.far_canaries import plant_far, remove_far
from rootbound.audit.filetypes import REGISTRY
from rootbound.audit.git_trap import build_git, git_fillers, index_unchanged, looks_like_git
from rootbound.audit.judge import judge, kernel_evidence
from rootbound.audit.kernel_watch import KernelEvent, KernelWatch, watch_trap
from rootbound.audit.mode_context import Learnt, ModeContext
from rootbound.audit.probes import Probe, catalogue, control_paths, landed_class
from rootbound.audit.report import Finding, ModeRun, ParamStatus, Report, ToolStatus
from rootbound.audit.roots_probes import empty_roots, fifo, stale_roots
from rootbound.audit.server_output import StderrSink, StdoutNoise, informative_line
from rootbound.audit.session import (
    CallOutcome,
    CountingProvider,
    Peer,
    ServerSpec,
    StartFailed,
    leaf_error,
    open_peer,
    reap_marked,
)
from rootbound.audit.shown import shown
from rootbound.audit.tools import ToolPlan, plan_shapes
from rootbound.audit.trap import (
    MAX_ENTRIES,
    Change,
    Snapshot,
    Trap,
    TrapFlooded,
    build_trap,
    default_trap_dir,
    plant_type,
    remove,
)
from rootbound.audit.widening import probe_widening, widens

__all__ = ["AuditOptions", "run_audit"]

ModeName = Literal["args", "roots", "both"]
WorkspaceKind = Literal["auto", "dir", "git"]
PARALLEL = 4  # read probes in flight at once
ROOTS_WAIT = 3.0  # seconds a roots-mode run waits for the server's first roots request before the first control
# a refusal that says the server has nothing to serve without its argument (not a path-specific refusal)
_UNCONFIGURED = re.compile(
    r"no (allowed |root |workspace |project )?(directories|directory|dirs|roots?|workspace|folders?|projects?)\b"
    r"|cannot operate|not configured|no .{0,20}configured|not initiali[sz]ed",
    re.IGNORECASE,
)
ROOTS_GRACE = 0.5  # ... or this long after the server answered a ping sent after `initialized`


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
    accept_partial: bool = False
    stderr_log: Path | None = None  # where the server's stderr goes (default: a new file in the temp dir)
    seed: str | None = None  # rebuild a reported trap (--replay)
    workspace_kind: WorkspaceKind = "auto"  # git: W and the outside directories are repositories
    max_entries: int = MAX_ENTRIES  # a trap holding more (the server flooded it) stops the audit
    server_cwd: Path | None = None  # where the server runs (default: where the audit runs; a canary is planted)
    far_temp: Path | None = None  # where the temp-dir canary goes (default: the system temp dir)
    far_home: Path | None = None  # where the home canary goes (default: the user's home)
    progress: Callable[[str], None] | None = None


class _Auditor:
    def __init__(
        self, options: AuditOptions, trap: Trap, report: Report, stderr: StderrSink, watch: KernelWatch | None
    ) -> None:
        self.o = options
        self.trap = trap
        self.report = report
        self.stderr = stderr
        self.baseline: Snapshot = trap.snapshot()
        self.hardlinks = {"ws/rbt-hardlink.txt": trap.hardlink.path} if trap.hardlink else {}
        self.fifo_done = False
        self.flooded = False
        self.cwd_created: set[Path] = set()  # rbt- files write probes created in the server's cwd (removed at the end)
        self.watch = watch
        self.finished = ""  # the last mode whose probes all ran (an error closing its session does not undo them)
        self.args_era: tuple[bool, str] | None = None  # args mode's session: 2026-07-28 or not, the version chosen
        self.marker = secrets.token_hex(16)
        self.git = report.workspace_kind == "git"
        self.server_own: set[str] = set()  # outside accesses no probe caused (see causality.py)
        env = dict(os.environ)
        env["PWD"] = str(trap.cwd)
        env["TZ"] = "UTC"  # timestamps in answers are matched in UTC
        env["ROOTBOUND_AUDIT_RUN"] = self.marker
        if options.trap_home:
            env["HOME"] = str(trap.home)
        self.env = env

    def say(self, message: str) -> None:
        if self.o.progress is not None:
            self.o.progress(shown(message, 160))

    # -- modes -----------------------------------------------------------------------------------------

    async def run(self) -> None:
        spec = self.o.spec
        modes: list[str] = []
        if self.o.modes in ("args", "both") and spec.takes_workspace:
            modes.append("args")
        elif self.o.modes == "roots" and spec.takes_workspace:
            self.report.notes.append("args mode not run (--mode roots)")
        if self.o.modes in ("roots", "both"):
            modes += ["roots", "roots-2026"]
        else:
            self.report.notes.append("roots modes not run (--mode args)")
        if self.o.modes == "args" and not spec.takes_workspace:
            self.report.incomplete_reason = "args mode needs {workspace} in the server command"
        args_started = False
        for name in modes:
            run = ModeRun(name)
            self.report.modes.append(run)
            if name == "roots-2026" and self.args_era and not self.args_era[0] and not spec.roots_command:
                # the same program negotiated its newest version in args mode (the client offered 2026-07-28):
                # starting it again only to hear the same answer costs a server start and finds nothing
                run.status = "not applicable"
                run.detail = f"the server does not speak 2026-07-28 (it chose {self.args_era[1]} in args mode)"
                run.protocol_version = self.args_era[1]
                continue
            started = time.monotonic()
            try:
                await self.run_mode(name, run)
            except StartFailed as exc:
                # the line that names the error says why it stopped (not npm's "A complete log ... can be found in")
                detail = shown(informative_line(str(exc)), 200)
                without_args = args_started or (spec.takes_workspace and "args" not in modes)
                if name.startswith("roots") and without_args and not exc.exec_failed:
                    run.status, run.detail = "roots unsupported", f"exited or failed without a workspace: {detail}"
                else:
                    run.status, run.detail = "did not start", detail
            except Exception as exc:  # a server that breaks the session mid-mode: report it, audit the next mode
                leaf = leaf_error(exc)
                if self.finished == name and not isinstance(leaf, TrapFlooded):
                    # every probe ran; only ending the session failed (a late answer, an HTTP 500 to a request
                    # sent while closing): the mode's results stand, and the report says what happened
                    self.report.notes.append(
                        f"{name}: the session ended with an error after every probe had run "
                        f"({shown(f'{type(leaf).__name__}: {leaf}', 160)})"
                    )
                elif isinstance(leaf, TrapFlooded):
                    run.status, run.detail = "failed", f"the server flooded the trap ({leaf}); the audit stopped"
                    self.flooded = True
                else:
                    run.status, run.detail = "failed", shown(f"{type(leaf).__name__}: {leaf}", 200)
            finally:
                run.seconds = time.monotonic() - started
                self.after_mode()
            if name == "args" and run.status != "did not start":
                args_started = True
            if self.flooded:
                break
            if name == "roots" and run.status in ("roots unsupported", "did not start"):
                self.report.modes.append(ModeRun("roots-2026", "not applicable", detail="see roots mode"))
                break

    def background_note(self) -> None:
        """What the server touched outside any call (at start, or in the background): reported, not attributed."""
        assert self.watch is not None
        self.watch.begin()
        seen = kernel_evidence(self.trap, self.watch.background, frozenset({"ws", "second"}))
        if seen:
            self.report.notes.append(
                "outside any call (at start or in the background) "
                + "; ".join(ev.detail for ev in seen[:5])
                + (f"; and {len(seen) - 5} more" if len(seen) > 5 else "")
            )
        if self.watch.overflowed:
            self.report.notes.append("the kernel's event queue overflowed: some kernel evidence may be missing")

    def after_mode(self) -> None:
        killed = reap_marked(self.marker)
        if killed:
            self.report.notes.append(f"killed {killed} process(es) the server left running outside its group")
        if not self.flooded:
            try:
                self.restore_all()
            except TrapFlooded:
                self.flooded = True

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
            stderr=self.stderr,
            label=name,
        ) as peer:
            run.protocol_version = peer.protocol_version
            if name == "args":
                self.args_era = (peer.modern, peer.protocol_version)
            if name == "roots-2026" and not peer.modern:
                run.status, run.detail = "not applicable", "the server does not speak 2026-07-28"
                return
            ctx = ModeContext(name, run, peer, provider=provider)
            if roots_mode:
                ctx.allowed.add("second")
            if provider is not None and not peer.modern:
                # Handshake era: a server that fetches roots after `initialized` gets the time to do it, so no
                # control fails for want of roots (2026-07-28 carries roots in every request).
                await self.await_roots(peer, provider)
            try:
                await self.exercise(ctx)
                self.finished = name
            finally:
                run.calls = peer.calls
        if peer.reaped:
            self.report.notes.append(f"killed {peer.reaped} process(es) the server left running outside its group")

    async def await_roots(self, peer: Peer, provider: CountingProvider) -> None:
        """Wait for the server's first roots request: until it comes, or until the server has answered a ping
        sent after ``initialized`` and ROOTS_GRACE more has passed (a server that asks on ``initialized`` has
        asked by then), at most ROOTS_WAIT. A server that asks later still gets ROOTS_WAIT more before its first
        failed control is tried again (``exercise``)."""
        with anyio.move_on_after(min(ROOTS_WAIT, self.o.timeout)):
            async with anyio.create_task_group() as group:

                async def asked() -> None:
                    await provider.asked.wait()
                    group.cancel_scope.cancel()

                async def quiet() -> None:
                    try:
                        # raw: the SDK's send_ping warns that 2026-07-28 dropped ping (this is the handshake era)
                        await _sdk.raw_request(peer.client.session, "ping", None, self.o.timeout)
                    except Exception:  # no ping: the whole wait, as before
                        return
                    await anyio.sleep(ROOTS_GRACE)
                    group.cancel_scope.cancel()

                group.start_soon(asked)
                group.start_soon(quiet)

    async def exercise(self, ctx: ModeContext) -> None:
        tools = await ctx.peer.list_tools()
        self.adopt_startup(ctx.name)
        ctx.tool_names = frozenset(str(t.get("name", "")) for t in tools[:200])
        work: list[tuple[ToolPlan, ToolStatus]] = []
        widening: list[tuple[ToolPlan, list[ParamStatus]]] = []
        pstats: dict[tuple[int, str], ParamStatus] = {}
        for tool in tools[:200]:
            status = ToolStatus(shown(tool.get("name", ""), 120), "skip")
            ctx.run.tools.append(status)
            refs = git_fillers(str(tool.get("name", ""))) if self.git else None
            shapes = plan_shapes(tool, self.o.allow_tools, self.o.write, refs)
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
        if len(tools) > 200:
            self.report.notes.append(f"{ctx.name}: the server listed {len(tools)} tools; the first 200 were planned")
        learnt: list[tuple[Learnt, ParamStatus, ToolStatus]] = []
        for plan, status in work:
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
                    continue
                ctx.any_control = True
                pstat.status, pstat.detail = "tested", ""
                pstat.style, pstat.shape, pstat.evidence = got.style, got.shape, got.kind
                status.tested = True
                status.access = got.plan.access
                status.style, status.shape, status.evidence = got.style, got.shape, got.kind
                learnt.append((got, pstat, status))
        if self.hung(ctx):
            ctx.run.status, ctx.run.detail = "hung", "calls stopped answering; the server was killed"
            return
        items = [item for item, _, _ in learnt]
        if ctx.run.tools and not any(t.takes_path for t in ctx.run.tools):
            ctx.run.status, ctx.run.detail = "no path tool", "none of its tools takes a path"
            return
        if ctx.provider is not None and ctx.provider.requests == 0 and not learnt:
            rows = [p for t in ctx.run.tools for p in t.params]
            if rows and all(p.status == "blocked" and _UNCONFIGURED.search(p.detail) for p in rows):
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
        if ctx.provider is not None and ctx.provider.requests == 0 and ctx.peer.calls:
            # It served W without asking for roots: whatever confines it, it is not the client's roots. One
            # server-wide finding; its tools are still probed (an unconfined server shows what it reaches).
            ctx.run.status = "ignores roots"
            ctx.run.detail = f"no roots request in {ctx.peer.calls} calls"
            first = items[0].plan.name if items else ""
            self.finding(
                ctx,
                "ignores-roots",
                "roots",
                first,
                "",
                ctx.last or CallOutcome("{}"),
                f"the server never requested roots in {ctx.peer.calls} tool calls",
            )
        if not learnt:
            ctx.run.status = "no testable tool"
            return
        for item, pstat, status in learnt:
            if self.hung(ctx):
                break
            pstat.probes = await self.probe_leaf(ctx, item, pstat)
            status.probes += pstat.probes
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

    def typed_shape(self, ext: str) -> str:
        """The control shape of a file type a tool asks for, its canaries planted (and in the baseline) first."""
        shape = shape_for(ext)
        if shape not in self.trap.typed:
            kind = REGISTRY[ext]
            self.restore_all()
            files = plant_type(self.trap, shape, ext, kind.make)
            self.adopt([p.relative_to(self.trap.base).as_posix() for p in files.values()])
            self.report.notes.append(f"canaries of type .{ext} planted: a tool asked for that type")
        return shape

    def adopt(self, rels: list[str]) -> None:
        """Take the current state of these trap entries into the baseline (kept, never a change)."""
        fresh = Snapshot.take(self.trap.base, keep_data=True, limit=self.o.max_entries)
        for rel in rels:
            if rel in fresh.entries:
                self.baseline.entries[rel] = fresh.entries[rel]
            else:
                self.baseline.entries.pop(rel, None)
        self.settle()

    def adopt_startup(self, mode: str) -> None:
        """The server has started and answered: what it created or changed in the trap so far is its own start-up
        state (``~/.pdf_tools_temp``): taken into the baseline (never a finding, never undone), and said."""
        changes = self.diff()
        if not changes:
            return
        self.adopt([change.path.relative_to(self.trap.base).as_posix() for change in changes])
        names = sorted({change.path.relative_to(self.trap.base).as_posix() for change in changes})
        self.report.notes.append(
            f"{mode}: at start the server created or changed {len(names)} entr{'y' if len(names) == 1 else 'ies'} "
            f"in the trap (its own state, kept as the baseline, never a finding): {shown(', '.join(names[:5]), 200)}"
        )

    async def differential(self, ctx: ModeContext, item: Learnt) -> None:
        """The parameter's control once more, in a window: what the tool does outside the roots with an inside path
        (beyond where W's own links lead) is its noise, and no probe of the tool is judged by it."""
        plan = item.plan
        new = self.trap.new_name()
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
        self.restore(changes)

    async def find_by_behaviour(self, ctx: ModeContext, plan: ToolPlan) -> ToolPlan | None:
        """A tool whose parameter names say no path: put W's marker in each string parameter in turn; one the
        kernel sees the server open the marker through takes a path, whatever it is called."""
        if plan.by_name != "read" and not self.o.write:
            return None
        for pointer in plan.string_roles()[:4]:
            if self.hung(ctx):
                return None
            trial = plan.as_path(pointer)
            trial.access, trial.reason = plan.by_name, ""
            leaf = trial.leaves[-1]
            marker = str(self.trap.marker.path)
            self.window_open()
            out = await ctx.peer.call(plan.name, trial.arguments(leaf.name, marker, marker, "rbt", self.content()))
            events = self.window_close()
            changes = self.diff()
            self.judge_write(
                ctx, plan.name, leaf.name, "control", Probe("outside-absolute", marker, "far"), out, changes
            )
            self.restore(changes)
            if any(ev.location == "ws" and ev.name == self.trap.marker.name for ev in events):
                self.report.notes.append(
                    f"{ctx.name}: {shown(plan.name, 80)} {shown(leaf.name, 80)} takes a path (the kernel saw the "
                    "server open W's marker through it), though its name says otherwise"
                )
                return trial
        return None

    def findings_of(self, mode: str) -> list[Finding]:
        return [f for f in self.report.findings if f.mode == mode]

    def hung(self, ctx: ModeContext) -> bool:
        return ctx.peer.timeouts_in_a_row >= 2

    def scratch(self, style: str) -> str:
        assert self.trap.scratch is not None
        name = self.trap.scratch.name
        return {"absolute": str(self.trap.scratch), "relative": name, "uri": "file://" + str(self.trap.scratch)}[style]

    def content(self) -> str:
        return f"rbt-written-{os.urandom(4).hex()}\n"

    # -- probing -------------------------------------------------------------------------------------------

    async def probe_leaf(self, ctx: ModeContext, item: Learnt, pstat: ParamStatus | None = None) -> int:
        """Every probe at one path parameter, the tool's other path parameters inside W."""
        plan = item.plan
        await self.differential(ctx, item)
        new = self.trap.new_name(plan.wants)
        probes = catalogue(self.trap, item.shape, "absolute", home=self.o.trap_home, new_name=new)
        if item.style != "absolute":
            probes += catalogue(self.trap, item.shape, item.style, home=self.o.trap_home, new_name=new)
        if ctx.run.status == "ignores roots":
            # nothing confines it by roots: the plain outside paths show what it reaches; the rest adds nothing
            probes = [p for p in probes if p.class_id == "outside-absolute"]
        if item.shape == "file" and plan.access == "write":
            # a tool that moves, copies or deletes an existing file: aim it at outside files instead
            probes = catalogue(self.trap, "file", "absolute", home=self.o.trap_home)
        if pstat is not None:  # a probe that proved nothing still leaves a trace: which classes were tried
            pstat.classes = sorted({p.class_id for p in probes})
        if plan.access != "write":
            await self.fire_reads(ctx, item, probes)
            return len(probes)
        count = 0
        for index, probe in enumerate(probes):
            if self.hung(ctx):
                break
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
            self.restore(changes)
        return count

    async def fire_reads(self, ctx: ModeContext, item: Learnt, probes: list[Probe]) -> None:
        """Read probes change nothing, so a few run at once (writes stay one at a time, between snapshots)."""
        plan = item.plan
        limiter = anyio.CapacityLimiter(PARALLEL)
        done = 0
        other = item.others(self, "")
        workdir = item.workdir(self)

        explained: set[str] = set()  # locations the answers already proved (the kernel adds nothing there)

        async def one(probe: Probe) -> None:
            nonlocal done
            async with limiter:
                if self.hung(ctx):
                    return
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
            for probe in probes:
                group.start_soon(one, probe)
        events = [
            ev
            for ev in self.window_close()
            if not ctx.noise.event(plan.name, ev) and any(caused_events(self.trap, p.path, p.aim, [ev]) for p in probes)
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

    def judge_read(
        self, ctx: ModeContext, tool: str, param: str, probe: Probe, out: CallOutcome, *, names_paths: bool = False
    ) -> set[str]:
        """Findings from the answer (``names_paths``: a metadata-only tool, see :func:`judge`); returns the
        locations it proved."""
        found = judge(self.trap, out.request, out.result, out.is_error, frozenset(ctx.allowed), names_paths=names_paths)
        for ev in found:
            class_id = landed_class(probe, ev.location)
            self.finding(ctx, class_id, ev.kind, tool, param, out, ev.detail, probe.path, ev.location)
        return {ev.location for ev in found}

    def judge_kernel(
        self,
        ctx: ModeContext,
        tool: str,
        param: str,
        probe: Probe,
        out: CallOutcome,
        events: list[KernelEvent],
        *,
        skip: set[str] | frozenset[str] = frozenset(),
        control: bool = False,
    ) -> None:
        """Findings from what the kernel saw during one call (locations in ``skip`` were proved by an answer): only
        the events the call caused (:mod:`rootbound.audit.causality`), and none its inside control showed too."""
        events = self.caused(ctx, tool, probe, events, control=control)
        for ev in kernel_evidence(self.trap, events, frozenset(ctx.allowed)):
            if ev.location in skip:
                continue
            class_id = landed_class(probe, ev.location)
            self.finding(ctx, class_id, ev.kind, tool, param, out, ev.detail, probe.path, ev.location, "kernel")
        self.created_in_cwd(events)

    # -- the kernel's view: one window per call ----------------------------------------------------------------

    def window_open(self) -> None:
        if self.watch is not None:
            self.watch.begin()

    def window_close(self) -> list[KernelEvent]:
        return self.watch.end() if self.watch is not None else []

    def settle(self) -> None:
        """Discard the events the audit itself caused (its snapshots and restores read every canary)."""
        if self.watch is not None:
            self.watch.settle()

    def created_in_cwd(self, events: list[KernelEvent]) -> None:
        """Files a write probe created in the server's cwd (outside the trap, so no snapshot restores them): the
        audit's own ``rbt-`` names only, removed at once."""
        if "cwd" not in self.trap.extra_dirs:
            return
        planted = {p.name for p in self.trap.planted}
        for ev in events:
            mine = ev.name.removesuffix("2") in self.trap.issued and ev.name not in planted
            if ev.location == "cwd" and ev.kind == "write" and mine:
                self.cwd_created.add(self.trap.cwd / ev.name)

    def caused(
        self, ctx: ModeContext, tool: str, probe: Probe, events: list[KernelEvent], *, control: bool = False
    ) -> list[KernelEvent]:
        """The events of a window the call caused, less what the same tool does under an inside control."""
        kept = caused_events(self.trap, probe.path, CONTROL if control else probe.aim, events)
        for ev in events:
            if ev not in kept and ev.location not in ctx.allowed and ev.location != "trap":
                self.own(ev.location, ev.name)
        out = []
        for ev in kept:
            if ctx.noise.event(tool, ev):
                self.own(ev.location, ev.name)
            else:
                out.append(ev)
        return out

    def own(self, location: str, name: str) -> None:
        """An outside access no probe caused (the server's own state, or noise its control showed too)."""
        if len(self.server_own) < 50:
            self.server_own.add(f"{location}/{name}" if name else f"{location}/")

    def judge_write(
        self, ctx: ModeContext, tool: str, param: str, label: str, probe: Probe, out: CallOutcome, changes: list[Change]
    ) -> None:
        caused, other = caused_changes(self.trap, probe.path, changes, control=label == "control")
        for change in other:
            if self.location(change) not in ctx.allowed:
                self.own(self.location(change), change.path.name)
        for change in caused:
            loc = self.location(change)
            if loc in ctx.allowed:
                continue
            if ctx.noise.change(tool, self.trap.base, change):
                self.own(loc, change.path.name)
                continue
            rel = change.path.relative_to(self.trap.base).as_posix()
            class_id = landed_class(probe, loc)
            if label in ("control", "read"):
                class_id = "symlink-parent" if loc == "far" else "outside-absolute"
            self.finding(
                ctx,
                class_id,
                "write",
                tool,
                param,
                out,
                f"{change.what} {shown(rel)} outside the roots",
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
        source: str = "",
    ) -> None:
        by_id(class_id)  # unknown classes are a bug here, not in the server
        severity = severity_for(class_id, kind)
        if not source:
            source = {"write": "snapshot", "roots": "behaviour", "hang": "behaviour"}.get(kind, "answer")
        self.report.add(
            Finding(class_id, kind, severity, tool, ctx.name, param, probe, evidence, out.request, location, source)
        )

    # -- the trap between writes -------------------------------------------------------------------------

    def location(self, change: Change) -> str:
        rel = change.path.relative_to(self.trap.base)
        return rel.parts[0] if rel.parts else ""

    def diff(self) -> list[Change]:
        changes = self.baseline.diff(Snapshot.take(self.trap.base, limit=self.o.max_entries, known=self.baseline))
        self.settle()  # the snapshot read every canary: not the server's doing
        if self.report.workspace_kind == "git":
            # git refreshes a repository's index on a read (status, diff): the index alone is not a write; a
            # write (add, commit, branch) also creates objects or refs, which still count
            refreshed = [c for c in changes if self.index_refresh(c)]
            if refreshed:
                self.restore(refreshed)
                return [c for c in changes if c not in refreshed]
        return changes

    def index_refresh(self, change: Change) -> bool:
        """A git index whose entries did not change (``git status`` rewrote only its stat data)."""
        if change.what != "modified" or change.path.name != "index" or change.path.parent.name != ".git":
            return False
        old = self.baseline.entries.get(change.path.relative_to(self.trap.base).as_posix())
        return old is not None and index_unchanged(old.data, change.path)

    def restore(self, changes: list[Change]) -> None:
        if changes:
            self.baseline.restore(changes, self.hardlinks)
        self.settle()

    def restore_all(self) -> None:
        self.restore(self.diff())


def _home() -> Path | None:
    try:
        return Path.home()
    except (KeyError, RuntimeError):
        return None


def _server_cwd(options: AuditOptions, trap: Trap) -> Path | None:
    """The server runs where the audit runs (``python my_server.py`` finds its script; ``python -m pkg`` its
    package), with a canary planted there; a directory the audit cannot write to keeps the trap's own ``cwd``."""
    where = options.server_cwd if options.server_cwd is not None else Path.cwd()
    if not os.access(where, os.W_OK | os.X_OK) or where.resolve() == Path("/"):
        return None
    return where.resolve()


async def run_audit(options: AuditOptions) -> Report:
    """Build a trap, audit the server in each mode, remove the trap; never raises for a misbehaving server."""
    started = time.monotonic()
    deadline = started + options.budget
    trap = build_trap(options.trap_dir if options.trap_dir is not None else default_trap_dir(), seed=options.seed)
    report = Report(options.spec.label(), str(trap.base), options.write, accept_partial=options.accept_partial)
    report.seed = trap.seed
    report.command = list(options.spec.command or options.spec.start)
    kind = options.workspace_kind
    if kind == "auto":
        kind = "git" if looks_like_git(options.spec.command or options.spec.start) else "dir"
    report.workspace_kind = kind
    if kind == "git":
        try:
            build_git(trap)
        except (OSError, subprocess.SubprocessError) as exc:
            remove(trap.base)
            report.incomplete_reason = shown(f"could not build the git trap: {exc}", 300)
            return report
    if options.stderr_log is not None:
        log_path = str(options.stderr_log)
    else:
        fd, log_path = tempfile.mkstemp(prefix="rootbound-audit-", suffix=".stderr.log")
        os.close(fd)
    stderr = StderrSink(log_path)
    report.stderr_log = log_path
    report.notes += plant_far(
        trap, server_cwd=_server_cwd(options, trap), temp_dir=options.far_temp, home=options.far_home or _home()
    )
    watch = watch_trap(trap, report.notes)
    report.far = {loc: str(where) for loc, where in trap.extra_dirs.items()}
    auditor = _Auditor(options, trap, report, stderr, watch)
    if watch is not None:
        watch.settle()  # the baseline walk read every canary: the audit's own reads, never the server's
        report.notes.append(f"kernel evidence: {ATTRIBUTION}")
    try:
        with StdoutNoise() as noise:
            with anyio.move_on_after(options.budget) as scope:
                await auditor.run()
        report.unparseable, report.unparseable_sample = noise.count, noise.sample
        if scope.cancelled_caught:
            report.incomplete_reason = f"the server used up its {options.budget:.0f}s budget"
        if auditor.flooded:
            report.incomplete_reason = report.incomplete_reason or "the server flooded the trap; write probes stopped"
        report.fold_causes()
    finally:
        stderr.close()
        report.stderr_note = stderr.note()
        killed = reap_marked(auditor.marker)
        if killed:
            report.notes.append(f"killed {killed} process(es) the server left running outside its group")
        if watch is not None:
            auditor.background_note()
            watch.close()
        if auditor.server_own:
            report.notes.append(
                "outside the roots but caused by no probe (the server's own files, or what its inside control did "
                "too), never a finding: " + shown(", ".join(sorted(auditor.server_own)[:8]), 300)
            )
        if not remove_far(trap, sorted(auditor.cwd_created)):
            report.notes.append("a canary beyond the trap (temp dir, home or the server's cwd) could not be removed")
        if options.keep_trap:
            report.trap_kept = True
        elif not remove(trap.base, deadline=max(deadline, time.monotonic() + 2.0)):
            report.notes.append(f"the trap could not be removed within the budget: {shown(trap.base)} is left on disk")
            report.trap_kept = True
        report.seconds = time.monotonic() - started
    return report
