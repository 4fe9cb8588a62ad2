"""RootsProvider across live sessions: bare ClientSession routes, shared providers, dead sessions, error answers."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp import Client, MCPError
from rootbound import path_to_uri
from rootbound.mcp.client import RootsProvider
from tests.fixtures.recording_server import (
    LIST_CHANGED,
    Recorder,
    build_server,
    count,
    declared_capabilities,
    declared_in_frames,
)
from tests.helpers.mcp_client import bare_session, fetch_roots, remote_snapshot, stdio_params, wait_until

pytestmark = pytest.mark.anyio


def _uris(answer: Any) -> list[str]:
    return [root["uri"] for root in answer["roots"]]


async def test_bare_session_handshake(tmp_path: Path) -> None:
    """The documented bare route: ClientSession(read, write, **provider.session_kwargs()) + initialize()."""
    recorder = Recorder()
    provider = RootsProvider([tmp_path / "one"], coalesce=0.02)
    with anyio.fail_after(10):
        async with bare_session(recorder, provider) as session:
            await session.initialize()
            result = await session.call_tool("fetch_roots", {})
            assert _uris(json.loads(result.content[0].text)) == [path_to_uri(tmp_path / "one")]  # type: ignore[union-attr]
            await provider.set_roots([tmp_path / "two"])
            await provider.add(tmp_path / "three")
            await provider.flush()
            await wait_until(lambda: _has(recorder, LIST_CHANGED))
            result = await session.call_tool("fetch_roots", {})
            assert _uris(json.loads(result.content[0].text)) == [  # type: ignore[union-attr]
                path_to_uri(tmp_path / "two"),
                path_to_uri(tmp_path / "three"),
            ]
            assert provider.notifications_sent(session) == 1
    messages = recorder.snapshot()["messages"]
    assert declared_capabilities(messages) == [("initialize", {"roots": {"listChanged": True}})]
    assert count(messages, LIST_CHANGED) == 1


async def test_bare_session_2026_drives_mrtr_through_dispatch_input_request(tmp_path: Path) -> None:
    """Bare route, 2026-07-28: discover(), then answer input requests with session.dispatch_input_request."""
    recorder = Recorder()
    provider = RootsProvider([tmp_path / "m"])
    with anyio.fail_after(10):
        async with bare_session(recorder, provider) as session:
            await session.discover()
            assert session.protocol_version in MODERN_PROTOCOL_VERSIONS
            first = await session.call_tool("fetch_roots", {}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            assert first.input_requests is not None
            responses: dict[str, Any] = {}
            for key, request in first.input_requests.items():
                context = ClientRequestContext(session=session, request_id=key)
                response = await session.dispatch_input_request(context, request)
                assert not isinstance(response, types.ErrorData)
                responses[key] = response
            await provider.set_roots([tmp_path / "n"])  # takes effect for the next answer; no notification here
            final = await session.call_tool(
                "fetch_roots", {}, input_responses=responses, request_state=first.request_state
            )
            assert isinstance(final, types.CallToolResult)
            assert _uris(json.loads(final.content[0].text)) == [path_to_uri(tmp_path / "m")]  # type: ignore[union-attr]
            await provider.flush()
            assert provider.notifications_sent(session) == 0
    messages = recorder.snapshot()["messages"]
    assert {json.dumps(caps) for _, caps in declared_capabilities(messages)} == {'{"roots": {}}'}
    assert count(messages, LIST_CHANGED) == 0


async def _has(recorder: Recorder, method: str, n: int = 1) -> bool:
    return count(recorder.snapshot()["messages"], method) >= n


async def test_one_provider_many_sessions(tmp_path: Path) -> None:
    """Every declaring handshake session gets one notification per burst; the 2026-07-28 one gets none."""
    provider = RootsProvider([tmp_path], coalesce=0.05)
    recorders = [Recorder() for _ in range(4)]
    modes = ["legacy", "legacy", "legacy", "2026-07-28"]
    with anyio.fail_after(15):
        async with (
            Client(build_server(recorders[0]), mode=modes[0], **provider.client_kwargs()) as c0,
            Client(build_server(recorders[1]), mode=modes[1], **provider.client_kwargs()) as c1,
            Client(build_server(recorders[2]), mode=modes[2], **provider.client_kwargs()) as c2,
            Client(build_server(recorders[3]), mode=modes[3], **provider.client_kwargs()) as c3,
        ):
            clients = [c0, c1, c2, c3]
            assert len(provider.sessions()) == 4
            for round_ in (1, 2):
                for i in range(5):
                    await provider.add(tmp_path / f"r{round_}-{i}")
                await provider.flush()
                for recorder in recorders[:3]:
                    await wait_until(lambda r=recorder, n=round_: _has(r, LIST_CHANGED, n))  # type: ignore[misc]
            await anyio.sleep(0.15)
            for client in clients:
                answer = await fetch_roots(client)
                assert _uris(answer)[-1] == path_to_uri(tmp_path / "r2-4")
            sent = [provider.notifications_sent(c.session) for c in clients]
    assert sent == [2, 2, 2, 0]
    assert [count(r.snapshot()["messages"], LIST_CHANGED) for r in recorders] == [2, 2, 2, 0]


async def test_dead_sessions_are_dropped(tmp_path: Path) -> None:
    provider = RootsProvider([tmp_path], coalesce=0.01)
    recorder = Recorder()
    with anyio.fail_after(10):
        client = Client(build_server(recorder), mode="legacy", **provider.client_kwargs())
        async with client:
            session = client.session
            assert provider.sessions() == [session]
        await provider.add(tmp_path / "after")  # the connection is gone: nothing is sent, nothing raises
        await provider.flush()
        assert provider.notifications_sent(session) == 0
        assert provider.sessions() == []
        del session, client
        gc.collect()
        assert len(provider._links) == 0
    assert count(recorder.snapshot()["messages"], LIST_CHANGED) == 0


async def test_notify_false_declares_false_and_stays_silent(tmp_path: Path) -> None:
    provider = RootsProvider([tmp_path], notify=False, coalesce=0.01)
    recorder = Recorder()
    with anyio.fail_after(10):
        async with Client(build_server(recorder), mode="legacy", **provider.client_kwargs()) as client:
            await provider.set_roots([tmp_path / "new"])
            await provider.flush()
            await anyio.sleep(0.1)
            assert _uris(await fetch_roots(client)) == [path_to_uri(tmp_path / "new")]
    messages = recorder.snapshot()["messages"]
    assert declared_capabilities(messages) == [("initialize", {"roots": {"listChanged": False}})]
    assert count(messages, LIST_CHANGED) == 0


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_no_source_no_capability(mode: str) -> None:
    """No roots source: no ``roots`` key on the wire in either era; a roots/list anyway gets -32601."""
    provider = RootsProvider()
    recorder = Recorder()
    with anyio.fail_after(10):
        async with Client(build_server(recorder), mode=mode, **provider.client_kwargs()) as client:
            if mode == "legacy":
                result = await client.call_tool("fetch_roots", {})
                assert result.is_error
            else:
                with pytest.raises(MCPError) as caught:
                    await client.call_tool("fetch_roots", {})
                assert caught.value.code == -32601
    snap = recorder.snapshot()
    declared = declared_capabilities(snap["messages"])
    assert declared
    assert all(caps == {} for _, caps in declared), declared
    if mode == "legacy":
        assert snap["answers"] == [{"error": {"code": -32601, "message": "Roots not supported"}}]


async def test_handler_failure_reaches_the_server_as_a_generic_error() -> None:
    """Handshake era over a real stdio subprocess: the raw error frame is generic, the secret never leaves."""

    def handler(ctx: ClientRequestContext) -> list[str]:
        raise RuntimeError("SECRET-/home/alice")

    provider = RootsProvider(handler=handler)
    with anyio.fail_after(20):
        async with Client(stdio_params(), mode="legacy", **provider.client_kwargs()) as client:
            result = await client.call_tool("fetch_roots", {})
            assert result.is_error
            snap = await remote_snapshot(client)
    assert snap["answers"] == [{"error": {"code": -32603, "message": "Internal error"}}]
    errors = [json.loads(f) for f in snap["frames"] if "error" in json.loads(f)]
    assert [e["error"] for e in errors] == [{"code": -32603, "message": "Internal error"}]
    assert not any("SECRET" in frame for frame in snap["frames"])
    assert declared_in_frames(snap["frames"]) == [("initialize", {"roots": {"listChanged": True}})]


async def test_handler_failure_in_mrtr_stops_the_call() -> None:
    """2026-07-28: there is no error channel for an input request; the client stops and never retries."""
    provider = RootsProvider(handler=lambda ctx: 42)  # type: ignore[arg-type, return-value]
    recorder = Recorder()
    with anyio.fail_after(10):
        async with Client(build_server(recorder), mode="2026-07-28", **provider.client_kwargs()) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("fetch_roots", {})
    assert caught.value.code == -32603
    assert caught.value.error.message == "Internal error"
    calls = [m for m in recorder.snapshot()["messages"] if m["method"] == "tools/call"]
    assert len(calls) == 1  # no retry carrying inputResponses


async def test_check_exists_on_the_wire(tmp_path: Path) -> None:
    live, dead = tmp_path / "live", tmp_path / "dead"
    live.mkdir()
    dead.mkdir()
    provider = RootsProvider([live, dead], check_exists=True)
    with anyio.fail_after(10):
        async with Client(build_server(Recorder()), mode="2026-07-28", **provider.client_kwargs()) as client:
            assert _uris(await fetch_roots(client)) == [path_to_uri(live), path_to_uri(dead)]
            dead.rmdir()
            assert _uris(await fetch_roots(client)) == [path_to_uri(live)]
