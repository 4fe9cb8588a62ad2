"""2026-07-28 input rounds on the SDK: what one request knows about its inputs, and the result that asks for more.

No request of rootbound's own in this era: a missing roots answer becomes an ``InputRequiredResult`` with the
core's roots input request under a stable key, next to any other input requests of the same round; the retry's
raw ``inputResponses`` are read by :mod:`rootbound.core.mrtr`; roots obtained in one round ride the (SDK-sealed)
``requestState`` into later rounds of the same call (:mod:`rootbound.core.request_state`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

import mcp_types as types
from mcp.server.context import ServerRequestContext

from rootbound.core.errors import InvalidRootsAnswer
from rootbound.core.mrtr import (
    MISSING,
    Missing,
    client_supports_roots,
    era_of,
    missing_capability,
    read_roots_response,
    request_capabilities,
    roots_answer_over_limit,
    roots_input_request,
)
from rootbound.core.request_state import decode_request_state, encode_request_state
from rootbound.core.roots import Era, RootLimits, RootSet
from rootbound.mcp._bridges import InputRequired, mcp_error, wire_result

__all__ = [
    "SCOPE",
    "CallScope",
    "InputRequest",
    "ask",
    "carry",
    "input_required",
    "known_roots",
    "open_round",
    "require",
    "round_roots",
    "scope_for",
]

InputRequest = types.ListRootsRequest | types.ElicitRequest | types.CreateMessageRequest

KIND_CAPABILITY: Final = {
    "roots/list": "roots",
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
}


@dataclass
class CallScope:
    """What one request knows about its inputs: set by the middleware, read by ``RootsService``."""

    ctx: ServerRequestContext[Any, Any]
    era: Era
    carried: RootSet | None = None
    app_state: str | None = None
    roots: RootSet | None = None
    pending: dict[str, InputRequest] = field(default_factory=dict)
    missing: dict[str, dict[str, Any]] = field(default_factory=dict)
    signalled: bool = False

    def end(self) -> None:
        """The request is answered: let go of its roots and inputs. An asyncio timer the SDK cancelled during the
        request stays scheduled until its own deadline, holding the request's context and so this scope: an
        emptied scope keeps no roots snapshot (and no held boundary) alive meanwhile (issue 33 #2)."""
        self.carried = self.roots = None
        self.pending.clear()
        self.missing.clear()


SCOPE: contextvars.ContextVar[CallScope | None] = contextvars.ContextVar("rootbound_call_scope", default=None)


def scope_for(rctx: ServerRequestContext[Any, Any]) -> CallScope:
    """A scope for a request the middleware did not see (e.g. called from outside a tool)."""
    return CallScope(rctx, era_of(rctx.protocol_version))


def open_round(ctx: ServerRequestContext[Any, Any], key: str, limits: RootLimits) -> CallScope:
    """The scope of a 2026-07-28 request that may carry input responses and our ``requestState``.

    Refuses an over-count roots answer before the SDK's schema check walks it. Our state is taken out of the
    params the handler sees; the application's own state is put back in its place.
    """
    params = ctx.params or {}
    if roots_answer_over_limit(params.get("inputResponses"), key, limits=limits):
        raise mcp_error(InvalidRootsAnswer("too many roots"))
    try:
        state = decode_request_state(params.get("requestState"), limits=limits)
    except InvalidRootsAnswer as error:
        raise mcp_error(error) from None
    if state.ours:
        stripped = {k: v for k, v in params.items() if k != "requestState"}
        if state.app is not None:
            stripped["requestState"] = state.app
        ctx = replace(ctx, params=stripped)
    return CallScope(ctx, "2026-07-28", carried=state.roots, app_state=state.app)


def round_roots(
    scope: CallScope, key: str, limits: RootLimits, fallback: RootSet | None, negotiated: Callable[[], None]
) -> RootSet | Literal[Missing.MISSING]:
    """This round's roots: already read, answered in ``inputResponses``, carried from an earlier round, or
    ``MISSING`` (and the roots input request is recorded). ``-32021`` when ``roots`` was not declared."""
    if scope.roots is not None:
        return scope.roots
    params = scope.ctx.params
    if not client_supports_roots(request_capabilities(params)):
        if fallback is not None:
            return fallback
        scope.missing["roots"] = {}
        raise mcp_error(missing_capability(scope.missing))
    negotiated()
    try:
        answer = read_roots_response((params or {}).get("inputResponses"), key, limits=limits)
    except InvalidRootsAnswer as error:
        raise mcp_error(error) from None
    if isinstance(answer, Missing):
        if scope.carried is None:
            scope.pending[key] = types.ListRootsRequest.model_validate(roots_input_request())
            return MISSING
        answer = scope.carried
    scope.roots = answer
    return answer


def known_roots(scope: CallScope, key: str, limits: RootLimits) -> RootSet | None:
    """The roots this request was already given (answered in this round or carried), read without asking."""
    if scope.roots is not None:
        return scope.roots
    params = scope.ctx.params
    if client_supports_roots(request_capabilities(params)):
        try:
            answer = read_roots_response((params or {}).get("inputResponses"), key, limits=limits)
        except InvalidRootsAnswer as error:
            raise mcp_error(error) from None
        if not isinstance(answer, Missing):
            scope.roots = answer
            return answer
    return scope.carried


def ask(scope: CallScope, key: str, request: InputRequest) -> Any:
    """The raw answer under ``key`` in this round's ``inputResponses``, or ``MISSING`` (request recorded)."""
    params = scope.ctx.params or {}
    responses = params.get("inputResponses")
    if isinstance(responses, Mapping) and key in responses:
        return responses[key]
    capability = KIND_CAPABILITY[request.method]
    declared = request_capabilities(params)
    if not isinstance(declared, Mapping) or not isinstance(declared.get(capability), Mapping):
        scope.missing[capability] = {}
    scope.pending[key] = request
    return MISSING


def require(scope: CallScope) -> None:
    """Raise if the round still lacks inputs: ``-32021`` (merged) for undeclared kinds, else ``InputRequired``."""
    if scope.missing:
        raise mcp_error(missing_capability(scope.missing))
    if scope.pending:
        scope.signalled = True
        raise InputRequired()


def input_required(scope: CallScope, server_info: Any) -> dict[str, Any]:
    """The ``InputRequiredResult`` asking for every recorded request, carrying the roots obtained so far."""
    result = types.InputRequiredResult(
        input_requests=dict(scope.pending),
        request_state=encode_request_state(scope.roots or scope.carried, scope.app_state),
    )
    return wire_result(result, scope.ctx.protocol_version, server_info)


def carry(scope: CallScope, result: Any) -> dict[str, Any] | types.InputRequiredResult:
    """The application returned its own ``InputRequiredResult``: keep our roots in its state."""
    roots = scope.roots or scope.carried
    if isinstance(result, Mapping):
        app = result.get("requestState")
        return {**result, "requestState": encode_request_state(roots, app if isinstance(app, str) else None)}
    assert isinstance(result, types.InputRequiredResult)
    return result.model_copy(update={"request_state": encode_request_state(roots, result.request_state)})
