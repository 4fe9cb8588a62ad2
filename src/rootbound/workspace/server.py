"""The ``rootbound serve`` MCP server: workspace tools confined to the client's roots ∩ the operator's DIRs.

Root policy (``docs/server.md``):

===========================  ===========================  ==========================================
operator DIRs                client declares roots        effective roots
===========================  ===========================  ==========================================
given                        yes                          client roots ∩ DIRs (narrow, never widen)
given                        no                           DIRs
none                         yes                          client roots, but ``/`` is refused
none                         no                           none: tools answer ``-32021``
===========================  ===========================  ==========================================

A client that declares roots but lists none is read by :class:`EmptyRoots`: the DIRs until it has listed a root,
nothing once it has; always the DIRs over stateless 2026-07-28 HTTP (nothing there to remember), and always nothing
with ``--strict-empty-roots``.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError

from rootbound import __version__
from rootbound.confine.boundary import Boundary
from rootbound.confine.local_disks import keep_mountinfo_open
from rootbound.core.call_budget import checking
from rootbound.core.errors import INTERNAL_ERROR, INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY, RootsUnavailable
from rootbound.core.mrtr import era_of
from rootbound.core.roots import RootsChange, RootSet
from rootbound.mcp import RootsService
from rootbound.mcp._handshake_port import ANSWERED_WITH_ERROR
from rootbound.search.index.saved import SavedStore
from rootbound.search.rooted_fs import RootedFS
from rootbound.workspace.early_start import EarlyStart, IndexPlan, index_registry, spawn_scan_helper
from rootbound.workspace.effective_roots import (
    IGNORED_ROOTS_WHY,
    NO_CAPABILITY_HELP,
    NO_DIRS_FIX,
    ROOTS_LIST_FAILED,
    EmptyRoots,
    HeldBoundaries,
    SessionSnapshot,
    Situation,
)
from rootbound.workspace.limits.answer_budget import ANSWERS, too_big
from rootbound.workspace.limits.call_slots import CallSlots, client_of, run_to_end
from rootbound.workspace.limits.cpu_turns import CpuTurns, default_turns
from rootbound.workspace.limits.fairness import default_max_walks
from rootbound.workspace.limits.fd_budget import RootBudget
from rootbound.workspace.resources.contents import ANSWER_ENVELOPE
from rootbound.workspace.resources.handlers import ResourceHost, install_resources, narrow_subscriptions
from rootbound.workspace.resources.subscribing import still_served
from rootbound.workspace.tool_guard import ToolGuard
from rootbound.workspace.tools import Budget, Limits, ToolError, ToolOutput, tool_specs, unknown_tool
from rootbound.workspace.tools import call_tool as call_tool_in
from rootbound.workspace.tools.answer_fit import LARGE_ANSWERS, RESULT_SIZE_META
from rootbound.workspace.tools.arguments import without_nulls
from rootbound.workspace.tools.calls import SliceOver
from rootbound.workspace.tools.specs import ToolSpec

__all__ = ["WorkspaceConfig", "build_workspace_server"]

PROGRESS_INTERVAL = 0.25
DEADLINE_GRACE = 2.0
INLINE_SLICE = 0.002
INDEX_SAID_CLIENTS = 4096
"""Clients whose said index statuses are kept (:func:`_index_said`); past it they start afresh, all at once."""


def _index_said(said: dict[Hashable, set[str]], ctx: ServerRequestContext[Any, Any]) -> set[str]:
    """The kinds of index status this request's client has been told (each is said once, issue 50 item 6).

    Over stdio the process is the session; over HTTP a client is what fairness counts (``client_of``): its token's
    principal, else its handshake-era session, else (stateless 2026-07-28) its peer address."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    key = client_of(ctx) if isinstance(scope, dict) else "stdio"
    if key not in said and len(said) >= INDEX_SAID_CLIENTS:
        said.clear()
    return said.setdefault(key, set())


"""Seconds a quick call may run on the event loop before it starts again on a worker thread (stdio only): long
enough for a stat, a read or a listing of a few hundred entries, short enough not to hold up a ping."""
INLINE_MAX_READ = 4 * 1024 * 1024
"""Reads check no budget: with a ``--max-read`` above this (the media cap), they stay on worker threads."""
INSTRUCTIONS = (
    "File tools confined to your roots (intersected with the operator's directories). Paths may be absolute, "
    "file:// URIs, or relative to the first root. Start with list_roots or find_projects."
)


@dataclass(frozen=True)
class WorkspaceConfig:
    """What ``rootbound serve`` was started with."""

    dirs: tuple[Path, ...] = ()
    writable: bool = False
    limits: Limits = field(default_factory=Limits)
    state_keys: tuple[bytes, ...] = ()
    roots_timeout: float = 10.0
    sandbox: str = ""  # what the kernel sandbox enforces, for list_roots (workspace/sandbox.py)
    name: str = "rootbound-workspace"
    max_roots: int = 256
    """Roots one snapshot may hold (``--max-roots``); a larger one is refused whole."""
    dirs_confine_only: bool = False
    """The DIRs only confine client roots (no-DIR mode's implicit home directory): never a fallback."""
    max_walks: int = field(default_factory=default_max_walks)
    """Tree walks (grep, search, listings) that may run at once across all sessions (``--max-walks``)."""
    ignore_client_roots: bool = False
    """Serve the DIRs to every client and never ask for its roots (``--ignore-client-roots``): for a client whose
    ``roots/list`` fails; the DIRs are still the wall."""
    strict_empty_roots: bool = False
    """An empty roots list always means no access (``--strict-empty-roots``), even from a client that never
    listed a root; by default such a client is served the DIRs (:class:`EmptyRoots`)."""
    one_client: bool = False
    """The process serves one client (stdio): in 2026-07-28, where requests have no connection, the process
    remembers whether that client ever listed a root."""
    index: bool = False
    """grep and search_files go through the search index of each DIR (``--no-index`` turns it off), built at the
    first search (or at start with ``index_at_start``)."""
    index_at_start: bool = False
    index_status_always: bool = False
    """Every search answer ends with how it was answered (``[index]``, ``[scan: ...]``); by default each kind is
    said once a client (``--index-status always``: for an operator or a test that must see the index answer)."""
    index_cache: Path | None = None
    """This process's folder for the index's postings (``registry.own_folder``; ``None``: in memory)."""
    index_saved: SavedStore | None = None
    """The saved indexes' folder (issue 51): each DIR's index is taken up at start from there and saved back."""
    after_sandbox: list[Callable[[], None]] | None = None
    """Where what must wait for the kernel sandbox goes (its threads would escape it): the CLI's ``Sandbox.then``."""
    scan_helper: tuple[str, ...] | None = None
    """The scan helper's command (``workspace/scan_process.helper_command``): grep's scans use a second process
    (``search/scan_helper.py``), given the held DIRs' fds to wall itself to; ``None``: one process
    (``--no-scan-helper``, one CPU, or a library caller)."""
    early: EarlyStart | None = None
    """The DIRs held, the scan helper and the indexes, made by the CLI before it restricted itself and loaded the
    SDK (``workspace/early_start.py``); ``None``: made here (``scan_helper``, ``index_*`` and ``after_sandbox``)."""
    inline_quick_calls: bool = False
    """Try each quick read-only call (``ToolSpec.quick``) on the event loop for up to :data:`INLINE_SLICE`, when the
    roots are on local disks (``Boundary.on_local_disks``), and hand it to a worker thread only if it runs longer.
    The thread hop costs 0.1-0.3 ms, as much as a small read; but a call on the loop holds up every other request,
    so only for a server with one client (stdio), never for HTTP's many sessions."""


def _tool(spec: ToolSpec, max_answer_chars: int) -> types.Tool:
    """A tool as listed; one whose answers can be large declares how large, so a host keeps them whole
    (:mod:`rootbound.workspace.tools.answer_fit`)."""
    large = spec.name in LARGE_ANSWERS
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=not spec.writes,
            destructive_hint=spec.annotations["destructiveHint"],
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
        _meta={RESULT_SIZE_META: max_answer_chars} if large else None,
    )


def _progress_token(ctx: ServerRequestContext[Any, Any]) -> object:
    meta = ctx.meta
    if not meta:
        return None
    return meta.get("progress_token", meta.get("progressToken"))


async def _report_progress(ctx: ServerRequestContext[Any, Any], budget: Budget) -> None:
    """While a call runs: ``notifications/progress`` with the entries walked so far, when they change."""
    last = 0
    while True:
        await anyio.sleep(PROGRESS_INTERVAL)
        steps = budget.steps
        if steps != last:
            last = steps
            await ctx.session.report_progress(steps, None, f"{steps} entries examined")


def _result(output: ToolOutput, *, modern: bool) -> dict[str, Any]:
    """A ``CallToolResult`` in its wire form: the SDK validates and shapes results for the wire either way, so
    building the model first only to dump it again is a redundant round trip on every call."""
    content: list[dict[str, Any]] = [{"type": "text", "text": output.text}]
    for media in output.media:
        content.append({"type": media.kind, "data": media.data, "mimeType": media.mime})
    result: dict[str, Any] = {"content": content, "isError": False}
    if output.structured is not None:
        result["structuredContent"] = output.structured
    if modern:
        result["resultType"] = "complete"  # every 2026-07-28 result carries one
    return result


def _index_plan(config: WorkspaceConfig) -> IndexPlan:
    dirs, confine_only = config.dirs, config.dirs_confine_only
    return IndexPlan(dirs, config.index, confine_only, config.index_at_start, config.index_cache, config.index_saved)


def _freeze_start_up(config: WorkspaceConfig) -> None:
    """The objects the start-up's imports made are kept for good: moved out of the collector's reach, so a full
    collection during the first search (which makes tens of thousands of objects: a saved index's records, the
    walk) does not go over all of them (issue 51: 0.12-0.19 s of a new server's first grep). With an early start
    the CLI does it once the server is built."""
    if config.early is not None:
        return
    if config.after_sandbox is None:
        gc.freeze()
    else:
        config.after_sandbox.append(gc.freeze)


def build_workspace_server(config: WorkspaceConfig) -> tuple[Server[Any], RootsService]:
    """The lowlevel server with the workspace tools and a :class:`RootsService` installed."""
    allow = list(config.dirs) if config.dirs and not config.dirs_confine_only else None
    if config.inline_quick_calls:
        keep_mountinfo_open()  # before the CLI applies its sandbox, which refuses the open (Boundary.on_local_disks)
    early = config.early
    if early is None:
        allowlist = Boundary(config.dirs) if config.dirs else None
        indexes = index_registry(_index_plan(config), config.after_sandbox)
        helper = spawn_scan_helper(config.scan_helper, allowlist)
    else:
        allowlist, indexes, helper = early.allowlist, early.indexes, early.helper
    _freeze_start_up(config)
    held = HeldBoundaries(config.dirs, RootBudget(max_roots=config.max_roots), allowlist=allowlist)
    service = RootsService(
        fallback=allow,
        warm=not config.ignore_client_roots,  # issue 33 #5: "listed" from the first answer, cached for first calls
        timeout=config.roots_timeout,
        state_security=RequestStateSecurity(keys=list(config.state_keys)) if config.state_keys else None,
    )
    empty_roots = EmptyRoots(
        service.fallback, strict=config.strict_empty_roots, one_client=config.one_client, service=service
    )
    specs = tool_specs(config.writable)
    tools = [_tool(spec, config.limits.max_output) for spec in specs]
    names = {tool.name for tool in tools}
    index_said: dict[Hashable, set[str]] = {}
    walking = {spec.name for spec in specs if spec.walks}
    quick = {spec.name for spec in specs if spec.quick and not spec.writes}
    inline = config.inline_quick_calls and config.limits.max_read <= INLINE_MAX_READ
    writing = {spec.name for spec in specs if spec.writes}
    slots = CallSlots(config.max_walks)  # the waits count against the call's deadline
    turns = CpuTurns(default_turns())  # and turns at the interpreter, handed on at budget checks

    async def situation_of(ctx: ServerRequestContext[Any, Any], tool: str, modern: bool) -> Situation | str:
        """The roots this call is served with, or a tool error's text saying how to get some (issue 35)."""
        if config.ignore_client_roots and service.fallback is not None:
            return Situation(service.fallback, "operator directories", IGNORED_ROOTS_WHY)
        try:
            roots = await service.roots(ctx)
        except MCPError as error:
            if error.code != MISSING_REQUIRED_CLIENT_CAPABILITY or service.fallback is not None:
                raise
            if tool == "list_roots":  # the first call a user tries answers, with the fix
                why = "the client declares no roots and the server was started without directories"
                return Situation(RootSet.of([]), "none", why, NO_DIRS_FIX)
            raise MCPError(error.code, f"{error.message}. {NO_CAPABILITY_HELP}", error.data) from None
        except RootsUnavailable as error:
            if error.reason != ANSWERED_WITH_ERROR:
                raise
            return ROOTS_LIST_FAILED
        return empty_roots.settle(ctx, roots, modern=modern)

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> dict[str, Any]:
        modern = era_of(ctx.protocol_version) == "2026-07-28"
        if params.name not in names:  # the spec's error for an unknown tool, in both eras (issue 35 #5)
            raise MCPError(INVALID_PARAMS, unknown_tool(params.name))
        situation = await situation_of(ctx, params.name, modern)
        if isinstance(situation, str):
            return _error(situation, modern=modern)
        roots = situation.roots
        if not modern and roots is not service.fallback:
            SessionSnapshot.serve(ctx, held, roots)  # released when the session ends, not when collected
        arguments = without_nulls(params.arguments or {})  # null means absent (the schemas: anyOf [T, null])
        budget = Budget(config.limits.deadline)
        said = None if config.index_status_always else _index_said(index_said, ctx)
        answers = ANSWERS.ledger()  # issue 24 #4: room for a large answer, reserved by the tool, given back below

        def work_in(boundary: Boundary) -> ToolOutput | ToolError:
            fs = RootedFS(boundary, read_only=not config.writable, max_read=config.limits.max_read)
            try:
                context = {
                    "source": situation.source,
                    "why": situation.why,
                    "fix": situation.fix,
                    "budget": budget,
                    "sandbox": config.sandbox,
                    "answers": answers,
                    "index": indexes,
                    "scan_helper": helper,
                    "index_said": said,
                }
                return call_tool_in(params.name, fs, arguments, config.limits, context)
            except ToolError as error:
                return error  # returned, not raised: it would reach the task group as an exception group

        flow = client_of(ctx)

        def work() -> ToolOutput | ToolError:
            with turns.turn(flow) as turn, held.for_roots(roots, recurring=modern) as boundary:
                budget.on_check = turn.offer  # the interpreter shared fairly between clients, too (issue 48)
                try:
                    return work_in(boundary)
                finally:
                    budget.on_check = None

        async def run() -> ToolOutput | ToolError:
            if inline and params.name in quick:
                with held.held_for(roots, recurring=modern) as boundary:
                    if boundary is not None and boundary.on_local_disks:
                        budget.slice(INLINE_SLICE)
                        try:
                            return work_in(boundary)
                        except SliceOver:
                            budget.unslice()  # it kept nothing: start again on a thread, with the whole deadline
            # Issue 48: fair per client, held until the work has ended (cancelled: told to stop, then awaited).
            async with slots.hold(flow, walks=params.name in walking, writes=params.name in writing):
                return await run_to_end(work, budget.cancel, slots.threads)

        try:
            with anyio.move_on_after(config.limits.deadline + DEADLINE_GRACE) as scope:
                if _progress_token(ctx) is None:
                    output = await run()  # no task group: entering and cancelling one costs ~0.1 ms a call
                else:
                    async with anyio.create_task_group() as tasks:
                        tasks.start_soon(_report_progress, ctx, budget)
                        try:
                            output = await run()
                        finally:
                            tasks.cancel_scope.cancel()
                    # The last word before the result: how much was done (also when it took one tick).
                    await ctx.session.report_progress(budget.steps, budget.steps, "done")
        except BaseException:
            budget.cancel()
            raise
        finally:
            answers.release()  # handed to the SDK: from here on the HTTP app counts it while it is sent
        if scope.cancelled_caught:
            budget.cancel()
            return _error(
                f"stopped after {config.limits.deadline:g} s (the per-call deadline); narrow the request", modern=modern
            )
        if isinstance(output, ToolError):
            return _error(str(output), modern=modern)
        over = too_big(output, config.limits.max_answer) if config.limits.max_answer else None
        if over is not None:
            return _error(over, modern=modern)  # issue 24 #4: the client could not receive it
        return _result(output, modern=modern)

    server: Server[Any] = Server(
        config.name,
        version=__version__,
        instructions=INSTRUCTIONS,
        get_tool_input_schema=lambda name: next((t.input_schema for t in tools if t.name == name), None),
    )
    server.add_request_handler("tools/list", types.PaginatedRequestParams, list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)  # typed to take wire dicts
    service.install(server)

    async def in_roots(ctx: ServerRequestContext[Any, Any], work: Callable[[RootedFS], Any], quick: bool) -> Any:
        """``work`` on this request's roots, held as a tool call holds them (workspace/resources, issue 49); a
        ``quick`` one tried on the event loop first where a quick tool would be."""
        modern = era_of(ctx.protocol_version) == "2026-07-28"
        situation = await situation_of(ctx, "resources", modern)
        if isinstance(situation, str):
            return None
        roots = situation.roots
        if not modern and roots is not service.fallback:
            SessionSnapshot.serve(ctx, held, roots)

        budget = Budget(config.limits.deadline)

        def job() -> Any:
            try:
                with held.for_roots(roots, recurring=modern) as boundary, checking(budget.check):
                    return work(RootedFS(boundary, read_only=True, max_read=config.limits.max_read))
            except ToolError as error:  # the deadline (the budget's check) or busy (the answers' budget)
                return MCPError(INTERNAL_ERROR, str(error))
            except MCPError as error:
                return error  # returned, not raised: it would reach run_to_end's task group as an exception group

        if inline and quick:
            with held.held_for(roots, recurring=modern) as boundary:
                if boundary is not None and boundary.on_local_disks:
                    budget.slice(INLINE_SLICE)
                    try:
                        with checking(budget.check):
                            return work(RootedFS(boundary, read_only=True, max_read=config.limits.max_read))
                    except SliceOver:
                        budget.unslice()  # it kept nothing: start again on a thread, with the whole deadline
                    except ToolError as error:
                        raise MCPError(INTERNAL_ERROR, str(error)) from None

        # Issue 48's accounting, as for a tool call: the client's fair share of the workers, held until the work has
        # ended (cancelled or past the deadline: told to stop, then awaited), never abandoned on a thread.
        with anyio.move_on_after(config.limits.deadline + DEADLINE_GRACE):
            async with slots.hold(client_of(ctx), walks=False, writes=False):
                outcome = await run_to_end(job, budget.cancel, slots.threads)
            if isinstance(outcome, MCPError):
                raise outcome
            return outcome
        budget.cancel()
        raise MCPError(INTERNAL_ERROR, f"stopped after {config.limits.deadline:g} s (the per-call deadline); ask less")

    answer = config.limits.max_answer  # over HTTP one answer must fit in one message the SDK's client accepts
    text_cap = config.limits.max_read if answer is None else min(config.limits.max_read, answer - ANSWER_ENVELOPE)
    host = ResourceHost(in_roots, text_cap, config.limits.max_media, max_answer=answer)
    install_resources(server, host)

    @service.on_change
    async def roots_changed(change: RootsChange) -> None:
        """Roots narrowing applies to subscriptions at once: those the new roots do not serve end (issue 49)."""

        def kept(uris: list[str]) -> set[str]:
            if not change.new or config.ignore_client_roots:
                return set(uris) if config.ignore_client_roots else set()  # none left: nothing is served
            with held.for_roots(change.new) as boundary:
                fs = RootedFS(boundary, read_only=True, max_read=config.limits.max_read)
                return {uri for uri in uris if still_served(fs, uri)}

        await narrow_subscriptions(host, change.connection, kept)

    schemas = {tool.name: tool.input_schema for tool in tools}
    server.middleware.append(ToolGuard(schemas, server_info=lambda: server.server_info_stamp))  # issue 16: #3, #9
    return server, service


def _error(text: str, *, modern: bool) -> dict[str, Any]:
    """A tool error (``isError``) with one text block, in its wire form."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
    if modern:
        result["resultType"] = "complete"
    return result
