"""The auditor's evidence layer: its kernel windows and trap snapshots around each call, what of them a call
caused (:mod:`rootbound.audit.causality`), and the findings judged from answers, changes and events. The probing
and the modes build on it (:mod:`.probing`, :mod:`.exercise`, :mod:`.runner`).
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Any

from rootbound.audit.asks import shape_for
from rootbound.audit.causality import CONTROL, caused_changes, caused_events, derived_name
from rootbound.audit.classes import by_id, severity_for
from rootbound.audit.far_canaries import remove_created
from rootbound.audit.filetypes import REGISTRY
from rootbound.audit.git_trap import index_unchanged
from rootbound.audit.judge import judge, kernel_evidence
from rootbound.audit.kernel_events import CREATED, IN_CREATE, IN_ISDIR, KernelEvent
from rootbound.audit.kernel_watch import Watch
from rootbound.audit.mode_context import ModeContext, Where
from rootbound.audit.options import (
    AuditOptions,
)
from rootbound.audit.probes import Probe, control_paths, landed_class
from rootbound.audit.report import Finding, Report
from rootbound.audit.sandbox import sandbox_support
from rootbound.audit.server_output import StderrSink
from rootbound.audit.session import (
    CallOutcome,
    SandboxPlan,
)
from rootbound.audit.shown import shown
from rootbound.audit.trap import (
    Change,
    Snapshot,
    Trap,
    plant_type,
)

__all__ = ["AuditorBase"]


class AuditorBase:
    """State and evidence of one audit: the trap, its baseline, the kernel watch, the report."""

    def __init__(
        self, options: AuditOptions, trap: Trap, report: Report, stderr: StderrSink, watch: Watch | None
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
        self.cwd_dirs: set[str] = set()  # directories calls made in the server's cwd (far_canaries.remove_trees)
        self.watch = watch
        self.finished = ""  # the last mode whose probes all ran (an error closing its session does not undo them)
        self.args_era: tuple[bool, str] | None = None  # args mode's session: 2026-07-28 or not, the version chosen
        self.marker = secrets.token_hex(16)
        self.git = report.workspace_kind == "git"
        self.server_own: set[str] = set()  # outside accesses no probe caused (see causality.py)
        self.deadline = time.monotonic() + options.budget  # the whole audit's (probes share what is left)
        self.modes_left = 1  # modes still to run, this one included (the runner counts them down)
        env = dict(os.environ)
        env["PWD"] = str(trap.cwd)
        env["TZ"] = "UTC"  # timestamps in answers are matched in UTC
        env["ROOTBOUND_AUDIT_RUN"] = self.marker
        if options.trap_home:
            env["HOME"] = str(trap.home)
        self.env = env
        # the canaries beyond the trap are planted by now: a sandboxed server must still see them
        self.sandbox_off = "not requested (--no-sandbox)" if not options.sandbox else sandbox_support()
        canaries = tuple(trap.extra_dirs.values())
        self.sandbox = None if self.sandbox_off else SandboxPlan(trap.base, canaries)

    def say(self, message: str) -> None:
        if self.o.progress is not None:
            self.o.progress(shown(message, 160))

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

    def findings_of(self, mode: str) -> list[Finding]:
        return [f for f in self.report.findings if f.mode == mode]

    def hung(self, ctx: ModeContext) -> bool:
        return ctx.peer.timeouts_in_a_row >= 2

    def scratch(self, style: str) -> str:
        assert self.trap.scratch is not None
        name = self.trap.scratch.name
        return {"absolute": str(self.trap.scratch), "relative": name, "uri": "file://" + str(self.trap.scratch)}[style]

    def existing(self, wants: str, style: str) -> str:
        """An existing file in W for a write's other path: W's canary of the type the tool wants, else the scratch
        file."""
        if wants:
            return control_paths(self.trap, self.typed_shape(wants), style, "")  # type: ignore[arg-type]
        return self.scratch(style)

    def content(self) -> str:
        return f"rbt-written-{os.urandom(4).hex()}\n"

    def judge_read(
        self, ctx: ModeContext, tool: str, param: str, probe: Probe, out: CallOutcome, *, names_paths: bool = False
    ) -> set[str]:
        """Findings from the answer (``names_paths``: a metadata-only tool, see :func:`judge`); returns the
        locations it proved."""
        found = judge(self.trap, out.request, out.result, out.is_error, frozenset(ctx.allowed), names_paths=names_paths)
        for ev in found:
            class_id = landed_class(probe, ev.location)
            self.finding(ctx, class_id, ev.kind, tool, param, out, ev.detail, Where(probe.path, ev.location))
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
            self.finding(ctx, class_id, ev.kind, tool, param, out, ev.detail, Where(probe.path, ev.location, "kernel"))
        self.created_in_cwd(events)

    def window_open(self) -> None:
        if self.watch is not None:
            self.watch.begin()

    def window_close(self) -> list[KernelEvent]:
        events = self.watch.end() if self.watch is not None else []
        self.dirs_made_in_cwd(events)
        return events

    def dirs_made_in_cwd(self, events: list[KernelEvent]) -> None:
        """Top-level directories a call made in the server's cwd (outside the trap: no snapshot restores it), by
        the kernel's word: a directory's create event, not a move (a move brings in one that existed). At the end
        each is removed if it holds only what the audit named (a converter's ``<cwd>/file:/…/rbt-new-X.pdf``)."""
        if "cwd" not in self.trap.extra_dirs:
            return
        for ev in events:
            made = ev.mask & IN_CREATE and ev.mask & IN_ISDIR
            if made and ev.location == "cwd" and ev.name and len(self.cwd_dirs) < 100:
                self.cwd_dirs.add(ev.name)

    def settle(self) -> None:
        """Discard the events the audit itself caused (its snapshots and restores read every canary)."""
        if self.watch is not None:
            self.watch.settle()

    def created_in_cwd(self, events: list[KernelEvent]) -> None:
        """Files a write probe created in the server's cwd (outside the trap, so no snapshot restores them): the
        audit's own ``rbt-`` names, or names derived from them (an archiver's ``<canary>.zip``), removed at the
        end."""
        if "cwd" not in self.trap.extra_dirs:
            return
        planted = {p.name for p in self.trap.planted}
        for ev in events:
            made = ev.name.removesuffix("2") in self.trap.issued or derived_name(self.trap, ev.name)
            mine = made and ev.name.startswith("rbt-") and ev.name not in planted
            if ev.location == "cwd" and ev.kind == "write" and mine:
                self.cwd_created.add(self.trap.cwd / ev.name)

    def undo_beyond(self, events: list[KernelEvent]) -> None:
        """Remove what a call created beyond the trap (the temp dir, the home, the server's cwd: no snapshot
        restores them) under a name the audit gave out, so that the next probe of that name meets the place as it
        was: a file left there by an earlier probe turns a create into an open of an existing file (SQLite's
        ``VACUUM INTO`` refuses it), which the kernel reports as a read, not the write the probe makes."""
        made = {
            (ev.location, ev.name)
            for ev in events
            if ev.mask & CREATED and ev.location in self.trap.extra_dirs and derived_name(self.trap, ev.name)
        }
        for location, name in sorted(made):
            note = f"could not remove {shown(name, 80)}, which a probe created in {location}"
            if remove_created(self.trap, location, name) is False and note not in self.report.notes:
                self.report.notes.append(note)
        if made:
            self.settle()

    def caused(
        self, ctx: ModeContext, tool: str, probe: Probe, events: list[KernelEvent], *, control: bool = False
    ) -> list[KernelEvent]:
        """The events of a window the call caused, less what the same tool does under an inside control."""
        kept = caused_events(self.trap, probe.path, CONTROL if control else probe.aim, events, deep=self.git)
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
        caused, other = caused_changes(self.trap, probe.path, changes, control=label == "control", deep=self.git)
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
                Where(probe.path, loc),
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
        where: Where | str = "",
    ) -> None:
        """One finding; ``where`` is the probe's spelling, or a :class:`Where` (spelling, location, what saw it)."""
        probe, location, source = (where, "", "") if isinstance(where, str) else where
        by_id(class_id)  # unknown classes are a bug here, not in the server
        severity = severity_for(class_id, kind)
        if not source:
            source = {"write": "snapshot", "roots": "behaviour", "hang": "behaviour"}.get(kind, "answer")
        self.report.add(
            Finding(class_id, kind, severity, tool, ctx.name, param, probe, evidence, out.request, location, source)
        )

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
