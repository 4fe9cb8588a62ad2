"""Client side of MCP Roots: :class:`RootsProvider`, one roots source for every session and every era.

Why not the SDK callback alone: mcp 2.3.0 advertises ``roots: {"listChanged": true}`` whenever a callback is set,
even in 2026-07-28 ``_meta`` where the member means nothing, has no store and no ``set_roots``, and its
``send_roots_list_changed`` is deprecated and gated neither by capability nor by era. A provider:

* holds static roots (``Root``, ``file:`` URIs or paths) and/or a dynamic handler, validated before anything is
  sent (canonical ``file:///`` URIs, no host, de-duplicated, within :class:`~rootbound.RootLimits`);
* answers handshake-era ``roots/list`` requests and 2026-07-28 MRTR ``roots/list`` input requests from the same
  source;
* advertises ``roots: {"listChanged": notify}`` in ``initialize``, exactly ``roots: {}`` in every 2026-07-28
  ``_meta``, and no ``roots`` key at all when it has no source;
* sends ``notifications/roots/list_changed`` only on handshake connections that declared ``listChanged: true``,
  one per session per coalescing window, never on 2026-07-28 connections.

Integration: ``mcp.Client(target, **provider.client_kwargs())``, or
``ClientSession(read, write, **provider.session_kwargs())`` for a bare session.

On mcp 1.x (1.24 or later) the handshake era is all there is: ``ClientSession(read, write,
**provider.session_kwargs())`` (or a framework's ``session_kwargs`` / roots function) gets the same capability
promise, answers and coalesced ``list_changed``; ``mcp.Client`` does not exist there. The private SDK access lives
in ``_sdk_client`` (2.x) and ``_sdk1_client`` (1.x).
"""

from __future__ import annotations

import inspect
import logging
import os
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, TypeAlias, TypedDict

import anyio
import anyio.lowlevel
import anyio.to_thread

from rootbound.core import errors
from rootbound.core.errors import InvalidRootsAnswer
from rootbound.core.mrtr import advertised_roots_capability, era_of
from rootbound.core.roots import DEFAULT_LIMITS, Root, RootLike, RootLimits, RootSet
from rootbound.mcp._sdk_major import MCP_V2

if MCP_V2:
    import mcp_types as types
    from mcp.client.session import ClientRequestContext, ClientSession, ListRootsFnT

    from rootbound.mcp import _sdk_client
else:
    from mcp.client.session import ClientSession, ListRootsFnT
    from mcp.shared.context import RequestContext

    from mcp import types
    from rootbound.mcp import _sdk1_client as _sdk_client

    ClientRequestContext: TypeAlias = RequestContext[ClientSession, Any]
    """mcp 1.x has no ``ClientRequestContext``: its callbacks get a ``RequestContext`` around the session."""

__all__ = [
    "ClientKwargs",
    "RootsAnswer",
    "RootsHandler",
    "RootsHandlerError",
    "RootsListHandler",
    "RootsProvider",
    "SessionKwargs",
]

logger = logging.getLogger(__name__)

RootsAnswer: TypeAlias = RootSet | Iterable[RootLike] | types.ListRootsResult
"""What a dynamic handler returns (an SDK ``ListRootsResult`` is accepted for migration and re-validated)."""

RootsHandler: TypeAlias = Callable[[ClientRequestContext], RootsAnswer | Awaitable[RootsAnswer]]
"""A dynamic roots source, sync or async; it receives the SDK's request context (session, request id, meta):
``mcp.client.session.ClientRequestContext`` on 2.x, ``mcp.shared.context.RequestContext`` on 1.x."""

GENERIC_ERROR_MESSAGE = "Internal error"
ROOTS_NOT_SUPPORTED_MESSAGE = "Roots not supported"


class ClientKwargs(TypedDict):
    """Keyword arguments for ``mcp.Client`` (typed so ``Client(target, **kwargs)`` type-checks). mcp 1.x has no
    ``mcp.Client``; there the same keyword fits every API taking ``list_roots_callback`` (``ClientSession``)."""

    list_roots_callback: ListRootsFnT


class SessionKwargs(TypedDict):
    """Keyword arguments for ``mcp.client.session.ClientSession``."""

    list_roots_callback: ListRootsFnT


@dataclass(eq=False)
class _Link:
    """What the provider knows about one live session (weakly keyed by the session)."""

    declared_list_changed: bool | None = None  # the listChanged of our last handshake-era ad; None: never made
    dirty: bool = False
    sending: bool = False
    idle: anyio.Event | None = None
    notifications: int = 0
    failed: bool = False


def _is_single(value: object) -> bool:
    """A lone root where a collection belongs: a common slip (a ``str`` is iterable, char by char)."""
    return isinstance(value, (str, bytes, bytearray, PurePath, Root, Mapping))


def _canonical_set(items: Any, limits: RootLimits, version: int) -> RootSet:
    """Coerce host input into a canonical, de-duplicated, limit-checked :class:`RootSet`, or raise.

    Every root is re-spelled canonically (``path_to_uri(uri_to_path(uri))``): lower-case scheme, no host,
    upper-case hex, no trailing slash. Names and ``_meta`` are kept; unknown extra fields are dropped.
    """
    if isinstance(items, types.ListRootsResult):
        items = RootSet.parse(items.model_dump(by_alias=True, mode="json", exclude_none=True), limits=limits)
    if isinstance(items, RootSet):
        roots: tuple[Root, ...] = items.roots
    else:
        if _is_single(items) or not isinstance(items, Iterable):
            raise InvalidRootsAnswer("expected an iterable of roots, URIs or paths")
        roots = tuple(Root.coerce(item) for item in items)
    wire: list[dict[str, Any]] = []
    for root in roots:
        entry: dict[str, Any] = {"uri": root.canonical}
        if root.name is not None:
            entry["name"] = root.name
        if root.meta is not None:
            entry["_meta"] = root.meta
        wire.append(entry)
    # RootSet.parse applies the limits (count, URI and name length, total size, depth) and de-duplicates.
    return RootSet.parse({"roots": wire}, "handshake", limits=limits, version=version)


def _same(a: RootSet, b: RootSet) -> bool:
    return a.to_wire() == b.to_wire()


def _exists_locally(root: Root) -> bool:
    """Whether the root names something that exists on this host (a foreign path flavour never does)."""
    if type(root.path) is not type(PurePath()):
        return False
    try:
        return os.path.exists(str(root.path))
    except (OSError, ValueError):
        return False


class RootsProvider:
    """One roots source for every ``mcp.Client`` / ``ClientSession`` it is plugged into, in both eras.

    ``roots``: static roots (``Root``, ``file:`` URIs, or paths encoded with :func:`~rootbound.path_to_uri`).
    ``handler``: a dynamic source, sync or async, called with the SDK's ``ClientRequestContext`` for every answer.
    When both are given the **handler wins**: it answers every request, and the static roots are only what it
    may read through :attr:`roots`; changing them still notifies servers. ``None`` for both means no roots
    source: no ``roots`` capability is advertised and ``roots/list`` is answered with ``-32601``.

    ``notify``: the ``listChanged`` promise made in handshake-era ``initialize``; when true, every change
    (``set_roots``/``add``/``remove``/``roots_changed``) sends one ``notifications/roots/list_changed`` per
    declaring handshake session per ``coalesce`` seconds. ``check_exists``: drop roots that do not exist on this
    host when answering. ``expose_errors``: put a failing handler's exception text into the ``-32603`` message
    (off by default: it may leak paths or internals to the server).

    A provider belongs to one event loop; its methods are not thread-safe.
    """

    def __init__(
        self,
        roots: Iterable[RootLike] | RootSet | None = None,
        *,
        handler: RootsHandler | None = None,
        notify: bool = True,
        coalesce: float = 0.05,
        check_exists: bool = False,
        limits: RootLimits = DEFAULT_LIMITS,
        expose_errors: bool = False,
    ) -> None:
        if coalesce < 0:
            raise ValueError("coalesce must be >= 0 seconds")
        if handler is not None and not callable(handler):
            raise TypeError("handler must be callable")
        _sdk_client.install()
        self._limits = limits
        self._static: RootSet | None = None if roots is None else _canonical_set(roots, limits, 1)
        self._version = 1
        self._handler = handler
        self._notify = notify
        self._coalesce = coalesce
        self._check_exists = check_exists
        self._expose_errors = expose_errors
        self._links: weakref.WeakKeyDictionary[ClientSession, _Link] = weakref.WeakKeyDictionary()

    # -- the store -------------------------------------------------------------------------------------

    @property
    def roots(self) -> RootSet:
        """The static roots (empty when there are none); ``version`` grows with every change."""
        return self._static if self._static is not None else RootSet((), self._version)

    @property
    def has_source(self) -> bool:
        """Whether this provider can answer ``roots/list`` (static roots, even empty, or a handler)."""
        return self._static is not None or self._handler is not None

    @property
    def notify(self) -> bool:
        return self._notify

    async def set_roots(self, roots: Iterable[RootLike] | RootSet) -> RootSet:
        """Replace the static roots. Invalid input raises here and leaves the store unchanged.

        Takes effect for the next answer on every session; notifies declaring handshake sessions if the set
        changed. A provider without a source becomes one (for capabilities advertised from now on).
        """
        new = _canonical_set(roots, self._limits, self._version + 1)
        return await self._commit(new)

    async def add(self, *roots: RootLike) -> RootSet:
        """Add roots (a root already present by canonical URI keeps its place and name)."""
        extra = _canonical_set(roots, self._limits, 0)
        new = _canonical_set((*self.roots.roots, *extra.roots), self._limits, self._version + 1)
        return await self._commit(new)

    async def remove(self, *roots: RootLike) -> RootSet:
        """Remove roots by canonical URI (any spelling, or a path); absent ones are ignored."""
        gone = set(_canonical_set(roots, self._limits, 0).uris)
        kept = [root for root in self.roots.roots if root.canonical not in gone]
        new = _canonical_set(kept, self._limits, self._version + 1)
        return await self._commit(new)

    async def roots_changed(self) -> None:
        """Tell servers the roots changed when the handler's answer did (the provider cannot see that)."""
        self._version += 1
        self._schedule_notifications()
        await anyio.lowlevel.checkpoint()

    async def _commit(self, new: RootSet) -> RootSet:
        changed = self._static is None or not _same(self._static, new)
        if changed:
            self._version = new.version
            self._static = new
            self._schedule_notifications()
        await anyio.lowlevel.checkpoint()
        return self.roots

    # -- answering -------------------------------------------------------------------------------------

    async def current(self, ctx: ClientRequestContext) -> RootSet:
        """The validated roots this provider would answer ``ctx`` with now (raises on a bad handler answer)."""
        if self._handler is not None:
            answer = self._handler(ctx)
            if inspect.isawaitable(answer):
                answer = await answer
            roots = _canonical_set(answer, self._limits, self._version)
        else:
            roots = self.roots
        if self._check_exists and roots:
            present = await anyio.to_thread.run_sync(lambda: [r for r in roots if _exists_locally(r)])
            roots = RootSet(tuple(present), roots.version)
        return roots

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        """The SDK roots callback (``ListRootsFnT``): handshake-era ``roots/list`` and 2026-07-28 input requests."""
        if not self.has_source:
            return types.ErrorData(code=errors.METHOD_NOT_FOUND, message=ROOTS_NOT_SUPPORTED_MESSAGE)
        try:
            roots = await self.current(context)
            return _to_sdk_result(roots)
        except Exception as exc:
            # The server only learns "internal error": handler text may carry paths or secrets.
            logger.warning("roots source failed; answering -32603", exc_info=True)
            message = f"{GENERIC_ERROR_MESSAGE}: {type(exc).__name__}: {exc}" if self._expose_errors else None
            return types.ErrorData(code=errors.INTERNAL_ERROR, message=message or GENERIC_ERROR_MESSAGE)

    # -- integration -----------------------------------------------------------------------------------

    def client_kwargs(self) -> ClientKwargs:
        """``mcp.Client(target, **provider.client_kwargs())``: roots from this provider, era-correct capability.

        mcp 1.x has no ``mcp.Client``: use :meth:`session_kwargs` (the same mapping) with ``ClientSession``."""
        return {"list_roots_callback": self.list_roots}

    def session_kwargs(self) -> SessionKwargs:
        """``ClientSession(read, write, **provider.session_kwargs())`` for a bare session."""
        return {"list_roots_callback": self.list_roots}

    def roots_handler(self) -> RootsListHandler:
        """This provider as a roots function: ``fastmcp.Client(target, roots=provider.roots_handler())``, and so
        ``pydantic_ai.mcp.MCPToolset(target, roots=provider.roots_handler())``; era-correct capability and
        ``list_changed`` included."""
        return RootsListHandler(self)

    def sessions(self) -> list[ClientSession]:
        """Sessions that built their capability ad from this provider and are not known to be closed.

        Held weakly: a session drops out when garbage-collected, or when a notification to it fails to start.
        """
        return [session for session, link in list(self._links.items()) if not link.failed]

    def notifications_sent(self, session: ClientSession) -> int:
        """How many ``list_changed`` notifications this provider has sent on ``session``."""
        link = self._links.get(session)
        return link.notifications if link is not None else 0

    async def flush(self) -> None:
        """Wait until every pending coalesced notification has been sent (or its session is gone)."""
        while True:
            pending = [link.idle for link in list(self._links.values()) if link.sending and link.idle is not None]
            if not pending:
                return
            for event in pending:
                await event.wait()

    def _rootbound_roots_capability(self, session: ClientSession, version: str) -> types.RootsCapability | None:
        """Called (through the SDK wrapper) whenever ``session`` builds its capability ad for ``version``."""
        link = self._links.get(session)
        if link is None:
            link = self._links[session] = _Link()
        era = era_of(version)
        capability = advertised_roots_capability(era, has_source=self.has_source, list_changed=self._notify)
        if era == "handshake":
            link.declared_list_changed = None if capability is None else self._notify
        return None if capability is None else types.RootsCapability.model_validate(capability)

    # -- list_changed ----------------------------------------------------------------------------------

    @staticmethod
    def _wants_notification(session: ClientSession, link: _Link) -> bool:
        """Handshake connection, initialized, and we promised ``listChanged: true`` to it."""
        if link.declared_list_changed is not True or link.failed:
            return False
        if MCP_V2:
            return session.initialize_result is not None and era_of(session.protocol_version) == "handshake"
        version = _sdk_client.negotiated(session)  # set once the 1.x initialize() returned
        return version is not None and era_of(version) == "handshake"

    def _schedule_notifications(self) -> None:
        for session, link in list(self._links.items()):
            if not self._wants_notification(session, link):
                continue
            link.dirty = True
            if link.sending:
                continue  # the running sender will pick the change up
            link.sending = True
            link.idle = anyio.Event()
            if not _sdk_client.spawn(session, self._send_coalesced, weakref.ref(session), link):
                self._retire(link)

    @staticmethod
    def _retire(link: _Link) -> None:
        link.failed = True
        link.sending = False
        link.dirty = False
        if link.idle is not None:
            link.idle.set()

    async def _send_coalesced(self, ref: weakref.ref[ClientSession], link: _Link) -> None:
        """One sender per session: wait out the window, send one notification, repeat while changes arrived."""
        try:
            while link.dirty:
                await anyio.sleep(self._coalesce)
                link.dirty = False  # changes from here on need another notification
                session = ref()
                if session is None:
                    break
                if MCP_V2:
                    await session.send_notification(types.RootsListChangedNotification())
                else:
                    await session.send_notification(types.ClientNotification(types.RootsListChangedNotification()))
                link.notifications += 1
        except Exception:
            # Runs in the session's task group: never let a failed send take the connection down.
            logger.debug("roots list_changed could not be sent; dropping the session", exc_info=True)
            link.failed = True
        finally:
            link.sending = False
            link.dirty = False
            if link.idle is not None:
                link.idle.set()


def _to_sdk_result(roots: RootSet) -> types.ListRootsResult:
    """Build the SDK result and prove the SDK's ``FileUrl`` left every URI byte-identical (fail closed)."""
    result = types.ListRootsResult.model_validate(roots.to_wire(), by_name=False)
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)["roots"]
    if [item["uri"] for item in dumped] != [root.uri for root in roots]:
        raise InvalidRootsAnswer("the SDK would re-spell a root URI")
    return result


class RootsListHandler:
    """A :class:`RootsProvider` as a roots *function*, for clients that take one instead of an SDK callback:
    fastmcp's ``Client(roots=...)`` and pydantic-ai's ``MCPToolset(roots=...)``, which wrap whatever they are given
    in a callback of their own (so a bare ``provider.list_roots`` would neither be recognised nor fit: they
    expect a list of roots back).

    Called with the SDK's request context, it answers the provider's current roots as SDK ``Root`` objects, or
    raises :class:`RootsHandlerError` with the provider's fixed message (the client sends it as ``-32603``). The
    session still gets the provider's era-correct capability and ``list_changed``: ``_sdk_client`` finds the
    handler inside the framework's callback.
    """

    def __init__(self, provider: RootsProvider) -> None:
        self.provider = provider

    async def __call__(self, context: Any) -> list[types.Root]:
        """``context``: the SDK's ``ClientRequestContext`` (typed ``Any`` so it fits every framework's alias)."""
        answer = await self.provider.list_roots(context)
        if isinstance(answer, types.ErrorData):
            raise RootsHandlerError(answer.message)
        return list(answer.roots)

    def _rootbound_roots_capability(self, session: ClientSession, version: str) -> types.RootsCapability | None:
        return self.provider._rootbound_roots_capability(session, version)


class RootsHandlerError(RuntimeError):
    """A roots function could not answer; its message is the provider's fixed text, never the handler's."""
