"""``RootsService``: the server side of MCP roots on the official SDK, in both eras, behind one call.

Tool authors write ``roots = await service.roots(ctx)``. Underneath:

* **Handshake era** (≤ 2025-11-25): the client's ``roots`` capability is checked (``-32021`` otherwise), then
  ``roots/list`` goes out on the tool call's own stream with a timeout. Answers are cached per connection with a
  single flight. ``notifications/roots/list_changed`` invalidates *synchronously, on receipt* (a generation
  counter), so no call that starts after the notification can see the old set; a trailing debounced refresh
  re-fetches once per burst, and a failed refresh leaves the cache empty (fail closed). The entry dies with the
  connection. The rules are the pure state machine of ``rootbound.core.roots_cache``; ``_handshake`` does its I/O.
* **2026-07-28**: no request of its own. A missing answer becomes an ``InputRequiredResult`` with the roots input
  request under a stable key, next to any other input requests of the same round; the retry's raw
  ``inputResponses`` are validated by :mod:`rootbound.core.mrtr`; roots obtained in one round ride the (SDK-sealed)
  ``requestState`` into later rounds of the same call (``_rounds``).

Everything is wired by one server middleware (:meth:`RootsService.install`, ``_middleware``) so it works the same
on the lowlevel ``Server``, on ``MCPServer`` and on FastMCP 4, and so ``service.roots()`` needs no
framework-specific context. On mcp 1.x (handshake era only; ``_sdk_major.MCP_V2`` false) the same handshake
machinery runs behind 1.x's port (``_sdk1_server``: a per-connection lifespan and guarded request handlers instead
of middleware), on the lowlevel ``Server`` and on FastMCP 1.x; the 2026-07-28-only API raises ``RequiresMcp2``.
"""

from __future__ import annotations

import inspect
import logging
import os
import warnings
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Final, Literal, TypeVar

import anyio

from rootbound.confine.boundary import Boundary
from rootbound.core.errors import MissingCapability, RootsError, RootsUnavailable
from rootbound.core.mrtr import LIST_CHANGED, ROOTS_KEY, Missing
from rootbound.core.roots import DEFAULT_LIMITS, RootLike, RootLimits, RootsChange, RootSet
from rootbound.mcp._bridges import InputRequired, RequiresMcp2, SdkError, mcp_error, note_refusal, tool_errors
from rootbound.mcp._handshake import HandshakeRoots, handshake_supports_roots
from rootbound.mcp._handshake_port import Link
from rootbound.mcp._sdk_major import MCP_V2
from rootbound.search.rooted_fs import RootedFS

if MCP_V2:
    import mcp_types as types
    from mcp.server.context import ServerRequestContext
    from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
    from mcp.shared.exceptions import MCPDeprecationWarning

    from rootbound.mcp import _rounds
    from rootbound.mcp._middleware import RootsMiddleware
    from rootbound.mcp._sdk_server import Link2, lowlevel_server_of, request_context_of

    InputRequest = _rounds.InputRequest
else:
    from mcp import types
    from rootbound.mcp import _sdk1_server

    MCPDeprecationWarning = DeprecationWarning
    RequestStateSecurity = Any
    InputRequest = Any

__all__ = ["ChangeCallback", "InputRequired", "RootsService", "mcp_error", "tool_errors"]

logger = logging.getLogger("rootbound.server")

SILENCE_ENV: Final = "ROOTBOUND_SILENCE_SEP2577"
INITIALIZED: Final = "notifications/initialized"

ChangeCallback = Callable[[RootsChange], Awaitable[None] | None]
"""An :meth:`RootsService.on_change` callback: ``async def callback(change: RootsChange)`` (a plain function
works too)."""

_ServerT = TypeVar("_ServerT")
_ChangeT = TypeVar("_ChangeT", bound=ChangeCallback)
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


class RootsService:
    """Roots for tool authors, correct in every protocol revision.

    ``fallback``: roots to use when the client declares none (or cannot be asked, e.g. stateless HTTP in the
    handshake era) — typically the operator's allowlist. Without it such a call gets ``-32021``.
    ``timeout``: seconds to wait for a handshake-era ``roots/list`` answer. ``debounce``: trailing window of the
    background refresh after ``list_changed``. ``key``: the ``inputRequests`` key (stable, leaks no code).
    ``state_security``: the SDK's ``RequestStateSecurity`` (or a list of keys, newest first, for rotation and for
    several instances serving rounds of one call); only used if the server has no ``RequestStateBoundary`` yet.
    ``warm``: handshake era, ask the client's roots as soon as it sends ``notifications/initialized`` (in the
    background, never waited on by a call), so the first calls find them cached and :meth:`ever_listed` is true from
    the client's first answer; ``rootbound serve`` does (mcp 2.x only).
    """

    def __init__(
        self,
        *,
        fallback: Iterable[RootLike] | RootSet | None = None,
        timeout: float = 10.0,
        debounce: float = 0.25,
        key: str = ROOTS_KEY,
        limits: RootLimits = DEFAULT_LIMITS,
        state_security: RequestStateSecurity | Sequence[bytes | str] | None = None,
        warn_deprecated: bool = True,
        warm: bool = False,
    ) -> None:
        if timeout <= 0 or debounce < 0:
            raise ValueError("timeout must be positive and debounce non-negative")
        self.fallback: RootSet | None = (
            None if fallback is None else fallback if isinstance(fallback, RootSet) else RootSet.of(fallback)
        )
        self.key = key
        self.limits = limits
        self.warn_deprecated = warn_deprecated
        self.warm = warm
        self._state_security: Any = None
        if not MCP_V2:
            if state_security is not None:
                raise RequiresMcp2("RootsService(state_security=...)")
            if warm:
                raise RequiresMcp2("RootsService(warm=True)")
        elif state_security is None or isinstance(state_security, RequestStateSecurity):
            self._state_security = state_security
        else:
            self._state_security = RequestStateSecurity(keys=list(state_security))
        self._server: Any = None
        self._installed: weakref.WeakSet[Any] = weakref.WeakSet()
        self._callbacks: list[ChangeCallback] = []
        self._handshake = HandshakeRoots(
            timeout=timeout,
            debounce=debounce,
            limits=limits,
            key=f"rootbound.roots.{id(self):x}",
            on_change=self._changed,
        )

    # ---------------------------------------------------------------------------------------------- install

    def install(self, server: _ServerT) -> _ServerT:
        """Wire the service into a lowlevel ``Server``, an ``MCPServer`` or a FastMCP 4 app (mcp 1.x: a lowlevel
        ``Server`` or a FastMCP 1.x app); returns ``server``. Idempotent.

        mcp 2.x: appends the rootbound middleware (after a ``RequestStateBoundary``, adding one if the server has
        none, so carried roots are always sealed). mcp 1.x: prepares the server once (``_sdk1_server.wire``).
        Both register the ``list_changed`` handler (chaining any existing one).
        """
        if not MCP_V2:
            lowlevel = _sdk1_server.lowlevel_server_of(server)
            _sdk1_server.wire(lowlevel)
            if lowlevel in self._installed:
                return server
            self._installed.add(lowlevel)
            previous = lowlevel.notification_handlers.get(types.RootsListChangedNotification)

            async def on_list_changed(notification: Any) -> None:
                link = _sdk1_server.notification_link()
                if link is not None:
                    self._handshake.invalidate(link)  # first statement, before any await (see _sdk1_server)
                    await self._handshake.refresh_after_change(link)
                if previous is not None:
                    await previous(notification)

            lowlevel.notification_handlers[types.RootsListChangedNotification] = on_list_changed
            self._server = lowlevel
            return server
        else:
            lowlevel = lowlevel_server_of(server)
            if any(isinstance(m, RootsMiddleware) and m.service is self for m in lowlevel.middleware):
                return server
            if not any(isinstance(m, RequestStateBoundary) for m in lowlevel.middleware):
                security = self._state_security or RequestStateSecurity.ephemeral()
                lowlevel.middleware.append(RequestStateBoundary(security, default_audience=lowlevel.name))
            lowlevel.middleware.append(RootsMiddleware(self))
            previous = lowlevel.get_notification_handler(LIST_CHANGED)

            async def on_list_changed(ctx: ServerRequestContext[Any, Any], params: types.NotificationParams) -> None:
                await self._handshake.refresh_after_change(Link2(ctx))
                if previous is not None:
                    await previous.handler(ctx, params)

            lowlevel.add_notification_handler(LIST_CHANGED, types.NotificationParams, on_list_changed)
            if self.warm:
                self._warm_at_initialized(lowlevel)
            self._server = lowlevel
            return server

    def _warm_at_initialized(self, lowlevel: Any) -> None:
        """``warm``: ask ``roots/list`` when the client says it is initialized, chaining any existing handler."""
        if not MCP_V2:
            raise RequiresMcp2("RootsService(warm=True)")
        else:
            initialized = lowlevel.get_notification_handler(INITIALIZED)

            async def on_initialized(ctx: ServerRequestContext[Any, Any], params: types.NotificationParams) -> None:
                async with anyio.create_task_group() as tasks:  # the warm-up never holds up the chained handler
                    tasks.start_soon(self._handshake.warm, Link2(ctx))
                    if initialized is not None:
                        await initialized.handler(ctx, params)

            lowlevel.add_notification_handler(INITIALIZED, types.NotificationParams, on_initialized)

    # ------------------------------------------------------------------------------------------- public API

    async def roots(self, ctx: Any = None) -> RootSet:
        """The client's roots for this request. The one call a tool needs, in either era.

        2026-07-28: raises :class:`InputRequired` (turned into an ``InputRequiredResult`` by the middleware)
        when the answer is not here yet, together with anything :meth:`ask` recorded. Raises ``MCPError``
        ``-32021`` when the request did not declare ``roots`` and no ``fallback`` is configured.
        """
        if not MCP_V2:
            return await self._handshake_roots(self._link(ctx), force=False)
        else:
            result = await self.try_roots(ctx)
            if isinstance(result, Missing):
                self.require_inputs()
                raise InputRequired()  # pragma: no cover - require_inputs raises when something is pending
            return result

    async def try_roots(self, ctx: Any = None) -> RootSet | Literal[Missing.MISSING]:
        """Like :meth:`roots`, but in 2026-07-28 returns ``MISSING`` (and records the request) instead of
        raising, so a tool can collect several inputs and call :meth:`require_inputs` once. (mcp 1.x: the handshake
        era only, so always the roots, as :meth:`roots`.)"""
        if not MCP_V2:
            return await self.roots(ctx)
        else:
            scope = self._scope(ctx)
            if scope.era == "2026-07-28":
                return _rounds.round_roots(scope, self.key, self.limits, self.fallback, self._negotiated)
            return await self._handshake_roots(Link2(scope.ctx), force=False)

    async def refresh(self, ctx: Any = None) -> RootSet:
        """Fetch the client's roots now, even if cached (handshake era), and update the connection's cache.

        Single flight with every other caller on the connection; a changed set fires :meth:`on_change`. In
        2026-07-28 there is no cache to refresh: the same as :meth:`roots`.
        """
        if not MCP_V2:
            return await self._handshake_roots(self._link(ctx), force=True)
        else:
            scope = self._scope(ctx)
            if scope.era == "2026-07-28":
                return await self.roots(ctx)
            return await self._handshake_roots(Link2(scope.ctx), force=True)

    def snapshot(self, ctx: Any = None) -> RootSet | None:
        """The roots already known for this request, without asking the client: synchronous, never fetches.

        Handshake era: the set cached for this connection (``None`` before the first fetch and after a
        ``list_changed`` until the next one). 2026-07-28: the roots this request was already given (answered in
        this round's ``inputResponses``, validated like :meth:`roots` does, or carried from an earlier round),
        else ``None``; no input request is recorded. The ``fallback`` is never a snapshot.
        """
        if not MCP_V2:
            return self._handshake.snapshot(self._link(ctx))
        else:
            scope = self._scope(ctx)
            if scope.era == "2026-07-28":
                return _rounds.known_roots(scope, self.key, self.limits)
            return self._handshake.snapshot(Link2(scope.ctx))

    def ever_listed(self, ctx: Any = None) -> bool:
        """Handshake era: whether this connection's client has ever answered ``roots/list`` with at least one root
        (its roots are fetched at ``notifications/initialized``, so this is true from its first answer, before any
        tool call). 2026-07-28: always ``False`` (no connection to remember it)."""
        if not MCP_V2:
            return self._handshake.ever_listed(self._link(ctx))
        else:
            scope = self._scope(ctx)
            if scope.era == "2026-07-28":
                return False
            return self._handshake.ever_listed(Link2(scope.ctx))

    def on_change(self, callback: _ChangeT) -> _ChangeT:
        """Register ``async def callback(change)``, awaited when a connection's roots change (usable as a decorator).

        Handshake era only (2026-07-28 has no connection to remember a previous set): after a fetch (the
        debounced refresh that follows ``list_changed``, an explicit :meth:`refresh`, or a tool's own fetch after
        an invalidation) stores a set different from the connection's previous one. ``change`` is a
        :class:`~rootbound.RootsChange` (``old``, ``new``, ``added``, ``removed``). The first set of a
        connection is not a change. A failing callback is logged and never breaks the server.
        """
        self._callbacks.append(callback)
        return callback

    def ask(self, key: str, request: InputRequest, ctx: Any = None) -> Any:
        """2026-07-28: the raw answer under ``key`` in this round's ``inputResponses``, or ``MISSING`` (and the
        request is recorded for :meth:`require_inputs`). Checks the request declared that kind's capability.
        mcp 1.x: raises ``RequiresMcp2``."""
        if not MCP_V2:
            raise RequiresMcp2("RootsService.ask")
        else:
            scope = self._scope(ctx)
            if scope.era != "2026-07-28":
                raise RuntimeError("input requests exist only in 2026-07-28; send the request directly instead")
            if key == self.key:
                raise ValueError("that key is reserved for roots")
            return _rounds.ask(scope, key, request)

    def require_inputs(self, ctx: Any = None, *, state: str | None = None) -> None:
        """Raise if this round still lacks inputs: ``-32021`` (merged) for undeclared kinds, else
        :class:`InputRequired` carrying every recorded request. Returns when nothing is pending.

        ``state``: the handler's own ``requestState`` for the next round (sealed by the SDK with any roots rootbound
        carries); the retry's ``params.request_state`` is that string again. mcp 1.x: raises ``RequiresMcp2``.
        """
        if not MCP_V2:
            raise RequiresMcp2("RootsService.require_inputs")
        else:
            scope = self._scope(ctx)
            if state is not None:
                scope.app_state = state
            _rounds.require(scope)

    async def boundary(self, ctx: Any = None, *, allow: Iterable[RootLike] | None = None, **options: Any) -> Boundary:
        """A :class:`~rootbound.Boundary` over this request's roots ∩ ``allow`` (held open: use ``with``)."""
        return Boundary(await self.roots(ctx), allow=allow, **options)

    async def fs(
        self,
        ctx: Any = None,
        *,
        allow: Iterable[RootLike] | None = None,
        read_only: bool = True,
        **options: Any,
    ) -> RootedFS:
        """A :class:`~rootbound.RootedFS` over :meth:`boundary` (read-only unless asked; fds close with it)."""
        return RootedFS(await self.boundary(ctx, allow=allow), read_only=read_only, **options)

    @property
    def timeout(self) -> float:
        """Seconds to wait for a handshake-era ``roots/list`` answer."""
        return self._handshake.timeout

    @property
    def debounce(self) -> float:
        """Trailing window of the background refresh after ``list_changed``."""
        return self._handshake.debounce

    @property
    def cache_size(self) -> int:
        """Live per-connection cache entries (0 once every handshake connection has closed)."""
        return len(self._handshake.entries)

    @property
    def fetches(self) -> int:
        """How many ``roots/list`` requests this service sent (tool-path and refresh)."""
        return self._handshake.fetches

    @property
    def refreshes(self) -> int:
        """How many debounced background refreshes this service started after ``list_changed``."""
        return self._handshake.refreshes

    # -------------------------------------------------------------------------------------------- internals

    if MCP_V2:

        def _scope(self, ctx: Any) -> _rounds.CallScope:
            scope = _rounds.SCOPE.get()
            if scope is None:
                rctx = request_context_of(ctx)
                if rctx is None:
                    raise RuntimeError("call RootsService.roots() inside a request of a server it is installed on")
                scope = _rounds.scope_for(rctx)
            return scope

    def _link(self, ctx: Any) -> Link:
        """mcp 1.x: the handshake link of the request ``ctx`` (or the one being handled)."""
        if not MCP_V2:
            link = _sdk1_server.link_of(ctx)
            if link is None:
                raise RuntimeError("call RootsService.roots() inside a request of a server it is installed on")
            return link
        raise AssertionError("mcp 2.x reaches the handshake through its request scope")  # pragma: no cover

    async def _handshake_roots(self, link: Link, *, force: bool) -> RootSet:
        if MCP_V2:
            return await self._handshake_roots_of(link, force=force)
        try:
            return await self._handshake_roots_of(link, force=force)
        except (RootsError, SdkError) as error:
            note_refusal(error)  # the 1.x request wrapper gives it the wire form mcp 2.x's middleware does
            raise

    async def _handshake_roots_of(self, link: Link, *, force: bool) -> RootSet:
        if not link.can_send():
            return self._no_roots("back-channel")
        if not handshake_supports_roots(link):
            return self._no_roots("capability")
        self._negotiated()
        return await self._handshake.roots(link, force=force)

    def _no_roots(self, reason: str) -> RootSet:
        if self.fallback is not None:
            return self.fallback
        if reason == "capability":
            raise mcp_error(MissingCapability({"roots": {}}))
        if MCP_V2:
            raise RootsUnavailable("no back-channel: use 2026-07-28 or a stateful session for roots/list")
        raise RootsUnavailable("no back-channel: stateless HTTP cannot carry roots/list; use a stateful session")

    async def _changed(self, change: RootsChange) -> None:
        for callback in list(self._callbacks):
            try:
                outcome = callback(change)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.warning("a roots on_change callback failed; the server carries on", exc_info=True)

    def _server_info(self) -> Any:
        if not MCP_V2:
            return None
        else:
            return self._server.server_info_stamp if self._server is not None else None

    def _negotiated(self) -> None:
        if self.warn_deprecated:
            _warn_deprecated()
