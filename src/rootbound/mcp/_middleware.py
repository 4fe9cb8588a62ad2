"""The server middleware ``RootsService.install`` adds: one wiring for the lowlevel ``Server``, ``MCPServer`` and
FastMCP 4, so ``service.roots()`` needs no framework-specific context.

Per message it does three things: invalidates the handshake cache on ``list_changed`` *before any await*, gives
each request its :class:`~rootbound.mcp._rounds.CallScope`, and turns what the tool raised or returned into the
right wire answer (an ``InputRequiredResult``, a tool error with a fixed text, or a JSON-RPC error).
"""

from __future__ import annotations

import logging
from typing import Any, Final, Protocol

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp_types.methods import is_input_required

from rootbound.core.errors import RootsError
from rootbound.core.mrtr import INPUT_ROUND_METHODS, LIST_CHANGED, era_of
from rootbound.core.roots import RootLimits
from rootbound.mcp import _rounds
from rootbound.mcp._bridges import (
    REFUSAL,
    InputRequired,
    Refusal,
    is_error_result,
    mcp_error,
    shows_refusal,
    tool_failure,
)
from rootbound.mcp._handshake import HandshakeRoots
from rootbound.mcp._sdk_server import Link2

__all__ = ["RootsMiddleware", "ServiceParts", "quiet_input_rounds"]

FRAMEWORK_TOOL_LOGGERS: Final = ("fastmcp.server.server",)
"""Loggers of frameworks that log every exception a tool raises, traceback included, before masking it into an
``isError`` result (FastMCP 4's ``call_tool``). Our :class:`InputRequired` passes through them on every first
2026-07-28 round: the way a tool asks for roots, not a failure."""


class _InputRoundsAreNotErrors(logging.Filter):
    """Turns a framework's error record for :class:`InputRequired` into one debug line (dropped unless the
    logger is at DEBUG); every other record passes untouched."""

    def filter(self, record: logging.LogRecord) -> bool:
        raised = record.exc_info[1] if record.exc_info else None
        if not isinstance(raised, InputRequired):
            return True
        if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            return False
        record.msg, record.args = "%s: input required (an InputRequiredResult goes back)", (record.getMessage(),)
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        record.exc_info, record.exc_text = None, None
        return True


_QUIET: Final = _InputRoundsAreNotErrors()


def quiet_input_rounds() -> None:
    """Install the filter on the frameworks' tool loggers (idempotent; harmless where no framework is loaded)."""
    for name in FRAMEWORK_TOOL_LOGGERS:
        logger = logging.getLogger(name)
        if _QUIET not in logger.filters:
            logger.addFilter(_QUIET)


class ServiceParts(Protocol):
    """What the middleware reads of the ``RootsService`` it serves, named here so the two modules do not import
    each other (the service imports this module to install the middleware)."""

    _handshake: HandshakeRoots

    @property
    def key(self) -> str: ...

    @property
    def limits(self) -> RootLimits: ...

    def _server_info(self) -> Any: ...


class RootsMiddleware:
    """Server middleware: synchronous invalidation, the per-request scope, and the input-round plumbing."""

    def __init__(self, service: ServiceParts) -> None:
        self.service = service
        quiet_input_rounds()  # FastMCP logs our InputRequired as a failed tool (issue 26 #6)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        service = self.service
        era = era_of(ctx.protocol_version)
        if ctx.request_id is None:
            if ctx.method == LIST_CHANGED and era == "handshake":
                service._handshake.invalidate(Link2(ctx))  # first statement, before any await
            return await call_next(ctx)
        if era == "2026-07-28" and ctx.method in INPUT_ROUND_METHODS and ctx.params is not None:
            scope = _rounds.open_round(ctx, service.key, service.limits)
            ctx = scope.ctx
        else:
            scope = _rounds.CallScope(ctx, era)
        try:
            return await self._within(scope, ctx, call_next, era)
        finally:
            scope.end()  # timers the SDK cancelled keep this request's context (and so the scope) for a while

    async def _within(
        self, scope: _rounds.CallScope, ctx: ServerRequestContext[Any, Any], call_next: CallNext, era: str
    ) -> HandlerResult:
        service = self.service
        token = _rounds.SCOPE.set(scope)
        refusal = Refusal()
        noted = REFUSAL.set(refusal)
        try:
            result = await call_next(ctx)
        except InputRequired:
            return _rounds.input_required(scope, service._server_info())
        except RootsError as error:
            if ctx.method != "tools/call":
                raise mcp_error(error) from None
            return tool_failure(error, ctx.protocol_version, service._server_info())
        finally:
            REFUSAL.reset(noted)
            _rounds.SCOPE.reset(token)
        if scope.signalled and is_error_result(result):
            # A framework turned our InputRequired into an isError result (FastMCP masks tool exceptions).
            return _rounds.input_required(scope, service._server_info())
        denied = refusal.error
        if isinstance(denied, RootsError) and ctx.method == "tools/call" and shows_refusal(result, str(denied)):
            # MCPServer's "Error executing tool NAME: " + the denial (tool_errors): the fixed text alone, as on 1.x.
            return tool_failure(denied, ctx.protocol_version, service._server_info())
        if era == "2026-07-28" and is_input_required(result) and (scope.roots is not None or scope.carried is not None):
            return _rounds.carry(scope, result)
        return result
