"""Pins for every private SDK attribute and SDK constant rootbound relies on, both sides, in one place.

Server side: ``rootbound.mcp._sdk_server``; client side: ``rootbound.mcp._sdk_client``; plus the protocol
constants the SDK-free core (``rootbound.core.mrtr``) restates. If an SDK release moves or changes one of these, this
file fails first and says which assumption broke, before any roots behaviour silently degrades.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import PurePosixPath
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
import pytest
from fastmcp import Context as FastMCPContext
from fastmcp import FastMCP
from hypothesis import given
from hypothesis import strategies as st
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.message import SessionMessage
from mcp_types._types import CLIENT_CAPABILITIES_META_KEY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from mcp import Client
from rootbound import InvalidPath, path_to_uri
from rootbound.core.mrtr import (
    CAPABILITIES_META,
    INPUT_ROUND_VERSIONS,
    LIST_CHANGED,
    ROOTS_METHOD,
    era_of,
    roots_input_request,
)
from rootbound.mcp import _sdk_client
from rootbound.mcp._sdk_server import connection_of, lowlevel_server_of, request_context_of
from rootbound.mcp.client import RootsProvider
from tests.fixtures.recording_server import Recorder, declared_capabilities
from tests.helpers.mcp_client import bare_session

pytestmark = pytest.mark.anyio


# -- the core's protocol constants match the SDK's -----------------------------------------------------------


def test_pin_eras_match_the_sdk_version_lists() -> None:
    assert set(INPUT_ROUND_VERSIONS) == set(MODERN_PROTOCOL_VERSIONS)
    assert all(era_of(version) == "2026-07-28" for version in MODERN_PROTOCOL_VERSIONS)
    assert all(era_of(version) == "handshake" for version in HANDSHAKE_PROTOCOL_VERSIONS)


def test_pin_method_names_and_capabilities_meta_key() -> None:
    assert types.ListRootsRequest().method == ROOTS_METHOD
    assert types.RootsListChangedNotification().method == LIST_CHANGED
    assert (
        types.ListRootsRequest.model_validate(roots_input_request()).model_dump(
            by_alias=True, mode="json", exclude_none=True
        )
        == roots_input_request()
    )
    assert CAPABILITIES_META == CLIENT_CAPABILITIES_META_KEY


# -- server side: rootbound.mcp._sdk_server ------------------------------------------------------------------


async def test_connection_is_stable_per_connection_and_has_state_and_exit_stack() -> None:
    # The objects themselves, never their id(): an id() of a freed object can be reused by the next one.
    seen: list[tuple[Connection, object]] = []
    closed: list[Connection] = []

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        connection = connection_of(ctx)
        assert isinstance(connection, Connection)
        assert isinstance(connection.state, dict)
        assert isinstance(connection.exit_stack, AsyncExitStack)
        if "pinned" not in connection.state:
            connection.state["pinned"] = True
            connection.exit_stack.callback(closed.append, connection)
        seen.append((connection, ctx.session))
        return types.CallToolResult(content=[])

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema={"type": "object"}) for n in "ab"])

    server: Server[Any] = Server("pins", on_list_tools=list_tools, on_call_tool=call_tool)
    async with Client(server, mode="legacy") as client:
        await client.call_tool("a", {})
        await client.call_tool("b", {})
        assert closed == []
    (first, first_session), (second, second_session) = seen
    assert first is second  # one Connection for the whole handshake connection...
    assert first_session is not second_session  # ...while ServerSession is rebuilt per request (never key on it)
    assert len(closed) == 1 and closed[0] is first  # and its exit_stack unwinds when the connection closes


def test_lowlevel_server_of_each_flavour() -> None:
    lowlevel: Server[Any] = Server("pins")
    assert lowlevel_server_of(lowlevel) is lowlevel
    mcpserver = MCPServer("pins")
    assert isinstance(lowlevel_server_of(mcpserver), Server)
    assert lowlevel_server_of(mcpserver).middleware is mcpserver.middleware
    fast = FastMCP("pins")
    assert isinstance(lowlevel_server_of(fast), Server)
    with pytest.raises(TypeError):
        lowlevel_server_of(object())


async def test_request_context_of_framework_contexts() -> None:
    found: list[Any] = []
    mcpserver = MCPServer("pins")

    @mcpserver.tool()
    async def probe(ctx: Context) -> str:
        found.append(request_context_of(ctx))
        return "ok"

    fast = FastMCP("pins")

    @fast.tool
    async def fast_probe(ctx: FastMCPContext) -> str:
        found.append(request_context_of(ctx))
        return "ok"

    async with Client(mcpserver, mode="legacy") as client:
        await client.call_tool("probe", {})
    async with Client(lowlevel_server_of(fast), mode="legacy") as client:
        await client.call_tool("fast_probe", {})
    assert len(found) == 2
    assert all(isinstance(ctx, ServerRequestContext) for ctx in found)
    assert request_context_of(object()) is None


# -- client side: rootbound.mcp._sdk_client ------------------------------------------------------------------


@pytest.fixture
def unconnected() -> Iterator[tuple[anyio.abc.ObjectReceiveStream[object], anyio.abc.ObjectSendStream[object]]]:
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    out_send, out_receive = anyio.create_memory_object_stream[SessionMessage](1)
    yield receive, out_send  # type: ignore[misc]
    for stream in (send, receive, out_send, out_receive):
        stream.close()


async def _callback(context: ClientRequestContext) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[])


def test_pin_sdk_build_capabilities_over_advertises(unconnected: tuple[object, object]) -> None:
    """Pinned SDK behaviour we override: listChanged=True whenever a callback is set, in every era (#871 TODO)."""
    read, write = unconnected
    with_callback = ClientSession(read, write, list_roots_callback=_callback)  # type: ignore[arg-type]
    without = ClientSession(read, write)  # type: ignore[arg-type]
    original = _sdk_client.ORIGINAL_BUILD_CAPABILITIES
    assert list(inspect.signature(original).parameters) == ["self", "version"]
    for version in ("2025-11-25", "2026-07-28"):
        assert original(with_callback, version).roots == types.RootsCapability(list_changed=True)
        assert original(without, version).roots is None


def test_pin_wrapper_installed_once_and_neutral_for_other_sessions(unconnected: tuple[object, object]) -> None:
    read, write = unconnected
    RootsProvider(["/a"])
    _sdk_client.install()
    _sdk_client.install()
    assert _sdk_client.installed()
    assert ClientSession.__dict__["_build_capabilities"].__wrapped__ is _sdk_client.ORIGINAL_BUILD_CAPABILITIES
    plain = ClientSession(read, write, list_roots_callback=_callback)  # type: ignore[arg-type]
    for version in ("2025-11-25", "2026-07-28"):
        assert plain._build_capabilities(version) == _sdk_client.ORIGINAL_BUILD_CAPABILITIES(plain, version)


def test_pin_list_roots_callback_attribute(unconnected: tuple[object, object]) -> None:
    """``_list_roots_callback`` holds the callback we passed, so the provider is found through ``__self__``."""
    read, write = unconnected
    provider = RootsProvider(["/a"])
    session = ClientSession(read, write, **provider.session_kwargs())  # type: ignore[arg-type]
    assert session._list_roots_callback.__self__ is provider  # type: ignore[attr-defined]
    assert _sdk_client.hook_of(session) is provider
    assert _sdk_client.hook_of(ClientSession(read, write, list_roots_callback=_callback)) is None  # type: ignore[arg-type]


async def test_pin_capability_built_by_initialize_discover_and_adopt() -> None:
    """The three SDK call sites of ``_build_capabilities`` (initialize, send_discover, adopt) go through ours."""
    provider = RootsProvider(["/a"])
    recorder = Recorder()
    with anyio.fail_after(10):
        async with bare_session(recorder, provider) as session:
            await session.initialize()
        async with bare_session(recorder, provider) as session:
            await session.discover()  # send_discover + adopt(DiscoverResult)
            await session.list_tools()
    assert declared_capabilities(recorder.snapshot()["messages"]) == [
        ("initialize", {"roots": {"listChanged": True}}),
        ("server/discover", {"roots": {}}),
        ("tools/list", {"roots": {}}),
    ]


async def test_pin_session_task_group() -> None:
    """``_task_group`` is the session's running anyio task group while entered, and refuses tasks after exit."""
    ran = anyio.Event()

    async def job() -> None:
        ran.set()

    with anyio.fail_after(5):
        async with bare_session(Recorder(), None) as session:
            assert isinstance(session._task_group, anyio.abc.TaskGroup)
            assert _sdk_client.spawn(session, job)
            await ran.wait()
        assert not _sdk_client.spawn(session, job)


async def test_pin_notification_route_is_warning_free() -> None:
    """The SDK's helper is deprecated (warns); the typed notification through send_notification does not."""
    with anyio.fail_after(5):
        async with bare_session(Recorder(), None) as session:
            await session.initialize()
            with pytest.warns(MCPDeprecationWarning):
                await session.send_roots_list_changed()
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                await session.send_notification(types.RootsListChangedNotification())


async def test_pin_dispatch_input_request_routes_roots_to_the_callback() -> None:
    provider = RootsProvider(["/pinned"])
    with anyio.fail_after(5):
        async with bare_session(Recorder(), provider) as session:
            context = ClientRequestContext(session=session, request_id="roots")
            response = await session.dispatch_input_request(context, types.ListRootsRequest())
    assert isinstance(response, types.ListRootsResult)
    assert [str(root.uri) for root in response.roots] == ["file:///pinned"]


_segment = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12)


@given(st.lists(_segment, min_size=0, max_size=4))
def test_pin_file_url_keeps_canonical_uris_byte_identical(parts: list[str]) -> None:
    """pydantic's FileUrl must not re-spell a canonical URI (the provider also checks this at answer time)."""
    try:
        uri = path_to_uri(PurePosixPath("/", *parts))
    except InvalidPath:
        return
    dumped = types.ListRootsResult(roots=[types.Root(uri=uri)]).model_dump(mode="json")  # type: ignore[arg-type]
    assert dumped["roots"][0]["uri"] == uri
