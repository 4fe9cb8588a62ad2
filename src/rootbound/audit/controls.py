"""Positive controls: for one path parameter of one call shape, find a spelling of something inside W (W's file,
W itself, a new file in W) that the tool serves, with its other path parameters also inside W.

A control separates *tested* from *blocked by the server* (every attempt refused: the server's own message is
kept, bounded and escaped) and *not tested* (answers that never showed W). It also classifies the tool by what the
call *did*: a change inside W (the trap snapshot) makes it a writer whatever its name says; W's content with no
change makes it a reader. The auditor that drives it is any :class:`AuditorView` (the runner's ``_Auditor``).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, NamedTuple

from rootbound.audit.asks import refusal_flag, set_flag
from rootbound.audit.filetypes import named_type
from rootbound.audit.judge import control_evidence, control_names_path, refusal_words, result_text
from rootbound.audit.kernel_events import IN_ACCESS, KernelEvent
from rootbound.audit.mode_context import AuditorView, Learnt, ModeContext
from rootbound.audit.patch_text import learn_format
from rootbound.audit.probes import TYPED_SHAPES, Probe, Shape, Style, control_paths
from rootbound.audit.report import ParamStatus
from rootbound.audit.session import CallOutcome
from rootbound.audit.shown import shown
from rootbound.audit.statements import learn_command
from rootbound.audit.text_plans import text_family_shape
from rootbound.audit.tool_errors import extra_required, learn_params, object_keys, plan_learnt, validation_error
from rootbound.audit.tools import ToolPlan
from rootbound.audit.trap import CLEAN, Change, Trap
from rootbound.audit.values import learn_value

__all__ = ["control_leaf", "learn"]

STYLES: tuple[Style, ...] = ("absolute", "relative", "uri")
PATTERNS = ("rbt", "*rbt*", "**/*rbt*")


def _message(out: CallOutcome) -> str:
    """The server's own words: the JSON-RPC error, else the text items of the error result."""
    content = out.result.get("content") if isinstance(out.result, dict) else None
    texts = (
        [c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)]
        if isinstance(content, list)
        else []
    )
    text = out.error or " ".join(texts) or result_text(out.result)
    return shown(" ".join(text.split()), 200) if text.strip() else "an error without a message"


async def learn(ctx: ModeContext, plan: ToolPlan) -> tuple[ToolPlan, bool]:
    """An empty schema: call with no arguments and read the parameter names from the validation error. Also says
    whether that call failed: a tool that answers ``{}`` without an error and names nothing takes no path."""
    out = await ctx.peer.call(plan.name, {})
    text = (out.error or "") + "\n" + result_text(out.result)
    names = {k: v for k, v in learn_params(text).items() if k not in ctx.tool_names} if out.is_error else {}
    return plan_learnt(plan.name, names, plan.access), out.is_error or out.timed_out


async def control_leaf(
    host: AuditorView, ctx: ModeContext, plan: ToolPlan, param: str, status: ParamStatus
) -> Learnt | None:
    """Try W's file, W or a new file in W at ``param``, in each style; record why nothing worked. A refusal that
    names a flag (``confirm=True``) sets it, one that lists the values a filler takes ("must be one of: code,
    markdown") sends the first of them, and one that names a file type (or quotes an example of one) plants
    canaries of that type: the control runs again once for each."""
    errors: list[str] = []
    tally = _Tally()
    sent: dict[str, CallOutcome] = {}  # calls already made that showed nothing: not sent twice
    learnt: set[str] = set()
    while True:
        got, done = await _shapes(host, ctx, plan, param, status, errors, tally, sent)
        if got is not None and got.kind == NO_PATH:
            status.status = NO_PATH
            status.detail = "not a path: the call did the same with a path naming nothing here (its other paths held W)"
            return None
        if got is not None or done:
            return got
        flag = next((f for f in map(refusal_flag, errors) if f), None)
        if flag and "flag" not in learnt and set_flag(plan, flag):
            learnt.add("flag")
            host.say(f"{ctx.name}: {plan.label}: the server asks for {flag}=true; trying again with it")
            continue
        if any(_asked_value(host, ctx, (plan, plan), error, tally) for error in errors):
            continue
        if "command" not in learnt and _command_word(plan, param, errors):
            learnt.add("command")
            host.say(f"{ctx.name}: {plan.label}: the server lists the commands it allows; trying again with one")
            continue
        if "patch" not in learnt and _patch_format(plan, param, errors):
            learnt.add("patch")
            host.say(f"{ctx.name}: {plan.label}: the server names another patch format; trying again in it")
            continue
        ext = next((t for t in map(named_type, errors) if t), None)
        if ext and "type" not in learnt and ext != plan.wants:
            learnt.add("type")
            plan.wants = ext
            continue
        break
    plain = not any(leaf.patch or leaf.text for leaf in plan.leaves if leaf.name == param)
    quiet = tally.calls >= 2 and tally.plain and not tally.touched and getattr(host, "watch", None) is not None
    if plain and not errors and quiet:
        # every spelling of W answered (one at least in no word of refusal), and the kernel saw the server open,
        # read or list nothing in the trap under any of them (nor did the trap change): the value is compared as a
        # string, never used as a path. Not for a path inside a statement, a command line or a patch.
        status.status = NO_PATH
        status.detail = (
            f"not a path parameter: the control showed no file access ({tally.calls} calls with W's paths all "
            f"answered, {tally.plain} in no word of refusal, and the kernel saw no open, read or listing in the trap "
            "under any of them; a bare stat is not visible to it)"
        )
        return None
    if errors and not tally.answered:
        status.status = "blocked"
        status.detail = f"the server refused every spelling of W: {errors[0]}"
    else:
        status.detail = "the control never showed W's file, names or a change in W" + (
            f" (first error: {errors[0]})" if errors else ""
        )
    return None


def _patch_format(plan: ToolPlan, param: str, errors: list[str]) -> bool:
    """A patch leaf whose every spelling was refused in words that name the other patch format: switch to it."""
    fmt = learn_format(errors)
    for index, leaf in enumerate(plan.leaves):
        if leaf.name == param and leaf.patch and fmt is not None and fmt != leaf.patch:
            plan.leaves[index] = dataclasses.replace(leaf, patch=fmt)
            return True
    return False


def _command_word(plan: ToolPlan, param: str, errors: list[str]) -> bool:
    """A command leaf whose every call was refused in words that list the allowed commands: use one of them."""
    for index, leaf in enumerate(plan.leaves):
        word = learn_command(leaf.text, errors) if leaf.name == param and leaf.text else None
        if word is not None:
            plan.leaves[index] = dataclasses.replace(leaf, text=word)
            return True
    return False


@dataclasses.dataclass
class _Tally:
    """What one parameter's control has seen so far: calls that answered, fillers set from a refusal's list."""

    answered: int = 0
    valued: set[tuple[str, ...]] = dataclasses.field(default_factory=set)
    keyed: set[tuple[str, ...]] = dataclasses.field(default_factory=set)  # objects given the keys a refusal named
    described: bool = False  # the optional fillers with a described example were sent
    calls: int = 0  # control calls made
    touched: bool = False  # a control call's window held a kernel event, or the trap changed
    plain: int = 0  # control calls answered without an error and in no word of refusal


def _learn_at_once(
    host: AuditorView, ctx: ModeContext, plans: tuple[ToolPlan, ToolPlan], error: str, tally: _Tally
) -> str:
    """What a refusal teaches that is worth the same spelling again: a value it lists or the keys an object needs
    ("value"), else (once) the
    optional fillers whose description gives an example (``range``, "e.g., A1:C10": a server may need it after
    all; "described", undone by :func:`_send_described` if the same refusal comes back); "" if nothing."""
    if _asked_value(host, ctx, plans, error, tally):
        return "value"
    keys = object_keys(plans, error, tally.keyed) if len(tally.keyed) < 2 else None
    if keys is not None:
        tally.keyed.add(keys[0])
        where, names = shown(".".join(keys[0]), 60), shown(", ".join(keys[1]), 80)
        host.say(f"{ctx.name}: {plans[0].label}: the server names the keys {where} needs; trying {names}")
        return "value"
    if tally.described or not plans[1].described:
        return ""
    tally.described = True
    _send_described(plans, True)
    host.say(f"{ctx.name}: {plans[0].label}: refused; trying again with its optional parameters that show an example")
    return "described"


def _send_described(plans: tuple[ToolPlan, ToolPlan], send: bool) -> None:
    """Send the optional fillers with a described example on every call from now on (or no longer)."""
    for each in plans:
        for pointer in each.described:
            if pointer in each.roles:
                role, required, value = each.roles[pointer]
                each.roles[pointer] = (role, (*required[:-1], send), value)


def _asked_value(
    host: AuditorView, ctx: ModeContext, plans: tuple[ToolPlan, ToolPlan], error: str, tally: _Tally
) -> bool:
    """A refusal that lists the values a filler takes: set the first (on the plan and on the pass's copy of it),
    each filler once and three at most; True if one was set."""
    plan, tried = plans
    asked = learn_value(tried.roles, error, tally.valued) if len(tally.valued) < 3 else None
    if asked is None:
        return False
    pointer, value = asked
    tally.valued.add(pointer)
    for each in (plan, tried):
        if pointer in each.roles:
            each.roles[pointer] = ("filler", each.roles[pointer][1], value)
    where = shown(".".join(pointer), 60)
    host.say(f"{ctx.name}: {plan.label}: the server names the values {where} takes; trying {shown(value, 40)}")
    return True


async def _shapes(
    host: AuditorView,
    ctx: ModeContext,
    plan: ToolPlan,
    param: str,
    status: ParamStatus,
    errors: list[str],
    tally: _Tally,
    sent: dict[str, CallOutcome],
) -> tuple[Learnt | None, bool]:
    """One round of control shapes: (what it proved, whether to stop)."""
    wanted: list[tuple[Shape, bool]] = [(host.typed_shape(plan.wants), False)] if plan.wants else []
    # the built-in typed canaries, for a tool that said no type; one that names its type gets that one only
    typed: list[tuple[Shape, bool]] = [] if wanted else [(shape, False) for shape in TYPED_SHAPES]
    # a writer of the type it asks for may write only into a real file of that type that exists (a workbook's
    # cells, a notebook renamed): W's typed canary, written in place
    typed_write: list[tuple[Shape, bool]] = [(shape, True) for shape, _ in wanted]
    shapes: list[tuple[Shape, bool]] = [*wanted, ("file", False), ("dir", False), *typed]
    if plan.access == "write" and plan.edits:
        # an editor changes files that exist: probed on existing files (a new one would make every probe fail)
        shapes = [("file", True), *typed_write, ("new", True), *wanted, ("file", False), ("dir", False), *typed]
    elif plan.access == "write":
        # a writer by name: new file, existing file (write evidence), then read shapes (a reader after all?)
        shapes = [("new", True), ("file", True), *typed_write, *wanted, ("file", False), ("dir", False), *typed]
    # last: a clean subdirectory of W (no links, no FIFO), for tools that refuse or fail on W's own trap entries
    shapes.append(("clean", False))
    shapes = list(dict.fromkeys(shapes))
    fixed = text_family_shape(plan, param)
    if fixed:  # a statement or command family names a path of one shape (:mod:`.statements`)
        shapes = [(fixed, fixed == "new")]
    patterns = PATTERNS if plan.pattern_params else ("rbt",)
    learnt_extra = False
    for every, tried in _passes(plan):
        for style in STYLES[:2] if fixed else STYLES:  # no file: URI inside a statement
            for shape, as_write in shapes:
                for pattern in patterns:
                    if host.hung(ctx):
                        return None, True
                    attempt = Try(style, shape, as_write, pattern, every)
                    got, out = await _attempt(host, ctx, tried, param, attempt, (sent, tally))
                    if got is not None or out is None:
                        if got is None and out is None:
                            status.detail = "it modified W during its control (the audit writes only with --write)"
                            return None, True
                        return got, True
                    if out.is_error or out.timed_out:
                        errors.append("timed out" if out.timed_out else _message(out))
                        learnt = _learn_at_once(host, ctx, (plan, tried), errors[-1], tally) if out.is_error else ""
                        if learnt:  # what the refusal taught, at once: the same spelling again with it
                            got, again = await _attempt(host, ctx, tried, param, attempt, (sent, tally))
                            if got is not None:
                                return got, True
                            if again is None:
                                status.detail = "it modified W during its control (the audit writes only with --write)"
                                return None, True
                            if learnt == "described" and (
                                again.timed_out or (again.is_error and _message(again) == errors[-1])
                            ):
                                _send_described((plan, tried), False)  # the same refusal: it did not matter
                            out = again
                            tally.answered += not (out.is_error or out.timed_out)
                        text = (out.error or "") + "\n" + result_text(out.result)
                        if not learnt_extra and out.is_error and validation_error(text):
                            learnt_extra = True
                            if extra_required(tried, learn_params(text), ctx.tool_names):
                                got, out = await _attempt(host, ctx, tried, param, attempt, (sent, tally))
                                if got is not None:
                                    return got, True
                    else:
                        tally.answered += 1
    return None, False


NOT_A_PATH = "absent/rbt"  # below a directory of W that does not exist: a path parameter fails or acts elsewhere
NO_PATH = "no path"  # a control's kind: what it showed came through the tool's other path parameters


async def _moot(
    host: AuditorView, ctx: ModeContext, tool: str, bare: dict[str, Any], seen: tuple[str, list[Change], Shape, bool]
) -> bool:
    """Whether a control's evidence came through the tool's *other* path parameters (which held W too): sent
    again with a path in W that names nothing at this parameter, the call succeeds and shows the same (the same
    entries of W changed the same way, or W's marker read, listed or opened again). A cell's ``source`` or a
    metadata ``path`` key beside ``notebook_path`` is not a path: probing it only repeats that call's probes."""
    kind, inside, shape, failed = seen
    host.window_open()
    out = await ctx.peer.call(tool, bare)
    events = host.window_close()
    changes = host.diff()
    host.restore(changes)
    if out.timed_out or out.is_error != failed:  # the same outcome (the kernel may see a failed call open W's file)
        return False
    if kind == "write":
        return {(c.path, c.what) for c in changes} == {(c.path, c.what) for c in inside}
    if changes:
        return False
    again: str | None = control_evidence(host.trap, out.request, out.result, out.is_error)
    if again is None and _opened_marker(host.trap, events, shape):
        again = "open"
    if again is None and control_names_path(host.trap, out.request, out.result, out.is_error):
        again = "path"
    return again == kind


class Try(NamedTuple):
    """One control spelling: its style, the shape it names, whether it writes, the pattern, every path filled."""

    style: Style
    shape: Shape
    as_write: bool
    pattern: str
    every: bool


def _passes(plan: ToolPlan) -> list[tuple[bool, ToolPlan]]:
    """The argument shapes a control tries, in order: the required path parameters only; every path parameter;
    then, for a tool with several, each one in turn as the directory the call works in (W, and a file in W when it
    is the one probed): ``path`` beside ``filePath`` names the repository whatever its name says."""
    if len(plan.leaves) < 2:
        return [(False, plan)]
    out = [(False, plan), (True, plan)]
    for leaf in plan.leaves:
        if not leaf.array and not leaf.dir_sibling:
            out.append((True, dataclasses.replace(plan, workdirs=plan.workdirs | {leaf.name})))
    return out


def _opened_marker(trap: Trap, events: list[KernelEvent], shape: Shape) -> bool:
    """The parameter reached the file system: the kernel saw the server open (or read) the very entry of W the
    control named (W itself is only counted when it was read: a listing)."""
    names = {"file": trap.marker.name, "clean": CLEAN, "dir": ""}
    name = trap.typed[shape]["ws"].name if shape in trap.typed else names.get(shape)
    if name is None:
        return False
    return any(
        ev.location == "ws" and ev.name == name and (name or ev.mask & IN_ACCESS) and ev.kind != "write"
        for ev in events
    )


async def _attempt(
    host: AuditorView,
    ctx: ModeContext,
    plan: ToolPlan,
    param: str,
    attempt: Try,
    seen: tuple[dict[str, CallOutcome], _Tally],
) -> tuple[Learnt | None, CallOutcome | None]:
    """One control call. ``(Learnt, out)`` on success; ``(None, out)`` when W never showed; ``(None, None)`` when
    a tool the audit may not let write changed W (it is not called again). A call with the same arguments (up to
    the fresh name of a new file), shape and intent as one in ``sent`` is not made again: its answer is reused.
    The tally counts the calls and whether any of them touched the trap (a kernel event, a change)."""
    style, shape, as_write, pattern, every = attempt
    sent, tally = seen
    trap = host.trap
    new = trap.new_name(plan.wants)
    second = trap.new_name(plan.wants)  # the other path of a rename or a copy: a new file of the type it wants
    if as_write:
        existing = shape == "file" or shape in trap.typed  # W's scratch file, or W's canary of the wanted type
        if shape == "file":
            value = host.scratch(style)
        else:
            value = control_paths(trap, shape if existing else "new", style, new)
        other = control_paths(trap, "new", style, second) if existing else host.existing(plan.wants, style)
        content = host.content()
    else:
        value = control_paths(trap, shape, style, new)
        sibling = plan.workdir(param) and shape in ("dir", "clean")
        other = control_paths(trap, "file", style, new) if sibling else value  # a working directory: a file in it
        content = ""
    workdir = control_paths(trap, "dir", style, "")
    arguments = plan.arguments(param, value, other, pattern, content, every_path=every, others_dir=workdir)
    key = json.dumps([shape, as_write, arguments], sort_keys=True, default=str)
    key = key.replace(new, "\0new").replace(second, "\0second")
    if key in sent:
        return None, sent[key]
    host.window_open()
    out = ctx.last = await ctx.peer.call(plan.name, arguments)
    events = host.window_close()
    # A control can itself escape (a recursive listing that follows W's links out, a write through a link).
    label = "control"
    changes = host.diff()
    tally.calls += 1
    tally.touched = tally.touched or bool(events) or bool(changes)
    tally.plain += not (out.is_error or out.timed_out or refusal_words(result_text(out.result)))
    inside = [c for c in changes if host.location(c) in ctx.allowed]
    host.judge_write(ctx, plan.name, param, label, Probe("symlink-parent", value, "far"), out, changes)
    changed = {host.location(c) for c in changes}
    host.judge_kernel(
        ctx, plan.name, param, Probe("symlink-parent", value, "far"), out, events, skip=changed, control=True
    )
    host.restore(changes)
    # the same call with a path in W that names nothing at this parameter (its other path parameters unchanged):
    # absolute, below a directory that does not exist, so that whatever a server does with it stays in W
    absent = f"{trap.workspace}/{trap.new_name('')[:-4]}-{NOT_A_PATH}"
    bare = plan.arguments(param, absent, other, pattern, content, every_path=every, others_dir=workdir)
    if inside:
        if not host.o.write:
            return None, None
        writer = plan if plan.access == "write" else dataclasses.replace(plan, access="write")
        if len(plan.leaves) > 1 and await _moot(host, ctx, plan.name, bare, ("write", inside, shape, out.is_error)):
            return Learnt(writer, param, style, shape, NO_PATH, pattern, every), out
        return Learnt(writer, param, style, shape, "write", pattern, every), out
    if as_write:
        sent[key] = out
        return None, out
    kind: str | None = control_evidence(trap, out.request, out.result, out.is_error)
    if kind is None and _opened_marker(trap, events, shape):
        kind = "open"  # nothing recognisable came back, but the kernel saw the server open W's marker
    if kind is None and shape == "file" and control_names_path(trap, out.request, out.result, out.is_error):
        kind = "path"  # a metadata-only answer: W's marker named by its resolved path (probes are judged so too)
    if kind is None:
        sent[key] = out
        return None, out
    if len(plan.leaves) > 1 and await _moot(host, ctx, plan.name, bare, (kind, [], shape, out.is_error)):
        return Learnt(plan, param, style, shape, NO_PATH, pattern, every), out
    reader = plan if plan.access == "read" else dataclasses.replace(plan, access="read")
    return Learnt(reader, param, style, shape, kind, pattern, every), out
