"""RootsProvider on a real ``ClientSession`` of the installed SDK (1.x or 2.x) in the handshake era, judged by a raw
JSON-RPC peer (tests/mcp/both/client_harness.py) on what reached the wire: in memory and over a real stdio
subprocess.

The guarantees are the same on both majors: ``initialize`` declares ``roots: {"listChanged": notify}`` (no ``roots``
key without a source; a session with a plain SDK callback gets the SDK's own answer); ``roots/list`` is answered
from the provider's store or handler, byte-exact, with -32601 without a source and a generic -32603 when the
handler fails; a burst of changes sends ONE ``notifications/roots/list_changed`` per declaring session per window,
never before ``notifications/initialized`` and never to a session we did not promise it to.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp import types
from rootbound import Root, path_to_uri
from rootbound.mcp.client import RootsProvider
from tests.mcp.both.client_harness import (
    INITIALIZED,
    LIST_CHANGED,
    Message,
    RawServer,
    count,
    declared_capabilities,
    fetch_roots,
    memory_session,
    remote_records,
    stdio_session,
    wait_until,
)

pytestmark = pytest.mark.anyio


async def _plain_callback(context: Any) -> Any:
    return types.ListRootsResult(roots=[])


async def _roots(server: RawServer) -> Any:
    """Ask the client for its roots (server-initiated ``roots/list``); the raw result or error object."""
    answer = await server.request("roots/list")
    return answer.get("result", answer.get("error"))


def _after_initialized(received: list[Message], method: str) -> bool:
    """Every ``method`` message came after the client's ``notifications/initialized``."""
    methods = [m.get("method") for m in received]
    if method not in methods:
        return True
    return INITIALIZED in methods and methods.index(INITIALIZED) < methods.index(method)


# -- the capability ad ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("notify", [True, False])
async def test_initialize_declares_the_providers_promise(notify: bool) -> None:
    provider = RootsProvider(["/srv/a"], notify=notify)
    with anyio.fail_after(10):
        async with memory_session(dict(provider.session_kwargs())) as (session, server):
            await session.initialize()
            assert provider.sessions() == [session]
        async with memory_session() as (plain, bare):  # the same SDK without a callback: everything but roots
            await plain.initialize()
    declared = declared_capabilities(server.received)
    assert declared == [{**declared_capabilities(bare.received)[0], "roots": {"listChanged": notify}}]


async def test_no_source_no_roots_key_and_minus_32601() -> None:
    provider = RootsProvider()
    with anyio.fail_after(10):
        async with memory_session(dict(provider.session_kwargs())) as (session, server):
            await session.initialize()
            assert await _roots(server) == {"code": -32601, "message": "Roots not supported"}
            await provider.set_roots(["/srv/late"])  # a source from now on: this session was promised nothing
            await provider.flush()
            assert await _roots(server) == {"roots": [{"uri": "file:///srv/late"}]}
            assert provider.notifications_sent(session) == 0
    assert "roots" not in declared_capabilities(server.received)[0]
    assert count(server.received, LIST_CHANGED) == 0


async def test_a_plain_sdk_callback_is_left_alone() -> None:
    """rootbound's class-wide wrapper is installed (a provider exists), yet a session with a plain callback gets
    the SDK's own ``roots: {"listChanged": true}`` and no notifications from anyone."""
    provider = RootsProvider(["/srv/a"], notify=False, coalesce=0.01)
    with anyio.fail_after(10):
        async with memory_session({"list_roots_callback": _plain_callback}) as (session, server):
            await session.initialize()
            await provider.set_roots(["/srv/b"])
            await provider.flush()
            assert await _roots(server) == {"roots": []}
    assert declared_capabilities(server.received)[0]["roots"] == {"listChanged": True}
    assert provider.sessions() == []
    assert count(server.received, LIST_CHANGED) == 0


# -- answers ----------------------------------------------------------------------------------------------------


async def test_static_answers_follow_the_store(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a b", tmp_path / "é", tmp_path / "c"
    provider = RootsProvider([Root.from_path(a, "Alpha"), b, "file://LOCALHOST" + path_to_uri(c)[7:] + "/"])
    with anyio.fail_after(10):
        async with memory_session(dict(provider.session_kwargs())) as (session, server):
            await session.initialize()
            assert await _roots(server) == {
                "roots": [{"uri": path_to_uri(a), "name": "Alpha"}, {"uri": path_to_uri(b)}, {"uri": path_to_uri(c)}]
            }
            await provider.set_roots([a])
            assert await _roots(server) == {"roots": [{"uri": path_to_uri(a)}]}
            await provider.add(c)
            await provider.remove(str(a))
            assert await _roots(server) == {"roots": [{"uri": path_to_uri(c)}]}


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_the_handler_wins_and_gets_the_sdk_context(kind: str) -> None:
    seen: list[Any] = []

    def sync_handler(context: Any) -> list[Any]:
        seen.append(context)
        return [*provider.roots, "/dyn"]

    async def async_handler(context: Any) -> list[Any]:
        return sync_handler(context)

    provider = RootsProvider(["/static"], handler=sync_handler if kind == "sync" else async_handler)
    with anyio.fail_after(10):
        async with memory_session(dict(provider.session_kwargs())) as (session, server):
            await session.initialize()
            assert await _roots(server) == {"roots": [{"uri": "file:///static"}, {"uri": "file:///dyn"}]}
            await provider.set_roots(["/changed"])
            assert await _roots(server) == {"roots": [{"uri": "file:///changed"}, {"uri": "file:///dyn"}]}
    assert [context.session for context in seen] == [session, session]
    assert all(context.request_id is not None for context in seen)


@pytest.mark.parametrize("expose", [False, True])
async def test_a_failing_handler_is_a_generic_minus_32603(expose: bool) -> None:
    def handler(context: Any) -> list[str]:
        raise RuntimeError("SECRET-/home/alice/.ssh")

    provider = RootsProvider(handler=handler, expose_errors=expose)
    with anyio.fail_after(10):
        async with memory_session(dict(provider.session_kwargs())) as (session, server):
            await session.initialize()
            answer = await _roots(server)
    assert answer["code"] == -32603
    if expose:
        assert "SECRET-/home/alice/.ssh" in answer["message"]
    else:
        assert answer == {"code": -32603, "message": "Internal error"}
        assert "SECRET" not in json.dumps(server.received)


async def test_junk_from_the_handler_is_refused_not_relayed() -> None:
    provider = RootsProvider(handler=lambda context: ["file://evil.example/x"])
    with anyio.fail_after(10):
        async with memory_session(dict(provider.session_kwargs())) as (session, server):
            await session.initialize()
            assert await _roots(server) == {"code": -32603, "message": "Internal error"}
    assert "evil.example" not in json.dumps(server.received)


async def test_check_exists_filters_the_answer(tmp_path: Path) -> None:
    live, dead = tmp_path / "live", tmp_path / "dead"
    live.mkdir()
    dead.mkdir()
    provider = RootsProvider([live, dead], check_exists=True)
    with anyio.fail_after(10):
        async with memory_session(dict(provider.session_kwargs())) as (session, server):
            await session.initialize()
            assert await _roots(server) == {"roots": [{"uri": path_to_uri(live)}, {"uri": path_to_uri(dead)}]}
            dead.rmdir()
            assert await _roots(server) == {"roots": [{"uri": path_to_uri(live)}]}


# -- list_changed -----------------------------------------------------------------------------------------------


async def test_a_burst_is_one_notification_per_session(tmp_path: Path) -> None:
    provider = RootsProvider([tmp_path], coalesce=0.3)  # a window far longer than a burst, even on a loaded machine
    with anyio.fail_after(15):
        async with (
            memory_session(dict(provider.session_kwargs())) as (s1, server1),
            memory_session(dict(provider.session_kwargs())) as (s2, server2),
        ):
            await s1.initialize()
            await s2.initialize()
            assert set(provider.sessions()) == {s1, s2}
            for round_ in (1, 2):
                for i in range(5):
                    await provider.add(tmp_path / f"r{round_}-{i}")
                await provider.flush()
                for server in (server1, server2):
                    await wait_until(lambda s=server, n=round_: count(s.received, LIST_CHANGED) >= n)  # type: ignore[misc]
                assert (await _roots(server1))["roots"][-1] == {"uri": path_to_uri(tmp_path / f"r{round_}-4")}
            await provider.flush()
            sent = [provider.notifications_sent(s1), provider.notifications_sent(s2)]
    assert sent == [2, 2]
    assert [count(server.received, LIST_CHANGED) for server in (server1, server2)] == [2, 2]


async def test_notify_false_stays_silent(tmp_path: Path) -> None:
    provider = RootsProvider([tmp_path], notify=False, coalesce=0.01)
    with anyio.fail_after(10):
        async with memory_session(dict(provider.session_kwargs())) as (session, server):
            await session.initialize()
            await provider.set_roots([tmp_path / "new"])
            await provider.roots_changed()
            await provider.flush()
            assert await _roots(server) == {"roots": [{"uri": path_to_uri(tmp_path / "new")}]}
            await session.send_ping()  # anything already queued reached the peer before the ping's answer
            assert provider.notifications_sent(session) == 0
    assert count(server.received, LIST_CHANGED) == 0


async def test_never_before_the_handshake_completed(tmp_path: Path) -> None:
    """Changes while ``initialize`` is in flight send nothing (the server asks after the handshake anyway); the
    first change after it does."""
    provider = RootsProvider([tmp_path], coalesce=0.01)
    with anyio.fail_after(15):
        async with memory_session(dict(provider.session_kwargs()), hold_initialize=True) as (session, server):
            await provider.set_roots([tmp_path / "before"])  # entered, not initialized
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.initialize)
                await wait_until(lambda: count(server.received, "initialize") == 1)
                await provider.set_roots([tmp_path / "during"])  # the initialize answer is held
                await provider.flush()
                await anyio.sleep(0.05)  # several windows: a premature notification would be queued by now
                assert provider.notifications_sent(session) == 0
                server.release.set()
            assert await _roots(server) == {"roots": [{"uri": path_to_uri(tmp_path / "during")}]}
            assert count(server.received, LIST_CHANGED) == 0
            await provider.set_roots([tmp_path / "after"])
            await provider.flush()
            await wait_until(lambda: count(server.received, LIST_CHANGED) == 1)
    assert _after_initialized(server.received, LIST_CHANGED)
    assert provider.notifications_sent(session) == 1


async def test_roots_changed_notifies_for_a_handler(tmp_path: Path) -> None:
    current = [tmp_path / "one"]
    provider = RootsProvider(handler=lambda context: list(current), coalesce=0.01)
    with anyio.fail_after(10):
        async with memory_session(dict(provider.session_kwargs())) as (session, server):
            await session.initialize()
            current[:] = [tmp_path / "two"]
            await provider.roots_changed()
            await provider.flush()
            await wait_until(lambda: count(server.received, LIST_CHANGED) == 1)
            assert await _roots(server) == {"roots": [{"uri": path_to_uri(tmp_path / "two")}]}


async def test_dead_sessions_are_dropped(tmp_path: Path) -> None:
    provider = RootsProvider([tmp_path], coalesce=0.01)
    with anyio.fail_after(10):
        async with memory_session(dict(provider.session_kwargs())) as (session, server):
            await session.initialize()
            assert provider.sessions() == [session]
        await provider.add(tmp_path / "after")  # the connection is gone: nothing is sent, nothing raises
        await provider.flush()
        assert provider.notifications_sent(session) == 0
        assert provider.sessions() == []
        del session
        gc.collect()
        assert len(provider._links) == 0
    assert count(server.received, LIST_CHANGED) == 0


# -- a framework's wrapper around provider.roots_handler() -------------------------------------------------------


def _framework_callback(handler: Any) -> Any:
    """What fastmcp's ``create_roots_callback`` and mcp-use do: close over a roots function, answer a result."""

    async def callback(context: Any) -> Any:
        return types.ListRootsResult(roots=await handler(context))

    return callback


class _Connector:
    """What mcp-use's connector does: keep the user's callback, hand the session a bound method that delegates."""

    def __init__(self, callback: Any) -> None:
        self._user_list_roots_callback = callback

    async def _internal_list_roots_callback(self, context: Any) -> Any:
        return await self._user_list_roots_callback(context)


def _wrapped(kind: str, provider: RootsProvider) -> Any:
    if kind == "closure-over-roots-handler":  # fastmcp / pydantic-ai with provider.roots_handler()
        return _framework_callback(provider.roots_handler())
    if kind == "closure-over-list-roots":

        async def callback(context: Any) -> Any:
            return await provider.list_roots(context)

        return callback
    return _Connector(provider.list_roots)._internal_list_roots_callback  # mcp-use's list_roots_callback=


@pytest.mark.parametrize("kind", ["closure-over-roots-handler", "closure-over-list-roots", "delegating-connector"])
@pytest.mark.parametrize("notify", [True, False])
async def test_a_framework_wrapper_around_the_provider_is_recognised(tmp_path: Path, notify: bool, kind: str) -> None:
    provider = RootsProvider([tmp_path / "a"], notify=notify, coalesce=0.01)
    with anyio.fail_after(10):
        async with memory_session({"list_roots_callback": _wrapped(kind, provider)}) as (session, server):
            await session.initialize()
            assert provider.sessions() == [session]
            assert await _roots(server) == {"roots": [{"uri": path_to_uri(tmp_path / "a")}]}
            await provider.set_roots([tmp_path / "b"])
            await provider.flush()
            if notify:
                await wait_until(lambda: count(server.received, LIST_CHANGED) == 1)
            assert await _roots(server) == {"roots": [{"uri": path_to_uri(tmp_path / "b")}]}
    assert declared_capabilities(server.received)[0]["roots"] == {"listChanged": notify}
    assert count(server.received, LIST_CHANGED) == provider.notifications_sent(session) == int(notify)


async def test_a_connector_with_its_own_roots_is_not_mistaken_for_a_provider() -> None:
    """An object that keeps something else (a plain callback, a roots list) is the SDK's business."""
    RootsProvider(["/a"])
    connector = _Connector(_plain_callback)
    connector.roots = [types.Root.model_validate({"uri": "file:///x"})]  # type: ignore[attr-defined]
    with anyio.fail_after(10):
        async with memory_session({"list_roots_callback": connector._internal_list_roots_callback}) as (s, server):
            await s.initialize()
    assert declared_capabilities(server.received)[0]["roots"] == {"listChanged": True}


# -- a real stdio subprocess --------------------------------------------------------------------------------------


async def test_stdio_subprocess_wire(tmp_path: Path) -> None:
    """Raw frames: the capability as sent, the answers verbatim, one list_changed after ``initialized``."""
    a, b, d = tmp_path / "a b", tmp_path / "é", tmp_path / "d"
    provider = RootsProvider([Root.from_path(a, "Alpha"), b], coalesce=0.3)
    with anyio.fail_after(30):
        async with stdio_session(dict(provider.session_kwargs())) as session:
            await session.initialize()
            first = await fetch_roots(session)
            await provider.set_roots([b])
            await provider.add(Root.from_path(d, "Delta"))
            await provider.flush()
            second = await fetch_roots(session)

            async def notified() -> bool:
                return count((await remote_records(session))["received"], LIST_CHANGED) >= 1

            await wait_until(notified)
            await provider.flush()
            records = await remote_records(session)
            sent = provider.notifications_sent(session)
    assert first == {"roots": [{"uri": path_to_uri(a), "name": "Alpha"}, {"uri": path_to_uri(b)}]}
    assert second == {"roots": [{"uri": path_to_uri(b)}, {"uri": path_to_uri(d), "name": "Delta"}]}
    frames = [json.loads(frame) for frame in records["frames"]]
    initialize = next(f for f in frames if f.get("method") == "initialize")
    assert initialize["params"]["capabilities"]["roots"] == {"listChanged": True}
    answers = [
        (text, f["result"]) for text, f in zip(records["frames"], frames, strict=True) if "roots" in f.get("result", {})
    ]
    assert [answer for _, answer in answers] == [first, second]
    for text, answer in answers:
        for root in answer["roots"]:
            assert root["uri"] in text  # the canonical URI went out verbatim, not re-spelled
    assert sum(1 for f in frames if f.get("method") == LIST_CHANGED) == sent == 1
    assert _after_initialized(frames, LIST_CHANGED)


async def test_stdio_handler_failure_leaks_nothing() -> None:
    def handler(context: Any) -> list[str]:
        raise RuntimeError("SECRET-/home/alice")

    provider = RootsProvider(handler=handler)
    with anyio.fail_after(30):
        async with stdio_session(dict(provider.session_kwargs())) as session:
            await session.initialize()
            answer = await fetch_roots(session)
            records = await remote_records(session)
    assert answer == {"code": -32603, "message": "Internal error"}
    assert not any("SECRET" in frame for frame in records["frames"])
