"""Pins for ``rootbound.mcp._sdk1_client``: the mcp 1.x client-side internals it uses, and the SDK's own unwrapped
behaviour it corrects. If a 1.x release moves any of them this file fails first, naming the assumption, before any
roots behaviour silently degrades (the 2.x counterpart is tests/mcp/test_sdk_pins.py)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession, _default_list_roots_callback
from mcp.shared.context import RequestContext
from mcp.shared.message import SessionMessage
from mcp.shared.session import BaseSession

from mcp import types
from rootbound.mcp import _sdk1_client
from rootbound.mcp.client import RootsProvider
from tests.mcp.both.client_harness import LIST_CHANGED, count, declared_capabilities, memory_session

pytestmark = pytest.mark.anyio


async def _plain_callback(context: RequestContext[ClientSession, Any]) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[])


@pytest.fixture
def streams() -> Iterator[tuple[Any, Any]]:
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    out_send, out_receive = anyio.create_memory_object_stream[SessionMessage](1)
    yield receive, out_send
    for stream in (send, receive, out_send, out_receive):
        stream.close()


# -- the SDK's own behaviour, unwrapped ---------------------------------------------------------------------------


def test_pin_initialize_builds_roots_inline_with_list_changed_true() -> None:
    """What rootbound corrects: 1.x declares ``listChanged: true`` for any callback, with no builder to wrap."""
    source = inspect.getsource(_sdk1_client.ORIGINAL_INITIALIZE)
    assert "types.RootsCapability(listChanged=True)" in source
    assert "self._list_roots_callback is not _default_list_roots_callback" in source
    assert "types.InitializeRequest(" in source and "self.send_request(" in source
    assert not hasattr(ClientSession, "_build_capabilities")


async def test_pin_unwrapped_declarations_on_the_wire() -> None:
    """A plain callback gets the SDK's ``{"listChanged": true}``; no callback, no ``roots`` key (through the
    installed wrapper, which must pass both through untouched)."""
    RootsProvider(["/a"])  # installs the wrappers
    assert _sdk1_client.installed()
    with anyio.fail_after(10):
        async with memory_session({"list_roots_callback": _plain_callback}) as (session, server):
            await session.initialize()
        async with memory_session() as (bare, bare_server):
            await bare.initialize()
    assert declared_capabilities(server.received)[0]["roots"] == {"listChanged": True}
    assert "roots" not in declared_capabilities(bare_server.received)[0]
    assert _sdk1_client.negotiated(session) is None  # not a provider's session: nothing recorded
    assert _sdk1_client.hook_of(session) is None


def test_pin_send_request_and_initialize_are_what_we_wrap() -> None:
    RootsProvider(["/a"])
    _sdk1_client.install()
    _sdk1_client.install()  # idempotent
    assert _sdk1_client.installed()
    assert _sdk1_client.ORIGINAL_SEND_REQUEST is BaseSession.send_request  # ClientSession inherits it
    assert ClientSession.__dict__["send_request"].__wrapped__ is BaseSession.send_request
    assert ClientSession.__dict__["initialize"].__wrapped__ is _sdk1_client.ORIGINAL_INITIALIZE
    parameters = list(inspect.signature(BaseSession.send_request).parameters)
    assert parameters[:3] == ["self", "request", "result_type"]
    assert list(inspect.signature(_sdk1_client.ORIGINAL_INITIALIZE).parameters) == ["self"]
    assert inspect.signature(_sdk1_client.ORIGINAL_INITIALIZE).return_annotation in (
        "types.InitializeResult",
        types.InitializeResult,
    )


def test_pin_the_initialize_request_shape() -> None:
    """The wrapper rewrites ``ClientRequest.root.params.capabilities.roots`` (camelCase ``listChanged``)."""
    request = types.ClientRequest(
        types.InitializeRequest(
            params=types.InitializeRequestParams(
                protocolVersion=types.LATEST_PROTOCOL_VERSION,
                capabilities=types.ClientCapabilities(roots=types.RootsCapability(listChanged=True)),
                clientInfo=types.Implementation(name="x", version="0"),
            )
        )
    )
    assert isinstance(request.root, types.InitializeRequest)
    assert request.root.params.capabilities.roots == types.RootsCapability.model_validate({"listChanged": True})
    rewritten = types.ClientRequest(_sdk1_client._with_roots(request.root, None))
    dumped = rewritten.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert "roots" not in dumped["params"]["capabilities"]
    assert dumped["method"] == "initialize"
    assert dumped["params"]["protocolVersion"] == types.LATEST_PROTOCOL_VERSION
    assert types.LATEST_PROTOCOL_VERSION == "2025-11-25"  # handshake era: 1.x has nothing later


def test_pin_list_roots_callback_attribute(streams: tuple[Any, Any]) -> None:
    read, write = streams
    provider = RootsProvider(["/a"])
    session = ClientSession(read, write, **provider.session_kwargs())
    assert session._list_roots_callback.__self__ is provider  # type: ignore[attr-defined]
    assert _sdk1_client.hook_of(session) is provider
    assert ClientSession(read, write)._list_roots_callback is _default_list_roots_callback
    assert _sdk1_client.hook_of(ClientSession(read, write, list_roots_callback=_plain_callback)) is None


async def test_pin_the_session_task_group() -> None:
    """``_task_group`` exists once the session is entered and refuses new tasks after it exited."""
    ran = anyio.Event()

    async def job() -> None:
        ran.set()

    with anyio.fail_after(10):
        async with memory_session() as (session, _server):
            assert _sdk1_client.spawn(session, job)
            await ran.wait()
        assert not _sdk1_client.spawn(session, job)


async def test_pin_no_public_negotiated_version() -> None:
    """1.x sessions keep neither the negotiated version nor an initialized flag: rootbound records both."""
    provider = RootsProvider(["/a"])
    with anyio.fail_after(10):
        async with memory_session(dict(provider.session_kwargs())) as (session, _server):
            assert _sdk1_client.negotiated(session) is None
            result = await session.initialize()
            assert _sdk1_client.negotiated(session) == result.protocolVersion == "2025-11-25"
    assert not hasattr(session, "protocol_version") and not hasattr(session, "initialize_result")


async def test_pin_list_changed_notification_and_send_roots_list_changed() -> None:
    assert types.RootsListChangedNotification().method == LIST_CHANGED
    source = inspect.getsource(ClientSession.send_roots_list_changed)
    assert "types.ClientNotification(types.RootsListChangedNotification())" in source
    with anyio.fail_after(10):
        async with memory_session() as (session, server):
            await session.initialize()
            await session.send_notification(types.ClientNotification(types.RootsListChangedNotification()))
            await session.send_ping()
    assert count(server.received, LIST_CHANGED) == 1


@pytest.mark.parametrize("wrapped", [True, False])
async def test_an_initialize_sent_by_hand_is_rewritten_too(wrapped: bool) -> None:
    """``send_request`` with an ``InitializeRequest``, bare or in a ``ClientRequest``: the provider's ad either way."""
    provider = RootsProvider(["/a"], notify=False)
    initialize = types.InitializeRequest(
        params=types.InitializeRequestParams(
            protocolVersion="2025-06-18",
            capabilities=types.ClientCapabilities(roots=types.RootsCapability(listChanged=True)),
            clientInfo=types.Implementation(name="by-hand", version="0"),
        )
    )
    request: Any = types.ClientRequest(initialize) if wrapped else initialize
    with anyio.fail_after(10):
        async with memory_session(dict(provider.session_kwargs())) as (session, server):
            result = await session.send_request(request, types.InitializeResult)
    assert result.protocolVersion == "2025-06-18"
    assert declared_capabilities(server.received) == [{"roots": {"listChanged": False}}]
    assert provider.sessions() == [session]
    assert _sdk1_client.negotiated(session) is None  # initialize() was not called: no list_changed will be sent
