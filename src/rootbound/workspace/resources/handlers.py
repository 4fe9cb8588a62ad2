"""The resources methods of ``rootbound serve`` on the SDK's lowlevel server: ``resources/list``,
``resources/templates/list``, ``resources/read``, ``resources/directory/read`` (SEP-2640's shape, declared under
our own extension id, see ``docs/resources.md``) and ``completion/complete`` for the template's path.

Why apart from ``workspace/server.py``: the server gives this module one thing, :class:`ResourceHost` (run a
function on a :class:`~rootbound.RootedFS` over this request's roots, held as the tools hold them), and every
resources method is built on it here; the tools' code paths are not touched.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions

from rootbound.core.mrtr import era_of
from rootbound.mcp._sdk_server import connection_of
from rootbound.search.rooted_fs import RootedFS
from rootbound.workspace.limits.answer_budget import ANSWERS
from rootbound.workspace.resources.addresses import EXTENSION, TEMPLATE, not_found
from rootbound.workspace.resources.contents import ReadRequest, fits, read_resource
from rootbound.workspace.resources.listening import WatchedListen
from rootbound.workspace.resources.listings import Listing, complete_path, directory_page, list_page
from rootbound.workspace.resources.subscribing import SubscribeRequest, watch_top_levels
from rootbound.workspace.resources.subscribing import subscribe as subscribe_to
from rootbound.workspace.resources.watches import BOOKKEEPING, Notify, Watches

__all__ = [
    "DIRECTORY_READ",
    "SHOW_IGNORED",
    "WATCHED",
    "DirectoryReadParams",
    "ResourceHost",
    "install_resources",
    "narrow_subscriptions",
]

DIRECTORY_READ: Final = "resources/directory/read"
SETTINGS: Final = {"directoryRead": True, "contentIdentity": "sha256"}
"""Our extension's capability settings: SEP-2640's ``directoryRead`` and the digest every read carries."""
SHOW_IGNORED: Final = f"{EXTENSION}/showIgnored"
"""A request ``_meta`` key: ``true`` shows what the ignore files hide (the tools' ``include_ignored``)."""
SEND_GRACE: Final = 5.0
"""Seconds one ``notifications/resources/updated`` may wait on a session's transport before it is dropped."""
WATCHED: Final = "rootbound.serve.resource_watches"
Run = Callable[[ServerRequestContext[Any, Any], object, Callable[[RootedFS], Any]], Awaitable[Any]]


class DirectoryReadParams(types.PaginatedRequestParams):
    """``resources/directory/read`` params (SEP-2640): the directory's URI and the page cursor."""

    uri: str


@dataclass(frozen=True)
class ResourceHost:
    """What the server lends the resources methods: ``in_roots(ctx, work)`` runs ``work`` on a worker thread on a
    read-only :class:`RootedFS` over the request's roots (``None`` when the request has none), and the read caps.
    Its third argument, ``quick``: ``work`` changes nothing and may be tried on the event loop first (as quick tools
    are), starting again on a thread if it runs past its slice."""

    in_roots: Callable[[ServerRequestContext[Any, Any], Callable[[RootedFS], Any], bool], Awaitable[Any]]
    max_read: int
    max_media: int
    watches: Watches = field(default_factory=Watches)
    max_answer: int | None = None
    """The bytes one answer may take (over HTTP, what the SDK's client accepts in one message), or no bound."""


def _show_ignored(params: types.RequestParams) -> bool:
    meta: Mapping[str, Any] = params.meta or {}
    return meta.get(SHOW_IGNORED) is True


def _cacheable(ctx: ServerRequestContext[Any, Any], result: dict[str, Any]) -> dict[str, Any]:
    """2026-07-28 results: complete, and never to be shared between users (a workspace is one user's)."""
    if era_of(ctx.protocol_version) == "2026-07-28":
        result |= {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
    return result


def _template() -> dict[str, Any]:
    return {
        "uriTemplate": TEMPLATE,
        "name": "workspace-file",
        "title": "A file or directory in the workspace",
        "description": (
            "Any file or directory under the roots (read a window with ?start_line=N&end_line=M or "
            "?offset=N&length=M); directories are listed with resources/directory/read"
        ),
    }


def install_resources(server: Server[Any], host: ResourceHost) -> None:
    """Register the resources methods and declare them (``resources`` and our extension's ``directoryRead``)."""

    async def run(
        ctx: ServerRequestContext[Any, Any], uri: object, work: Callable[[RootedFS], Any], quick: bool = False
    ) -> Any:
        """``work`` on the request's roots; no roots: nothing is served, so nothing is found."""
        result = await host.in_roots(ctx, work, quick)
        if result is None:
            not_found(uri)
        return result

    async def list_resources(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams) -> Any:
        listing = Listing(None, params.cursor, _show_ignored(params))
        lister = _lister(ctx, host.watches) if era_of(ctx.protocol_version) != "2026-07-28" else None

        def page(fs: RootedFS) -> Any:
            if lister is not None:
                watch_top_levels(fs, lister, lister.notify, host.watches)
            return list_page(fs, listing)

        result = await host.in_roots(ctx, page, True)
        return _cacheable(ctx, result if result is not None else {"resources": []})

    async def list_templates(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams) -> Any:
        return _cacheable(ctx, {"resourceTemplates": [_template()]})

    async def read(ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams) -> Any:
        answers = ANSWERS.ledger()  # room for a large answer, given back once it is handed to the SDK
        request = ReadRequest(params.uri, host.max_read, host.max_media, _show_ignored(params), answers)
        try:
            result = await run(ctx, params.uri, lambda fs: fits(read_resource(fs, request), host.max_answer), True)
            return _cacheable(ctx, result)
        finally:
            answers.release()

    async def read_directory(ctx: ServerRequestContext[Any, Any], params: DirectoryReadParams) -> Any:
        listing = Listing(params.uri, params.cursor, _show_ignored(params))
        result = await run(ctx, params.uri, lambda fs: directory_page(fs, listing), True)
        return result | {"ttlMs": 0, "cacheScope": "private"}  # SEP-2640's result is cacheable in every era

    async def complete(ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams) -> Any:
        ref = params.ref
        empty = {"completion": {"values": [], "total": 0, "hasMore": False}}
        if not isinstance(ref, types.ResourceTemplateReference) or ref.uri != TEMPLATE:
            return _cacheable(ctx, empty)
        if params.argument.name != "path":
            return _cacheable(ctx, empty)
        listing = Listing(params.argument.value[:4096], None, _show_ignored(params))
        found = await host.in_roots(ctx, lambda fs: complete_path(fs, listing), True)
        return _cacheable(ctx, {"completion": found} if found is not None else empty)

    server.add_request_handler("resources/list", types.PaginatedRequestParams, list_resources)
    server.add_request_handler("resources/templates/list", types.PaginatedRequestParams, list_templates)
    server.add_request_handler("resources/read", types.ReadResourceRequestParams, read)
    server.add_request_handler(DIRECTORY_READ, DirectoryReadParams, read_directory)
    server.add_request_handler("completion/complete", types.CompleteRequestParams, complete)
    _install_subscriptions(server, host, run)
    server.extensions[EXTENSION] = dict(SETTINGS)  # 2026-07-28: ServerCapabilities.extensions (SEP-2133)
    _declare_in_handshake(server)


def _declare_in_handshake(server: Server[Any]) -> None:
    """The handshake era has no ``extensions`` capability (the SDK drops it from a 2025-11-25 ``initialize``), so
    there our extension is declared where that era puts non-standard capabilities: ``experimental``."""
    base = server.create_initialization_options

    def options(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        experimental = {**(experimental_capabilities or {}), EXTENSION: dict(SETTINGS)}
        return base(notification_options, experimental, extensions)

    setattr(server, "create_initialization_options", options)  # noqa: B010 (an instance's own, not the class's)


def _no_list_changed(server: Server[Any]) -> None:
    """Serving ``subscriptions/listen`` makes the SDK declare ``listChanged: true`` for tools, prompts and resources
    in 2026-07-28; this server sends no tools or prompts ``list_changed``, so its capabilities say so
    (``subscribe`` stays). Resources' is declared in both eras: a handshake-era session that listed resources, and a
    2026-07-28 listen stream that asked for ``resourcesListChanged``, are told when a root's top level changes (and
    the session when its roots do: :func:`watch_top_levels`)."""
    base = server.get_capabilities

    def capabilities(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        found = base(notification_options, experimental_capabilities, extensions, protocol_version=protocol_version)
        quiet: dict[str, Any] = {}
        for name in ("tools", "prompts"):
            part = getattr(found, name)
            if part is not None and part.list_changed:
                quiet[name] = part.model_copy(update={"list_changed": False})
        if found.resources is not None and not found.resources.list_changed:
            quiet["resources"] = found.resources.model_copy(update={"list_changed": True})
        return found.model_copy(update=quiet) if quiet else found

    setattr(server, "get_capabilities", capabilities)  # noqa: B010 (an instance's own, not the class's)


class _Lister:
    """A handshake-era session that asked for ``resources/list``: a subscriber of its roots' top levels whose
    every event (or an inotify overflow) is told as ``notifications/resources/list_changed``."""

    __slots__ = ("connection", "notify")

    def __init__(self, connection: Connection, notify: Notify) -> None:
        self.connection = connection
        self.notify = notify


LISTER: Final = "rootbound.serve.resources_lister"


def _lister(ctx: ServerRequestContext[Any, Any], watches: Watches) -> _Lister:
    """The session's lister (made on its first ``resources/list``; its watches end with the session)."""
    connection = connection_of(ctx)
    found = connection.state.get(LISTER)
    if isinstance(found, _Lister):
        return found
    token = anyio.lowlevel.current_token()

    def notify(uri: str) -> None:
        with contextlib.suppress(Exception):  # the session or its loop has gone: nobody to tell
            anyio.from_thread.run(_send_list_changed, connection, token=token)

    lister = connection.state[LISTER] = _Lister(connection, notify)
    connection.exit_stack.callback(watches.drop_session, lister)
    return lister


async def _send_list_changed(connection: Connection) -> None:
    with anyio.move_on_after(SEND_GRACE):
        await connection.send_resource_list_changed()


async def narrow_subscriptions(
    host: ResourceHost, connection: dict[str, Any] | None, kept: Callable[[list[str]], set[str]]
) -> None:
    """A handshake-era session's roots changed: the subscriptions its new roots no longer serve end, each told by a
    last ``updated`` (a read of it then answers not found). ``connection`` is the session's store (from the
    :class:`~rootbound.RootsChange`); ``kept(uris)``, run on a worker thread, gives those still served."""
    store = connection or {}
    session, lister = store.get(WATCHED), store.get(LISTER)
    watches = host.watches

    def narrow() -> None:
        subscribed = watches.subscribed(session) if session is not None else []
        if subscribed:
            still = kept(subscribed)
            watches.end(session, [uri for uri in subscribed if uri not in still])
        if isinstance(lister, _Lister):  # what resources/list returns changed with the roots: say so
            watches.drop_session(lister)  # its next resources/list watches the new roots' top levels
            lister.notify("")

    if session is not None or isinstance(lister, _Lister):
        await BOOKKEEPING.run(narrow)


async def _send(connection: Connection, uri: str) -> None:
    with anyio.move_on_after(SEND_GRACE):  # a client that does not read loses this one, not the others
        await connection.send_resource_updated(uri)


def _notifier(connection: Connection) -> Notify:
    """How the reader thread tells one session: on its event loop, waiting at most :data:`SEND_GRACE`; a session
    or loop that has gone is nothing to tell."""
    token = anyio.lowlevel.current_token()

    def notify(uri: str) -> None:
        with contextlib.suppress(Exception):
            anyio.from_thread.run(_send, connection, uri, token=token)

    return notify


def _install_subscriptions(server: Server[Any], host: ResourceHost, run: Run) -> None:
    """``resources/subscribe`` and ``unsubscribe`` (the handshake era's; a session's subscriptions end with it) and
    2026-07-28's ``subscriptions/listen`` (a stream's end with it: :mod:`.listening`)."""
    watches = host.watches

    async def subscribe(ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams) -> Any:
        connection = connection_of(ctx)
        if connection.state.get(WATCHED) is not connection:
            connection.state[WATCHED] = connection  # where a roots change finds the session's subscriptions
            connection.exit_stack.callback(watches.drop_session, connection)
        request = SubscribeRequest(params.uri, connection, _notifier(connection), watches, _show_ignored(params))
        return await run(ctx, params.uri, lambda fs: subscribe_to(fs, request))

    async def unsubscribe(ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams) -> Any:
        session = connection_of(ctx)
        await BOOKKEEPING.run(lambda: watches.unsubscribe(session, params.uri))
        return {}

    server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    listen = WatchedListen(watches, run, host.in_roots)
    server.add_request_handler("subscriptions/listen", types.SubscriptionsListenRequestParams, listen)
    _no_list_changed(server)
