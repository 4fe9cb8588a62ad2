"""Tools that move the server's own bounds: ``configure(allowed_roots=[...])``, ``set_working_dir``,
``add_directory``, ``set_allowed_directories``. A model can call them as easily as a read, so a server whose
bounds a tool can widen to any directory is not confined at all.

Such a tool is recognised by its name (a verb that sets or adds, and a noun for a directory, a root or a scope)
or by a parameter named like ``allowed_roots``. It is probed last in a mode (the server keeps the widened state):
called with an outside directory of the trap, then the read tools the mode tested read the canary there again.
The canary's token (or the kernel seeing it opened) after the call, where the same read was refused before, is a
``self-widening`` finding against the widening tool.
"""

from __future__ import annotations

import re
from typing import Any

from rootbound.audit.judge import judge, kernel_evidence
from rootbound.audit.mode_context import AuditorView, Learnt, ModeContext, Where
from rootbound.audit.report import ParamStatus
from rootbound.audit.tools import ToolPlan, word_list
from rootbound.audit.vocabulary import WIDEN_NOUN, WIDEN_VERB

__all__ = ["probe_widening", "widens"]

_PARAM = re.compile(
    r"^allow(ed)?[_-]?[a-z]|^roots$|allowlist|^(root|base)[_-]?(dirs|directories|paths)$", re.IGNORECASE
)
_PATH_NOUN = frozenset({"path", "paths"})
MAX_TOOLS = 5  # widening tools probed per mode
MAX_READERS = 4  # read tools re-run after each widening call
_RANK = {"write": 4, "read": 3, "list": 2, "meta": 1}


def widens(tool: dict[str, Any]) -> bool:
    """Whether a ``tools/list`` entry looks like it changes the server's own allowed set."""
    words = word_list(str(tool.get("name", "")))
    schema = tool.get("inputSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    named = bool(set(words) & WIDEN_VERB) and bool(set(words) & WIDEN_NOUN)
    return named or _sets_any(props, 0)


def _sets_any(props: Any, depth: int) -> bool:
    """A parameter that sets the allowed set, at the top or inside a settings object (``configure(settings=
    {allowed_roots: [...]})``)."""
    if not isinstance(props, dict) or depth > 3:
        return False
    for name, schema in list(props.items())[:64]:
        if _sets_bounds(str(name), schema):
            return True
        if isinstance(schema, dict) and _sets_any(schema.get("properties"), depth + 1):
            return True
    return False


def _sets_bounds(name: str, schema: Any) -> bool:
    """A parameter that sets the allowed set: ``allowed_roots``, ``allowedDirectories``, ``allow_paths``,
    ``roots``, ``root_dirs``, an ``allowlist``; a string or a list of them. A flag or a number named ``allow...``
    (git_commit's ``allowEmpty``) is not one."""
    if not _PARAM.search(name):
        return False
    kinds = schema.get("type") if isinstance(schema, dict) else None
    kinds = set(kinds) if isinstance(kinds, list) else {kinds}
    if kinds and kinds <= {"boolean", "number", "integer", "null"}:
        return False
    return bool((set(word_list(name)) - {"allow", "allowed"}) & (WIDEN_NOUN | _PATH_NOUN))


async def probe_widening(
    host: AuditorView,
    ctx: ModeContext,
    plans: list[tuple[ToolPlan, list[ParamStatus]]],
    learnt: list[Learnt],
) -> None:
    """Call each widening tool with an outside directory, then re-read the canary there with the tested readers."""
    trap = host.trap
    far = trap.base / "far"
    already = {(f.tool, f.location) for f in host.findings_of(ctx.name)}
    readers = [
        item
        for item in learnt
        if item.plan.access == "read" and item.style in ("absolute", "uri") and (item.plan.name, "far") not in already
    ][:MAX_READERS]
    for plan, statuses in plans[:MAX_TOOLS]:
        for leaf, status in zip(plan.leaves[:3], statuses, strict=False):
            if host.hung(ctx):
                return
            if not readers:
                status.detail = "a self-widening tool: not probed (no read tool was tested to check its effect)"
                continue
            host.say(f"{ctx.name}: {plan.label} {leaf.name} (self-widening)")
            host.window_open()
            widen = await ctx.peer.call(
                plan.name, plan.arguments(leaf.name, str(far), str(far), "rbt", "", others_dir=str(far))
            )
            host.window_close()
            host.restore(host.diff())
            for item in readers:
                target = _target(host, item)
                spelling = target if item.style == "absolute" else "file://" + target
                host.window_open()
                out = await ctx.peer.call(
                    item.plan.name,
                    item.plan.arguments(
                        item.param, spelling, item.others(host, ""), item.pattern, "", others_dir=item.workdir(host)
                    ),
                )
                events = host.window_close()
                allowed = frozenset(ctx.allowed)
                seen = judge(trap, out.request, out.result, out.is_error, allowed)
                seen += kernel_evidence(trap, events, allowed)
                # the worst it shows (a read of the canary, not only the listing of its directory)
                for ev in sorted(seen, key=lambda e: _RANK.get(e.kind, 0), reverse=True)[:1]:
                    host.finding(
                        ctx,
                        "self-widening",
                        ev.kind,
                        plan.name,
                        leaf.name,
                        widen,
                        f"after {plan.name}({leaf.name}={far}), {item.plan.name} {item.param}: {ev.detail}",
                        Where(str(far), ev.location, "kernel" if "kernel" in ev.detail else "answer"),
                    )
            status.status, status.detail, status.evidence = "tested", "", "widening"
            status.probes += 1 + len(readers)


def _target(host: AuditorView, item: Learnt) -> str:
    """The outside canary a reader of this shape reads: far's token file, far's typed file, or far itself."""
    trap = host.trap
    if item.shape == "file":
        return str(trap.canaries["far"].path)
    if item.shape in trap.typed:
        return str(trap.typed[item.shape]["far"])
    return str(trap.base / "far")
