"""The server side of mcp 1.x (handshake era only): the one place rootbound touches 1.x server internals.

mcp 1.x's lowlevel ``Server`` has no middleware, so :func:`wire` builds the same guarantees from its parts:

* **a per-connection key and close hook** from ``Server.lifespan``, which ``Server.run`` enters once per
  connection (stdio, each stateful Streamable HTTP session, each stateless request) before it creates the
  ``ServerSession`` and leaves after the session closed. The wrapper sets a contextvar to a fresh
  :class:`Connection1`; every message's task is started from ``run``'s task, so requests *and* notifications
  see it — the notification handlers of 1.x receive no session, this is how ``list_changed`` finds its cache;
* **synchronous invalidation**: ``Server.run`` starts one task per message in arrival order and a notification
  handler runs in its task's first step, so ``list_changed`` drops the cache before any later request's task
  runs (pinned in ``tests/mcp/v1/test_sdk1_pins_server.py``);
* **the wire form of a refusal**: each entry of the public ``Server.request_handlers`` is wrapped with a
  per-request :class:`~rootbound.mcp._bridges.Refusal`, so a ``-32021`` raised in a tool leaves as the JSON-RPC
  error mcp 2.x gives (1.x's ``call_tool`` would make any exception an ``isError`` result) and a ``RootsError``
  reaches the model with its fixed text (FastMCP 1.x would prefix "Error executing tool NAME: ").

Private attributes used: ``FastMCP._mcp_server`` only; pinned like the behaviour above.
"""

from __future__ import annotations

import contextlib
import contextvars
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any, Final

import anyio
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.server import request_ctx
from mcp.server.session import ServerSession
from mcp.shared.context import RequestContext
from mcp.shared.exceptions import McpError
from mcp.shared.message import ServerMessageMetadata
from pydantic import ValidationError

from mcp import types
from rootbound.core.errors import InvalidRootsAnswer, RootsError, RootsUnavailable
from rootbound.mcp._bridges import REFUSAL, Refusal, is_error_result, mcp_error
from rootbound.mcp._handshake_port import (
    ANSWERED_WITH_ERROR,
    CONNECTION_CLOSED,
    NOT_A_LIST_ROOTS_RESULT,
    RawResult,
    not_answered,
)

__all__ = ["Connection1", "Link1", "link_of", "lowlevel_server_of", "notification_link", "wire"]

REQUEST_TIMEOUT: Final = 408
"""The code 1.x's ``BaseSession.send_request`` raises on its read timeout (``httpx.codes.REQUEST_TIMEOUT``)."""
TIMEOUT_MESSAGE: Final = "Timed out while waiting for response to "
"""How that timeout's message starts: a client answering 408 itself is an error answer, not a timeout."""


class Connection1:
    """One client connection as ``Server.run`` sees it: a store, its session, and what to run when it ends."""

    __slots__ = ("_closers", "session", "state")

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}
        self.session: ServerSession | None = None
        self._closers: list[Callable[[], None]] = []

    def on_close(self, callback: Callable[[], None]) -> None:
        self._closers.append(callback)

    def close(self) -> None:
        closers, self._closers = self._closers, []
        for callback in reversed(closers):
            callback()
        self.session = None


CONNECTION: contextvars.ContextVar[Connection1 | None] = contextvars.ContextVar("rootbound_connection", default=None)


class Link1:
    """The handshake port (``_handshake_port.Link``) on mcp 1.x: a connection, its session, the request id."""

    __slots__ = ("connection", "request_id", "session")

    def __init__(self, connection: Connection1, session: ServerSession | None, request_id: types.RequestId | None):
        self.connection = connection
        self.session = session
        self.request_id = request_id

    @property
    def state(self) -> dict[str, Any]:
        return self.connection.state

    def on_close(self, callback: Callable[[], None]) -> None:
        self.connection.on_close(callback)

    def declared(self) -> Mapping[str, Any] | None:
        params = self.session.client_params if self.session is not None else None
        if params is None:
            return None
        return params.capabilities.model_dump(by_alias=True, exclude_none=True, include={"roots"})

    def can_send(self) -> bool:
        # A stateful 1.x session refuses every request before ``initialize``; only a stateless one (Streamable
        # HTTP, a new session per POST, so no answer could ever come back) handles a request without it.
        return self.session is not None and self.session.client_params is not None

    async def list_roots(self, wait: float, *, related: bool) -> Mapping[str, Any]:
        session = self.session
        if session is None:
            raise RootsUnavailable(CONNECTION_CLOSED)
        related_id = self.request_id if related else None
        metadata = ServerMessageMetadata(related_request_id=related_id) if related_id is not None else None
        request = types.ServerRequest(types.ListRootsRequest(method="roots/list"))
        try:
            raw = await session.send_request(
                request, RawResult, request_read_timeout_seconds=timedelta(seconds=wait), metadata=metadata
            )
        except McpError as error:
            code = error.error.code
            if code == REQUEST_TIMEOUT and error.error.message.startswith(TIMEOUT_MESSAGE):
                raise not_answered(wait) from None
            reason = CONNECTION_CLOSED if code == types.CONNECTION_CLOSED else ANSWERED_WITH_ERROR
            raise RootsUnavailable(reason) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise RootsUnavailable(CONNECTION_CLOSED) from None
        except ValidationError:
            raise InvalidRootsAnswer(NOT_A_LIST_ROOTS_RESULT) from None
        return raw.model_extra or {}


# ------------------------------------------------------------------------------------------- finding things


def lowlevel_server_of(server: Any) -> Server[Any, Any]:
    """The lowlevel ``Server`` of a lowlevel server or a FastMCP 1.x app (``mcp.server.fastmcp.FastMCP``)."""
    if isinstance(server, Server):
        return server
    inner = getattr(server, "_mcp_server", None)  # FastMCP 1.x (and FastMCP 2 on mcp 1.x): private, pinned
    if isinstance(inner, Server):
        return inner
    raise TypeError("expected an mcp lowlevel Server or a FastMCP app (mcp.server.fastmcp.FastMCP)")


def request_context_of(context: Any) -> RequestContext[Any, Any, Any] | None:
    """The lowlevel request context of ``context`` (a ``RequestContext``, a FastMCP ``Context``, or ``None`` for
    the request being handled); ``None`` outside a request."""
    if isinstance(context, RequestContext):
        return context
    if context is None:
        try:
            return request_ctx.get()
        except LookupError:
            return None
    try:
        inner = context.request_context  # FastMCP 1.x Context: public; raises outside a request
    except Exception:
        return None
    return inner if isinstance(inner, RequestContext) else None


def link_of(context: Any) -> Link1 | None:
    """The handshake link of a request on a server :func:`wire` prepared (``None`` if it is not one)."""
    rctx = request_context_of(context)
    connection = CONNECTION.get()
    if rctx is None or connection is None or not isinstance(rctx.session, ServerSession):
        return None
    if connection.session is None:
        connection.session = rctx.session  # a notification's refresh needs it: 1.x hands notifications no session
    return Link1(connection, rctx.session, rctx.request_id)


def notification_link() -> Link1 | None:
    """The link of the connection a notification arrived on (its handler runs inside that connection)."""
    connection = CONNECTION.get()
    return None if connection is None else Link1(connection, connection.session, None)


# ---------------------------------------------------------------------------------------------------- wiring

_WIRED: weakref.WeakSet[Server[Any, Any]] = weakref.WeakSet()


def wire(server: Server[Any, Any]) -> None:
    """Prepare ``server`` for rootbound once: the per-connection lifespan and the guarded request handlers."""
    guard_handlers(server)
    if server in _WIRED:
        return
    _WIRED.add(server)
    original = server.lifespan

    @contextlib.asynccontextmanager
    async def lifespan(app: Server[Any, Any]) -> AsyncIterator[Any]:
        guard_handlers(server)  # handlers registered after install (``@server.call_tool()`` later)
        connection = Connection1()
        token = CONNECTION.set(connection)
        try:
            async with original(app) as value:
                yield value
        finally:
            connection.close()
            with contextlib.suppress(ValueError):  # left in another context than entered: nothing to reset
                CONNECTION.reset(token)

    server.lifespan = lifespan


Handler = Callable[[Any], Awaitable[Any]]


class _Guarded:
    """A request handler with a per-request :class:`Refusal`, giving rootbound's errors their 2.x wire form."""

    __slots__ = ("handler", "tool")

    def __init__(self, handler: Handler, tool: bool) -> None:
        self.handler = handler
        self.tool = tool

    async def __call__(self, request: Any) -> Any:
        refusal = Refusal()
        token = REFUSAL.set(refusal)
        try:
            result = await self.handler(request)
        except RootsError as error:  # a lowlevel handler that lets it through
            if self.tool:
                return tool_failure(error)
            raise mcp_error(error) from None
        except McpError:
            raise
        except Exception as error:  # FastMCP 1.x re-raises e.g. "Error reading resource URI: " + it
            refused = refusal.error
            if refused is None or not _names(str(error), str(refused)):
                raise
            raise (mcp_error(refused) if isinstance(refused, RootsError) else refused) from None
        finally:
            REFUSAL.reset(token)
        refused = refusal.error
        if refused is None or not self.tool or not is_error_result(result) or not _shows(result, str(refused)):
            return result
        if isinstance(refused, RootsError):
            return tool_failure(refused)
        raise refused  # the -32021 refusal: a JSON-RPC error, as on mcp 2.x


def guard_handlers(server: Server[Any, Any]) -> None:
    """Wrap every request handler not wrapped yet (idempotent)."""
    for request_type, handler in list(server.request_handlers.items()):
        if not isinstance(handler, _Guarded):
            server.request_handlers[request_type] = _Guarded(handler, request_type is types.CallToolRequest)


def _shows(result: Any, message: str) -> bool:
    """Whether an ``isError`` result is the framework's rendering of the error whose text is ``message``
    (lowlevel: ``str(error)``; FastMCP 1.x: "Error executing tool NAME: " + it) — not the tool's own text."""
    root = getattr(result, "root", result)
    content = getattr(root, "content", None)
    if not content or not isinstance(content[0], types.TextContent):
        return False
    return _names(content[0].text, message)


def _names(text: str, message: str) -> bool:
    return text == message or text.endswith(": " + message)


def tool_failure(error: RootsError) -> types.ServerResult:
    """A ``tools/call`` result with ``isError`` and the error's fixed text: a denial the model can read."""
    text = types.TextContent(type="text", text=str(error))
    return types.ServerResult(types.CallToolResult(content=[text], isError=True))
