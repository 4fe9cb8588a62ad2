"""What every ``tools/call`` passes before a tool sees it, and what no tool's failure may show.

A server middleware (``Server.middleware``, innermost), so it holds for every tool and both eras:

* the arguments are checked against the tool's declared input schema (:mod:`._arguments`): a violation is a
  tool error with a fixed message, before any argument is used;
* each session runs at most a few calls at once (:mod:`._fairness`): one session's backlog of slow calls cannot
  take every worker thread;
* a tool error answered here is in the wire form of the request's era, as the SDK shapes a handler's result
  (which this short-circuit bypasses): ``resultType`` and the ``serverInfo`` stamp in 2026-07-28, neither in the
  handshake era (issue 35 #5);
* an unexpected exception from a tool becomes a fixed message (``internal error``), logged once by type (the
  log is rate-limited), never its text or traceback on the wire. Protocol errors (:class:`MCPError`, e.g. the
  missing roots capability), rootbound's own errors (e.g. "roots unavailable": ``RootsService``'s middleware turns
  them into tool errors with their fixed text) and malformed params (the SDK's own ``-32602``) pass through.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from rootbound.core.errors import RootsError
from rootbound.mcp._bridges import wire_result
from rootbound.workspace.limits.fairness import SessionSlots
from rootbound.workspace.limits.fd_budget import RootsRefused
from rootbound.workspace.tools.arguments import InvalidArguments, checker, lenient

__all__ = ["INTERNAL_ERROR_TEXT", "ToolGuard"]

logger = logging.getLogger("rootbound.serve.tools")

INTERNAL_ERROR_TEXT: Final = "internal error: the tool failed unexpectedly (the server log has the details)"


def _tool_error(text: str, ctx: ServerRequestContext[Any, Any], server_info: Any) -> dict[str, Any]:
    """A tool error in the wire form of the request's era."""
    result = types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
    return wire_result(result, ctx.protocol_version, server_info)


class ToolGuard:
    def __init__(
        self,
        schemas: Mapping[str, Mapping[str, Any]],
        *,
        per_session: int = 4,
        server_info: Callable[[], Any] = lambda: None,
    ) -> None:
        self._checks: dict[str, tuple[Callable[[Mapping[str, Any]], None], Callable[..., Mapping[str, Any]]]] = {
            name: (checker(schema), lenient(schema)) for name, schema in schemas.items()
        }
        self._slots = SessionSlots(per_session)
        self._server_info = server_info  # the 2026-07-28 ``serverInfo`` stamp (the server's own)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call" or not isinstance(ctx.params, Mapping):
            return await call_next(ctx)
        name = ctx.params.get("name")
        arguments = ctx.params.get("arguments")
        found = self._checks.get(name) if isinstance(name, str) else None
        if found is not None:
            check, read = found
            given = {} if arguments is None else arguments
            taken = read(given) if isinstance(given, Mapping) else given  # not an object: the check refuses it
            try:
                check(taken)
            except InvalidArguments as error:
                return _tool_error(str(error), ctx, self._server_info())
            if taken is not given:  # "2" read as 2: the tool gets what the check passed
                ctx = replace(ctx, params={**ctx.params, "arguments": dict(taken)})
        async with self._slots.slot(ctx.session):
            try:
                return await call_next(ctx)
            except (MCPError, ValidationError, RootsError):
                raise  # RootsError: RootsService's middleware answers it with its fixed text (roots unavailable, ...)
            except Exception as error:
                refused = _refusal(error)
                if refused is not None:
                    return _tool_error(str(refused), ctx, self._server_info())
                logger.error("tool %s failed: %s", name if found is not None else "?", type(error).__name__)
                return _tool_error(INTERNAL_ERROR_TEXT, ctx, self._server_info())


def _refusal(error: BaseException) -> RootsRefused | None:
    """The :class:`RootsRefused` behind ``error``, also from inside an exception group (the tool's worker thread
    runs in a task group, which wraps what it raises)."""
    if isinstance(error, RootsRefused):
        return error
    for inner in getattr(error, "exceptions", ()):
        found = _refusal(inner)
        if found is not None:
            return found
    return None
