"""The audit run: per mode, start the server on a fresh view of the trap, learn each path parameter of each tool
from a positive control, fire the probe catalogue at each one, judge every answer, and (in roots mode) test
whether removed roots stay served. Coverage (what was tested, blocked or not tested, and why) is recorded per
mode, tool and parameter as it goes: it is half of the verdict.

Modes: ``args`` (the workspace on the command line, no roots capability), ``roots`` (no workspace argument; the
workspace and a second root given as MCP roots over the handshake era) and ``roots-2026`` (the same over
2026-07-28, when the server speaks it).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from rootbound.audit import _sdk
from rootbound.audit.causality import ATTRIBUTION
from rootbound.audit.exercise import Exerciser
from rootbound.audit.far_canaries import plant_far, remove_far, remove_trees
from rootbound.audit.git_trap import build_git, looks_like_git
from rootbound.audit.judge import kernel_evidence
from rootbound.audit.kernel_watch import watch_trap
from rootbound.audit.mode_context import ModeContext
from rootbound.audit.options import (
    ROOTS_GRACE,
    ROOTS_WAIT,
    AuditOptions,
)
from rootbound.audit.report import ModeRun, Report
from rootbound.audit.sandbox import status_line
from rootbound.audit.server_output import StderrSink, StdoutNoise, informative_line
from rootbound.audit.session import (
    Connect,
    CountingProvider,
    Peer,
    StartFailed,
    leaf_error,
    open_peer,
    reap_marked,
)
from rootbound.audit.shown import shown
from rootbound.audit.trap import (
    Trap,
    TrapFlooded,
    build_trap,
    default_trap_dir,
    remove,
)

__all__ = ["AuditOptions", "run_audit"]


class _Auditor(Exerciser):
    """The modes: start the server in each, exercise it, end it."""

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
        for done, name in enumerate(modes):
            self.modes_left = len(modes) - done
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
                line = informative_line(str(exc))
                status = "" if exc.status is None else f"exited with status {exc.status}"
                if exc.status is not None and exc.status < 0:
                    status = f"was killed by signal {-exc.status}"
                detail = shown(f"{status}: {line}" if status else line, 200)
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
            connect=Connect(era, provider, self.o.timeout, self.stderr, name, sandbox=self.sandbox),
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
    watch = watch_trap(trap, report.notes, fanotify=options.kernel == "auto")
    report.far = {loc: str(where) for loc, where in trap.extra_dirs.items()}
    auditor = _Auditor(options, trap, report, stderr, watch)
    report.notes.append(status_line(auditor.sandbox_off))
    if watch is not None:
        watch.settle()  # the baseline walk read every canary: the audit's own reads, never the server's
        watch.marker = auditor.marker
        report.notes.append(f"kernel evidence: {ATTRIBUTION.get(watch.method, watch.method)}")
    report.notes.append(
        f"budget {options.budget:.0f}s, shared fairly: each parameter is probed right after its control passes, "
        "within at most twice an equal share of what is left (over the parameters left in its mode and the modes "
        "still to run)"
    )
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
            if watch.others:
                report.notes.append(
                    f"the kernel saw {watch.others} access(es) by processes without the run's marker in their "
                    "environment (kept, judged like the server's: a child that clears its environment is still seen)"
                )
        if auditor.server_own:
            report.notes.append(
                "outside the roots but caused by no probe (the server's own files, or what its inside control did "
                "too), never a finding: " + shown(", ".join(sorted(auditor.server_own)[:8]), 300)
            )
        # The canaries of the types tools asked for, by path: bench/audit_reproduce.py plants them again.
        report.typed = {shape: {loc: str(path) for loc, path in files.items()} for shape, files in trap.typed.items()}
        report.notes.extend(remove_trees(trap, sorted(auditor.cwd_dirs)))  # before remove_far: it forgets names
        if not remove_far(trap, sorted(auditor.cwd_created)):
            report.notes.append("a canary beyond the trap (temp dir, home or the server's cwd) could not be removed")
        if options.keep_trap:
            report.trap_kept = True
        elif not remove(trap.base, deadline=max(deadline, time.monotonic() + 2.0)):
            report.notes.append(f"the trap could not be removed within the budget: {shown(trap.base)} is left on disk")
            report.trap_kept = True
        report.seconds = time.monotonic() - started
    return report
