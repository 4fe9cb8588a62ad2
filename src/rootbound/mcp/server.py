"""``RootsService``: the server side of MCP roots on the official SDK, in both eras, behind one call.

Tool authors write ``roots = await service.roots(ctx)``. Underneath:

* **Handshake era** (≤ 2025-11-25): the client's ``roots`` capability is checked (``-32021`` otherwise), then
  ``roots/list`` goes out on the tool call's own stream with a timeout. Answers are cached per connection with a
  single flight. ``notifications/roots/list_changed`` invalidates *synchronously, on receipt* (a generation
  counter), so no call that starts after the notification can see the old set; a trailing debounced refresh
  re-fetches once per burst, and a failed refresh leaves the cache empty (fail closed). The entry dies with the
  connection (``Connection.exit_stack``).
* **Modern era** (2026-07-28): no request of its own. A missing answer becomes an ``InputRequiredResult`` with
  ``{"method": "roots/list"}`` under a stable key, next to any other input requests of the same round; the retry's
  raw ``inputResponses`` are validated by :mod:`rootbound.mrtr`; roots obtained in one round ride the
  (SDK-sealed) ``requestState`` into later rounds of the same call.

Everything is wired by one server middleware (:meth:`RootsService.install`) so it works the same on the lowlevel
``Server``, on ``MCPServer`` and on FastMCP 4, and so ``service.roots()`` needs no framework-specific context.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any, Final, Literal, TypeVar

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.methods import is_input_required
from pydantic import BaseModel, ConfigDict, ValidationError

from ..boundary import Boundary
from ..errors import InvalidRootsAnswer, MissingCapability, RootsError, RootsUnavailable
from ..fs import RootedFS
from ..mrtr import MISSING, ROOTS_KEY, Missing, client_supports_roots, era_of, missing_capability, read_roots_response
from ..roots import DEFAULT_LIMITS, Root, RootLimits, RootSet
from ._sdk_server import connection_of, lowlevel_server_of, request_context_of

__all__ = ["InputRequired", "RootsService", "mcp_error", "tool_errors"]

logger = logging.getLogger("rootbound.server")

LIST_CHANGED: Final = "notifications/roots/list_changed"
MRTR_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
CAPABILITIES_META: Final = "io.modelcontextprotocol/clientCapabilities"
_STATE_PREFIX: Final = "rootbound/1:"
_MAX_ATTEMPTS: Final = 4
SILENCE_ENV: Final = "ROOTBOUND_SILENCE_SEP2577"

_KIND_CAPABILITY: Final = {
    "roots/list": "roots",
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
}

InputRequest = types.ListRootsRequest | types.ElicitRequest | types.CreateMessageRequest


def mcp_error(error: RootsError) -> MCPError:
    """The SDK exception for a rootbound error: same code, same fixed message, same data."""
    return MCPError(code=error.code, message=error.message, data=error.data)


@contextlib.contextmanager
def tool_errors() -> Iterator[None]:
    """Inside an ``MCPServer`` tool: let a rootbound denial reach the model with its fixed, safe message.

    ``MCPServer`` shows only ``ToolError`` text and masks every other exception as "Error executing tool"; a
    denial is deliberate, so it should say why (its message never contains the caller's input).
    """
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        yield
    except RootsError as error:
        raise ToolError(str(error)) from None


class InputRequired(MCPError):
    """Raised by :meth:`RootsService.roots` (modern era) when the client must supply input first.

    It is an ``MCPError`` so that frameworks which turn tool exceptions into ``isError`` results (``MCPServer``,
    FastMCP) let it through to the rootbound middleware, which turns it into an ``InputRequiredResult``. Without
    the middleware it reaches the client as a plain ``-32603``, never as a silent success.
    """

    _ERROR: Final = types.ErrorData(
        code=-32603, message="Input required, but the rootbound middleware is not installed"
    )

    def __init__(self) -> None:
        # Raised on every first round: reuse one ErrorData instead of building a pydantic model each time.
        Exception.__init__(self, self._ERROR.code, self._ERROR.message, None)
        self.error = self._ERROR


class _RawResult(BaseModel):
    """Keeps the client's roots answer exactly as sent: the SDK's ``FileUrl`` would normalise it first."""

    model_config = ConfigDict(extra="allow")


@dataclass
class _Flight:
    """One in-progress ``roots/list``; followers wait on it instead of sending their own."""

    done: anyio.Event = field(default_factory=anyio.Event)
    result: RootSet | None = None
    error: RootsError | None = None
    abandoned: bool = False


class _ConnectionRoots:
    """Per-connection cache entry: the last answer, the generation it belongs to, the flight in progress."""

    __slots__ = ("cached", "cached_generation", "closed", "flights", "generation")

    def __init__(self) -> None:
        self.generation = 0
        self.cached: RootSet | None = None
        self.cached_generation = -1
        self.flights: dict[int, _Flight] = {}
        self.closed = False

    def invalidate(self) -> None:
        """Synchronous on receipt of ``list_changed``: from here on nothing older may be served."""
        self.generation += 1
        self.cached = None

    def fresh(self) -> RootSet | None:
        return self.cached if self.cached_generation == self.generation else None

    def store(self, roots: RootSet, generation: int) -> bool:
        if generation != self.generation or self.closed:
            return False
        self.cached, self.cached_generation = roots, generation
        return True


@dataclass
class _CallScope:
    """What one request knows about its inputs: set by the middleware, read by ``service.roots()``."""

    ctx: ServerRequestContext[Any, Any]
    modern: bool
    carried: RootSet | None = None
    app_state: str | None = None
    roots: RootSet | None = None
    pending: dict[str, InputRequest] = field(default_factory=dict)
    missing: dict[str, dict[str, Any]] = field(default_factory=dict)
    signalled: bool = False


_ServerT = TypeVar("_ServerT")
_SCOPE: contextvars.ContextVar[_CallScope | None] = contextvars.ContextVar("rootbound_call_scope", default=None)
_warned = False


def _warn_deprecated() -> None:
    global _warned
    if _warned or os.environ.get(SILENCE_ENV):
        _warned = True
        return
    _warned = True
    warnings.warn(
        "MCP roots are deprecated as of 2026-07-28 (SEP-2577). rootbound keeps them working; consider passing "
        f"directories as tool parameters or server configuration. Silence with {SILENCE_ENV}=1 or "
        "RootsService(warn_deprecated=False).",
        MCPDeprecationWarning,
        stacklevel=3,
    )


def _raw_capabilities(ctx: ServerRequestContext[Any, Any]) -> Any:
    """This request's declared client capabilities as sent (modern), before any model normalises them."""
    meta = (ctx.params or {}).get("_meta")
    return meta.get(CAPABILITIES_META) if isinstance(meta, Mapping) else None


class RootsService:
    """Roots for tool authors, correct in every protocol revision.

    ``fallback``: roots to use when the client declares none (or cannot be asked, e.g. stateless HTTP in the
    handshake era) — typically the operator's allowlist. Without it such a call gets ``-32021``.
    ``timeout``: seconds to wait for a handshake-era ``roots/list`` answer. ``debounce``: trailing window of the
    background refresh after ``list_changed``. ``key``: the ``inputRequests`` key (stable, leaks no code).
    ``state_security``: the SDK's ``RequestStateSecurity`` (or a list of keys, newest first, for rotation and for
    several instances serving rounds of one call); only used if the server has no ``RequestStateBoundary`` yet.
    """

    def __init__(
        self,
        *,
        fallback: Iterable[Root | PurePath | str] | RootSet | None = None,
        timeout: float = 10.0,
        debounce: float = 0.25,
        key: str = ROOTS_KEY,
        limits: RootLimits = DEFAULT_LIMITS,
        state_security: RequestStateSecurity | Sequence[bytes | str] | None = None,
        warn_deprecated: bool = True,
    ) -> None:
        if timeout <= 0 or debounce < 0:
            raise ValueError("timeout must be positive and debounce non-negative")
        self.fallback: RootSet | None = (
            None if fallback is None else fallback if isinstance(fallback, RootSet) else RootSet.of(fallback)
        )
        self.timeout = timeout
        self.debounce = debounce
        self.key = key
        self.limits = limits
        self.warn_deprecated = warn_deprecated
        if state_security is None or isinstance(state_security, RequestStateSecurity):
            self._state_security = state_security
        else:
            self._state_security = RequestStateSecurity(keys=list(state_security))
        self._state_key = f"rootbound.roots.{id(self):x}"
        self._entries: set[_ConnectionRoots] = set()
        self._server: Server[Any] | None = None
        self.fetches = 0
        """How many ``roots/list`` requests this service sent (tool-path and refresh)."""
        self.refreshes = 0
        """How many of those were debounced background refreshes."""

    # ---------------------------------------------------------------------------------------------- install

    def install(self, server: _ServerT) -> _ServerT:
        """Wire the service into a lowlevel ``Server``, an ``MCPServer`` or a FastMCP 4 app; returns ``server``.

        Appends the rootbound middleware (after a ``RequestStateBoundary``, adding one if the server has none, so
        carried roots are always sealed) and registers the ``list_changed`` handler (chaining any existing one).
        """
        lowlevel = lowlevel_server_of(server)
        if any(isinstance(m, _RootsMiddleware) and m.service is self for m in lowlevel.middleware):
            return server
        if not any(isinstance(m, RequestStateBoundary) for m in lowlevel.middleware):
            security = self._state_security or RequestStateSecurity.ephemeral()
            lowlevel.middleware.append(RequestStateBoundary(security, default_audience=lowlevel.name))
        lowlevel.middleware.append(_RootsMiddleware(self))
        previous = lowlevel.get_notification_handler(LIST_CHANGED)

        async def on_list_changed(ctx: ServerRequestContext[Any, Any], params: types.NotificationParams) -> None:
            await self._refresh_after_change(ctx)
            if previous is not None:
                await previous.handler(ctx, params)

        lowlevel.add_notification_handler(LIST_CHANGED, types.NotificationParams, on_list_changed)
        self._server = lowlevel
        return server

    # ------------------------------------------------------------------------------------------- public API

    async def roots(self, ctx: Any = None) -> RootSet:
        """The client's roots for this request. The one call a tool needs, in either era.

        Modern era: raises :class:`InputRequired` (turned into an ``InputRequiredResult`` by the middleware)
        when the answer is not here yet, together with anything :meth:`ask` recorded. Raises ``MCPError``
        ``-32021`` when the request did not declare ``roots`` and no ``fallback`` is configured.
        """
        result = await self.try_roots(ctx)
        if isinstance(result, Missing):
            self.require_inputs()
            raise InputRequired()  # pragma: no cover - require_inputs raises when something is pending
        return result

    async def try_roots(self, ctx: Any = None) -> RootSet | Literal[Missing.MISSING]:
        """Like :meth:`roots`, but in the modern era returns ``MISSING`` (and records the request) instead of
        raising, so a tool can collect several inputs and call :meth:`require_inputs` once."""
        scope, rctx = self._scope(ctx)
        if era_of(rctx.protocol_version) == "modern":
            return self._modern_roots(scope, rctx)
        return await self._legacy_roots(rctx)

    def ask(self, key: str, request: InputRequest, ctx: Any = None) -> Any:
        """Modern era: the raw answer under ``key`` in this round's ``inputResponses``, or ``MISSING`` (and the
        request is recorded for :meth:`require_inputs`). Checks the request declared that kind's capability."""
        scope, rctx = self._scope(ctx)
        if not scope.modern:
            raise RuntimeError("input requests exist only in 2026-07-28; send the request directly instead")
        if key == self.key:
            raise ValueError("that key is reserved for roots")
        responses = (rctx.params or {}).get("inputResponses")
        if isinstance(responses, Mapping) and key in responses:
            return responses[key]
        capability = _KIND_CAPABILITY[request.method]
        declared = _raw_capabilities(rctx)
        if not isinstance(declared, Mapping) or not isinstance(declared.get(capability), Mapping):
            scope.missing[capability] = {}
        scope.pending[key] = request
        return MISSING

    def require_inputs(self, ctx: Any = None, *, state: str | None = None) -> None:
        """Raise if this round still lacks inputs: ``-32021`` (merged) for undeclared kinds, else
        :class:`InputRequired` carrying every recorded request. Returns when nothing is pending.

        ``state``: the handler's own ``requestState`` for the next round (sealed by the SDK with any roots rootbound
        carries); the retry's ``params.request_state`` is that string again.
        """
        scope, _ = self._scope(ctx)
        if state is not None:
            scope.app_state = state
        if scope.missing:
            raise mcp_error(missing_capability(scope.missing))
        if scope.pending:
            scope.signalled = True
            raise InputRequired()

    async def boundary(
        self, ctx: Any = None, *, allow: Iterable[Root | PurePath | str] | None = None, **options: Any
    ) -> Boundary:
        """A :class:`~rootbound.Boundary` over this request's roots ∩ ``allow`` (held open: use ``with``)."""
        return Boundary(await self.roots(ctx), allow=allow, **options)

    async def fs(
        self,
        ctx: Any = None,
        *,
        allow: Iterable[Root | PurePath | str] | None = None,
        read_only: bool = True,
        **options: Any,
    ) -> RootedFS:
        """A :class:`~rootbound.RootedFS` over :meth:`boundary` (read-only unless asked; fds close with it)."""
        return RootedFS(await self.boundary(ctx, allow=allow), read_only=read_only, **options)

    @property
    def cache_size(self) -> int:
        """Live per-connection cache entries (0 once every handshake connection has closed)."""
        return len(self._entries)

    # -------------------------------------------------------------------------------------------- internals

    def _scope(self, ctx: Any) -> tuple[_CallScope, ServerRequestContext[Any, Any]]:
        scope = _SCOPE.get()
        if scope is None:
            rctx = request_context_of(ctx)
            if rctx is None:
                raise RuntimeError("call RootsService.roots() inside a request of a server it is installed on")
            scope = _CallScope(rctx, era_of(rctx.protocol_version) == "modern")
        return scope, scope.ctx

    def _no_roots(self, reason: str) -> RootSet:
        if self.fallback is not None:
            return self.fallback
        if reason == "capability":
            raise mcp_error(MissingCapability({"roots": {}}))
        raise RootsUnavailable("no back-channel: use 2026-07-28 or a stateful session for roots/list")

    def _modern_roots(
        self, scope: _CallScope, rctx: ServerRequestContext[Any, Any]
    ) -> RootSet | Literal[Missing.MISSING]:
        if scope.roots is not None:
            return scope.roots
        if not client_supports_roots(_raw_capabilities(rctx)):
            if self.fallback is not None:
                return self.fallback
            scope.missing["roots"] = {}
            raise mcp_error(missing_capability(scope.missing))
        self._negotiated()
        try:
            answer = read_roots_response((rctx.params or {}).get("inputResponses"), self.key, limits=self.limits)
        except InvalidRootsAnswer as error:
            raise mcp_error(error) from None
        if isinstance(answer, Missing):
            if scope.carried is None:
                scope.pending[self.key] = types.ListRootsRequest()
                return MISSING
            answer = scope.carried
        scope.roots = answer
        return answer

    async def _legacy_roots(self, rctx: ServerRequestContext[Any, Any]) -> RootSet:
        if not rctx.session.can_send_request:
            return self._no_roots("back-channel")
        capabilities = rctx.session.client_capabilities
        if capabilities is None or capabilities.roots is None:
            return self._no_roots("capability")
        self._negotiated()
        entry = self._entry(rctx)
        for _ in range(_MAX_ATTEMPTS):
            generation = entry.generation
            cached = entry.fresh()
            if cached is not None:
                return cached
            flight = entry.flights.get(generation)
            if flight is None:
                result = await self._lead(entry, generation, rctx)
            else:
                await flight.done.wait()
                if flight.error is not None:
                    raise type(flight.error)(flight.error.reason)  # the leader's failure, as a fresh exception
                if flight.abandoned or flight.result is None:
                    continue
                result = flight.result
            if entry.generation == generation:
                return result
        raise RootsUnavailable("roots kept changing while being fetched")

    async def _lead(self, entry: _ConnectionRoots, generation: int, rctx: ServerRequestContext[Any, Any]) -> RootSet:
        flight = _Flight()
        entry.flights[generation] = flight
        try:
            flight.result = await self._fetch(rctx, related=True)
        except RootsError as error:
            flight.error = error
            raise
        except BaseException:
            flight.abandoned = True  # cancelled leader: followers retry and one of them leads
            raise
        finally:
            if entry.flights.get(generation) is flight:
                del entry.flights[generation]
            flight.done.set()
        entry.store(flight.result, generation)
        return flight.result

    async def _fetch(self, rctx: ServerRequestContext[Any, Any], *, related: bool) -> RootSet:
        """One ``roots/list`` round trip; every failure is a fixed-message ``RootsError``."""
        self.fetches += 1
        metadata = ServerMessageMetadata(related_request_id=rctx.request_id) if related else None
        try:
            raw = await rctx.session.send_request(
                types.ListRootsRequest(), _RawResult, request_read_timeout_seconds=self.timeout, metadata=metadata
            )
        except NoBackChannelError:
            raise RootsUnavailable("no back-channel") from None
        except MCPError as error:
            reason = "timed out" if error.code == types.REQUEST_TIMEOUT else "client answered with an error"
            if error.code == types.CONNECTION_CLOSED:
                reason = "connection closed"
            raise RootsUnavailable(reason) from None
        except ValidationError:
            raise InvalidRootsAnswer("answer does not match the ListRootsResult schema") from None
        return RootSet.parse(raw.model_extra or {}, "legacy", limits=self.limits)

    def _entry(self, rctx: ServerRequestContext[Any, Any]) -> _ConnectionRoots:
        connection = connection_of(rctx)
        entry = connection.state.get(self._state_key)
        if isinstance(entry, _ConnectionRoots):
            return entry
        entry = _ConnectionRoots()
        connection.state[self._state_key] = entry
        self._entries.add(entry)

        def forget() -> None:
            entry.closed = True
            self._entries.discard(entry)

        connection.exit_stack.callback(forget)
        return entry

    def _invalidate(self, ctx: ServerRequestContext[Any, Any]) -> None:
        entry = connection_of(ctx).state.get(self._state_key)
        if isinstance(entry, _ConnectionRoots):
            entry.invalidate()

    async def _refresh_after_change(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Trailing debounce: only the last notification of a burst refreshes, on the standalone channel."""
        entry = connection_of(ctx).state.get(self._state_key)
        if not isinstance(entry, _ConnectionRoots):
            return  # nothing was ever fetched on this connection: nothing to refresh
        generation = entry.generation
        await anyio.sleep(self.debounce)
        if entry.generation != generation or entry.closed or entry.fresh() is not None:
            return
        self.refreshes += 1
        try:
            roots = await self._fetch(ctx, related=False)
        except RootsError as error:
            logger.info("roots refresh after list_changed failed (%s); cache stays empty", error.reason)
            return
        entry.store(roots, generation)

    def _negotiated(self) -> None:
        if self.warn_deprecated:
            _warn_deprecated()

    # ------------------------------------------------------------------------------------ request state

    def _open_state(self, state: Any) -> tuple[RootSet | None, str | None, bool]:
        """Split our (already unsealed) ``requestState`` into carried roots and the application's own state."""
        if not isinstance(state, str) or not state.startswith(_STATE_PREFIX):
            return None, state if isinstance(state, str) else None, False
        try:
            document = json.loads(state[len(_STATE_PREFIX) :])
        except ValueError:
            raise mcp_error(InvalidRootsAnswer("request state is malformed")) from None
        if not isinstance(document, dict):
            raise mcp_error(InvalidRootsAnswer("request state is malformed"))
        app = document.get("app")
        carried = document.get("roots")
        try:
            roots = None if carried is None else RootSet.parse(carried, "modern", limits=self.limits)
        except InvalidRootsAnswer as error:
            raise mcp_error(error) from None
        return roots, app if isinstance(app, str) else None, True

    @staticmethod
    def _close_state(roots: RootSet | None, app: str | None) -> str | None:
        """Our ``requestState`` (the SDK seals it), or the app's own / none when there are no roots to carry."""
        if roots is None:
            return app
        document: dict[str, Any] = {"roots": roots.to_wire()}
        if app is not None:
            document["app"] = app
        return _STATE_PREFIX + json.dumps(document, separators=(",", ":"), ensure_ascii=False)

    def _precheck(self, responses: Any) -> None:
        """Refuse an over-count roots answer before the SDK's schema check, which runs first and costs ~10 µs per
        root (100,000 roots: over a second of event-loop time); counting is O(1). The rest waits for the tool."""
        answer = responses.get(self.key) if isinstance(responses, Mapping) else None
        items = answer.get("roots") if isinstance(answer, Mapping) else None
        if isinstance(items, list) and len(items) > self.limits.max_roots:
            raise mcp_error(InvalidRootsAnswer("too many roots"))

    def _wire(self, result: BaseModel, version: str) -> dict[str, Any]:
        """A short-circuit result in its wire form (the runner's serializer is bypassed on this path)."""
        wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        if era_of(version) == "modern":
            wire.setdefault("resultType", "complete")
            if self._server is not None:
                meta = dict(wire.get("_meta") or {})
                meta.setdefault("io.modelcontextprotocol/serverInfo", self._server.server_info_stamp)
                wire["_meta"] = meta
        else:
            wire.pop("resultType", None)  # 2026-07-28 vocabulary: the SDK's sieve would drop it on a legacy wire
        return wire

    def _input_required(self, scope: _CallScope) -> dict[str, Any]:
        requests = {key: request for key, request in scope.pending.items()}
        result = types.InputRequiredResult(
            input_requests=requests,
            request_state=self._close_state(scope.roots or scope.carried, scope.app_state),
        )
        return self._wire(result, scope.ctx.protocol_version)


def _is_error_result(result: Any) -> bool:
    if isinstance(result, Mapping):
        return result.get("isError") is True
    return getattr(result, "is_error", False) is True


class _RootsMiddleware:
    """Server middleware: synchronous invalidation, the per-request scope, and the MRTR plumbing."""

    def __init__(self, service: RootsService) -> None:
        self.service = service

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        service = self.service
        modern = era_of(ctx.protocol_version) == "modern"
        if ctx.request_id is None:
            if ctx.method == LIST_CHANGED and not modern:
                service._invalidate(ctx)  # first statement, before any await: see module docstring
            return await call_next(ctx)
        scope = _CallScope(ctx, modern)
        if modern and ctx.method in MRTR_METHODS and ctx.params is not None:
            service._precheck(ctx.params.get("inputResponses"))
            carried, app_state, ours = service._open_state(ctx.params.get("requestState"))
            if ours:
                params = {k: v for k, v in ctx.params.items() if k != "requestState"}
                if app_state is not None:
                    params["requestState"] = app_state
                ctx = replace(ctx, params=params)
            scope = _CallScope(ctx, modern, carried=carried, app_state=app_state)
        token = _SCOPE.set(scope)
        try:
            result = await call_next(ctx)
        except InputRequired:
            return service._input_required(scope)
        except RootsError as error:
            if ctx.method != "tools/call":
                raise mcp_error(error) from None
            failure = types.CallToolResult(content=[types.TextContent(type="text", text=str(error))], is_error=True)
            return service._wire(failure, ctx.protocol_version)
        finally:
            _SCOPE.reset(token)
        if scope.signalled and _is_error_result(result):
            # A framework turned our InputRequired into an isError result (FastMCP masks tool exceptions).
            return service._input_required(scope)
        if modern and is_input_required(result) and (scope.roots is not None or scope.carried is not None):
            return self._carry(scope, result)
        return result

    def _carry(self, scope: _CallScope, result: Any) -> HandlerResult:
        """The application returned its own ``InputRequiredResult``: keep our roots in its state."""
        roots = scope.roots or scope.carried
        if isinstance(result, Mapping):
            app = result.get("requestState")
            return {**result, "requestState": self.service._close_state(roots, app if isinstance(app, str) else None)}
        assert isinstance(result, types.InputRequiredResult)
        return result.model_copy(update={"request_state": self.service._close_state(roots, result.request_state)})
