"""The audit's probes beyond the catalogue: roots that change under a live session, and a FIFO.

After the catalogue, in roots mode, the second root is removed and then every root is withdrawn: a server that
keeps serving them (stale or empty roots) is found by reading there again. A FIFO read that blocks, with the server
holding the FIFO open, is a hang finding. Each function drives the run's auditor (its findings, trap and progress).
"""

from __future__ import annotations

import errno
import os

import anyio

from rootbound.audit.judge import control_evidence, judge
from rootbound.audit.mode_context import AuditorView, Learnt, ModeContext, Where
from rootbound.audit.probes import Style, control_paths

__all__ = ["empty_roots", "fifo", "stale_roots"]


async def stale_roots(auditor: AuditorView, ctx: ModeContext, learnt: list[Learnt]) -> None:
    """Read under the second root, remove it (list_changed in the handshake era), read again."""
    assert ctx.provider is not None
    second = auditor.trap.second
    reads = [item for item in learnt if item.plan.access == "read"]
    targets: list[tuple[Learnt, str]] = []
    for item in reads:
        path = second / auditor.trap.canaries["second"].name if item.shape == "file" else second
        spelling = {"absolute": str(path), "uri": "file://" + str(path)}.get(item.style)
        if spelling is None:
            continue  # relative paths name the first root: they cannot reach the second
        second_dir = {"absolute": str(second), "uri": "file://" + str(second)}[item.style]
        out = await ctx.peer.call(
            item.plan.name, item.plan.arguments(item.param, spelling, spelling, item.pattern, "", others_dir=second_dir)
        )
        seen = judge(auditor.trap, out.request, out.result, out.is_error, frozenset({"ws"}))
        if any(ev.location == "second" for ev in seen):
            targets.append((item, spelling))
    if not targets:
        ctx.run.detail = (
            ctx.run.detail + "; " if ctx.run.detail else ""
        ) + "stale roots not tested: the second root never served"
        return
    auditor.say(f"{ctx.name}: removing the second root")
    ctx.provider.rearm()
    await ctx.provider.remove(str(second))
    ctx.allowed.discard("second")
    with anyio.move_on_after(2.0):
        if not ctx.peer.modern:
            await ctx.provider.asked.wait()
    await anyio.sleep(0.1)
    for item, spelling in targets:
        second_dir = {"absolute": str(second), "uri": "file://" + str(second)}[item.style]
        out = await ctx.peer.call(
            item.plan.name, item.plan.arguments(item.param, spelling, spelling, item.pattern, "", others_dir=second_dir)
        )
        for ev in judge(auditor.trap, out.request, out.result, out.is_error, frozenset({"ws"})):
            if ev.location == "second":
                asked = "after asking for roots again" if ctx.provider.asked.is_set() else "without asking again"
                auditor.finding(
                    ctx,
                    "stale-roots",
                    "roots",
                    item.plan.name,
                    item.param,
                    out,
                    f"{ev.detail} after the root was removed ({asked})",
                    spelling,
                )


async def empty_roots(auditor: AuditorView, ctx: ModeContext, learnt: list[Learnt]) -> None:
    """Withdraw every root: W must stop being served (an empty set is not "no restriction")."""
    assert ctx.provider is not None
    auditor.say(f"{ctx.name}: withdrawing every root")
    ctx.provider.rearm()
    await ctx.provider.set_roots([])
    ctx.allowed.clear()
    with anyio.move_on_after(2.0):
        if not ctx.peer.modern:
            await ctx.provider.asked.wait()
    await anyio.sleep(0.1)
    for item in learnt:
        if item.plan.access != "read" or auditor.hung(ctx):
            continue
        style: Style = "uri" if item.style == "uri" else "absolute"
        spelling = control_paths(auditor.trap, item.shape, style, "")
        out = await ctx.peer.call(
            item.plan.name,
            item.plan.arguments(item.param, spelling, spelling, item.pattern, "", others_dir=item.workdir(auditor)),
        )
        kind = control_evidence(auditor.trap, out.request, out.result, out.is_error)
        if kind is not None:
            asked = "after asking for roots again" if ctx.provider.asked.is_set() else "without asking again"
            auditor.finding(
                ctx,
                "empty-roots",
                "roots",
                item.plan.name,
                item.param,
                out,
                f"W's {'token' if kind == 'read' else 'names' if kind == 'list' else 'mtime'} still served "
                f"with every root withdrawn ({asked})",
                Where(spelling, "ws"),
            )


async def fifo(auditor: AuditorView, ctx: ModeContext, learnt: list[Learnt]) -> None:
    """Read W/fifo once; if the call blocks and a writer then finds the server waiting, that is the evidence."""
    fifo = auditor.trap.fifo
    item = next((i for i in learnt if i.plan.access == "read" and i.kind == "read" and i.shape == "file"), None)
    if fifo is None or item is None:
        return
    auditor.fifo_done = True
    spelling = {"absolute": str(fifo), "relative": fifo.name, "uri": "file://" + str(fifo)}[item.style]
    peer = ctx.peer
    saved = peer.timeout
    peer.timeout = min(2.0, saved)
    try:
        out = await peer.call(
            item.plan.name,
            item.plan.arguments(item.param, spelling, spelling, item.pattern, "", others_dir=item.workdir(auditor)),
        )
    finally:
        peer.timeout = saved
    if not out.timed_out:
        return
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # succeeds only if a reader is waiting
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return
        raise
    os.close(fd)  # EOF for the blocked reader
    peer.timeouts_in_a_row = 0
    auditor.finding(
        ctx,
        "fifo-block",
        "hang",
        item.plan.name,
        item.param,
        out,
        f"the call blocked for {out.seconds:.1f}s with the server holding the FIFO open for reading",
        spelling,
    )
