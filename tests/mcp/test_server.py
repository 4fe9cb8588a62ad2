"""RootsService end to end on the real SDK: in-memory, a stdio subprocess and Streamable HTTP on 127.0.0.1.

``roots/list`` requests are counted on the client side (``ClientRoots.calls``), so caching, single flight and
debounce are observed where they matter: on the wire.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.server.lowlevel import Server

from mcp import Client, MCPError
from rootbound.mcp import RootsService
from tests.fixtures.roots_server import build_server
from tests.helpers.client_roots import ClientRoots
from tests.helpers.mcp_server import TRANSPORTS, connect, first_text, http_app
from tests.helpers.uvicorn_serve import serve_http

pytestmark = pytest.mark.anyio

DEBOUNCE = 0.05
# A burst must arrive inside one debounce window for "one refresh per burst" to be the expected outcome; 50 HTTP
# notifications on a loaded 2-core machine can take longer than 50 ms, so the burst test uses a wider window.
BURST_DEBOUNCE = 1.0


class Env:
    """One server reachable over one transport; ``service`` is None for the stdio subprocess."""

    def __init__(
        self,
        transport: str,
        service: RootsService | None,
        server: Server[Any],
        base: str | None,
        debounce: float = DEBOUNCE,
    ) -> None:
        self.debounce = debounce
        self.transport = transport
        self.service = service
        self.server = server
        self.base = base

    def connect(
        self,
        mode: str = "legacy",
        roots: ClientRoots | None = None,
        *,
        path: str = "/mcp",
        stdio_args: Sequence[str] = (),
    ) -> contextlib.AbstractAsyncContextManager[Client]:
        args = ("--debounce", str(self.debounce), *stdio_args)
        return connect(
            self.transport, self.server, mode=mode, roots=roots, stdio_args=args, http_base=self.base, path=path
        )


@contextlib.asynccontextmanager
async def make_env(transport: str, debounce: float = DEBOUNCE, **service_kwargs: Any) -> AsyncIterator[Env]:
    service = RootsService(debounce=debounce, warn_deprecated=False, **service_kwargs)
    server = build_server(service)
    if transport == "http":
        async with serve_http(http_app(server)) as base:
            yield Env(transport, service, server, base, debounce)
    else:
        yield Env(transport, None if transport == "stdio" else service, server, None, debounce)


@pytest.fixture(params=TRANSPORTS)
async def env(request: pytest.FixtureRequest) -> AsyncIterator[Env]:
    async with make_env(request.param) as value:
        yield value


async def call_text(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, first_text(result)
    return first_text(result)


async def notify_changed(client: Client) -> None:
    await client.session.send_notification(types.RootsListChangedNotification())


# --------------------------------------------------------------------------------------- handshake era


async def test_handshake_roots_are_fetched_once_and_cached(env: Env) -> None:
    roots = ClientRoots(["file:///work/a", "file:///work/b/"])
    async with env.connect("legacy", roots) as client:
        for _ in range(5):
            assert await call_text(client, "roots") == "file:///work/a\nfile:///work/b"
    assert roots.calls == 1


async def test_handshake_single_flight_100_concurrent_calls_send_one_request(env: Env) -> None:
    roots = ClientRoots()
    roots.delay = 0.2  # every call arrives while the first roots/list is still in flight
    async with env.connect("legacy", roots) as client:
        results: list[str] = []

        async def one() -> None:
            results.append(await call_text(client, "roots"))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for _ in range(100):
                    tg.start_soon(one)
    assert results == ["file:///work/a"] * 100
    assert roots.calls == 1


async def test_single_flight_followers_get_the_leaders_failure() -> None:
    async with make_env("memory") as env:
        roots = ClientRoots(["file://remote.example/share"])  # the SDK client lets a host through; we do not
        roots.delay = 0.2
        async with env.connect("legacy", roots) as client:
            results: list[types.CallToolResult] = []

            async def one() -> None:
                results.append(await client.call_tool("roots", {}))

            async with anyio.create_task_group() as tg:
                for _ in range(5):
                    tg.start_soon(one)
        assert roots.calls == 1
        assert [(r.is_error, first_text(r)) for r in results] == [
            (True, "invalid roots answer (root uri is not a valid local file URI)")
        ] * 5


async def test_handshake_without_roots_capability_is_32021(env: Env) -> None:
    async with env.connect("legacy", None) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("roots", {})
    assert info.value.code == -32021
    assert info.value.data == {"requiredCapabilities": {"roots": {}}}


async def test_list_changed_invalidates_immediately_and_refetches(env: Env) -> None:
    roots = ClientRoots(["file:///work/a"])
    async with env.connect("legacy", roots) as client:
        assert await call_text(client, "roots") == "file:///work/a"
        roots.uris = ["file:///work/c"]
        await notify_changed(client)
        # No sleep: the very next call must not see the old set.
        assert await call_text(client, "roots") == "file:///work/c"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_debounce_refreshes_once_per_burst(transport: str) -> None:
    roots = ClientRoots(["file:///work/a"])
    async with make_env(transport, debounce=BURST_DEBOUNCE) as env, env.connect("legacy", roots) as client:
        await call_text(client, "roots")
        assert roots.calls == 1
        for _ in range(50):
            await notify_changed(client)
        await anyio.sleep(BURST_DEBOUNCE * 2)
        assert roots.calls == 2  # one trailing refresh for the whole burst
        assert await call_text(client, "roots") == "file:///work/a"
        assert roots.calls == 2  # the refresh filled the cache


async def test_failed_refresh_leaves_cache_empty_never_the_old_set(env: Env) -> None:
    roots = ClientRoots(["file:///work/a", "file:///work/b"])
    async with env.connect("legacy", roots) as client:
        assert await call_text(client, "check", path="/work/b/x") == "inside"
        roots.fail = True
        await notify_changed(client)
        await anyio.sleep(DEBOUNCE * 6)  # the refresh runs and fails
        result = await client.call_tool("check", {"path": "/work/b/x"})
        assert result.is_error
        assert "roots are unavailable" in first_text(result)
        roots.fail = False
        roots.uris = ["file:///work/a"]
        assert await call_text(client, "check", path="/work/b/x") == "outside"


async def test_narrowing_200_times_without_sleep(env: Env) -> None:
    """Client declares {A, B}; a call under B is inside; client drops B and notifies; the next call is denied."""
    roots = ClientRoots()
    async with env.connect("legacy", roots) as client:
        with anyio.fail_after(120):
            for _ in range(200):
                roots.uris = ["file:///work/a", "file:///work/b"]
                await notify_changed(client)
                assert await call_text(client, "check", path="/work/b/secret") == "inside"
                roots.uris = ["file:///work/a"]
                await notify_changed(client)
                assert await call_text(client, "check", path="/work/b/secret") == "outside"


async def test_roots_list_timeout_is_a_tool_error_and_server_keeps_serving() -> None:
    async with make_env("memory", timeout=0.3) as env:
        stuck = ClientRoots()
        stuck.hang = True
        async with env.connect("legacy", stuck) as client:
            with anyio.fail_after(10):
                result = await client.call_tool("roots", {})
            assert result.is_error
            assert first_text(result) == "roots are unavailable (the client did not answer roots/list within 0.3 s)"
        good = ClientRoots(["file:///work/ok"])
        async with env.connect("legacy", good) as client:
            assert await call_text(client, "roots") == "file:///work/ok"


async def test_client_error_answer_is_a_generic_tool_error() -> None:
    async with make_env("memory") as env:
        roots = ClientRoots()
        roots.fail = True
        async with env.connect("legacy", roots) as client:
            result = await client.call_tool("roots", {})
        assert result.is_error
        assert first_text(result) == "roots are unavailable (client answered with an error)"


async def test_stateless_http_handshake_gives_a_clear_error() -> None:
    async with make_env("http") as env:
        async with env.connect("legacy", ClientRoots(), path="/mcp-stateless") as client:
            result = await client.call_tool("roots", {})
        assert result.is_error
        assert "no back-channel" in first_text(result)


async def test_fallback_is_used_when_the_client_declares_no_roots(env: Env) -> None:
    stdio_args = ("--fallback", "/srv/allowed")
    if env.transport != "stdio":
        async with make_env(env.transport, fallback=["/srv/allowed"]) as fallback_env:
            env = fallback_env
            async with env.connect("legacy", None) as client:
                assert await call_text(client, "roots") == "file:///srv/allowed"
            async with env.connect("2026-07-28", None) as client:
                assert await call_text(client, "roots") == "file:///srv/allowed"
        return
    async with env.connect("legacy", None, stdio_args=stdio_args) as client:
        assert await call_text(client, "roots") == "file:///srv/allowed"


async def test_cache_entries_die_with_their_connections() -> None:
    async with make_env("memory") as env:
        service = env.service
        assert service is not None
        roots = ClientRoots()
        for _ in range(3):
            async with env.connect("legacy", roots) as client:
                await call_text(client, "roots")
                assert service.cache_size == 1
            assert service.cache_size == 0


async def test_http_session_delete_drops_the_cache_entry() -> None:
    async with make_env("http") as env:
        assert env.service is not None
        async with env.connect("legacy", ClientRoots()) as client:
            await call_text(client, "roots")
            assert env.service.cache_size == 1
        with anyio.fail_after(5):
            while env.service.cache_size:
                await anyio.sleep(0.01)


# --------------------------------------------------------------------------------------------- 2026-07-28


async def test_2026_roots_via_input_required(env: Env) -> None:
    roots = ClientRoots(["file:///work/m"])
    async with env.connect("2026-07-28", roots) as client:
        assert await call_text(client, "roots") == "file:///work/m"
        assert await call_text(client, "roots") == "file:///work/m"
    assert roots.calls == 2  # never cached across 2026-07-28 requests


async def test_2026_first_round_shape(env: Env) -> None:
    async with env.connect("2026-07-28", ClientRoots()) as client:
        first = await client.session.call_tool("roots", {}, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult)
    assert first.input_requests is not None
    assert list(first.input_requests) == ["roots"]
    request = first.input_requests["roots"]
    assert request.model_dump(by_alias=True, exclude_none=True) == {"method": "roots/list"}
    assert first.request_state is None  # nothing to carry yet: no state to seal, replay or leak


async def test_2026_without_roots_capability_is_32021_before_any_input_request(env: Env) -> None:
    async with env.connect("2026-07-28", None) as client:
        for tool in ("roots", "roots_and_confirm"):
            with pytest.raises(MCPError) as info:
                await client.call_tool(tool, {})
            assert info.value.code == -32021
            data = info.value.data
            assert isinstance(data, dict)
            assert "roots" in data["requiredCapabilities"]


async def test_2026_roots_and_elicitation_in_one_round() -> None:
    async with make_env("http") as env:
        assert env.base is not None
        meta = _meta_2026({"roots": {}, "elicitation": {}})
        first = await _raw_call(env.base, "roots_and_confirm", meta)
        assert first["resultType"] == "input_required"
        assert set(first["inputRequests"]) == {"roots", "confirm"}
        assert first["inputRequests"]["roots"] == {"method": "roots/list"}
        answers = {
            "roots": {"roots": [{"uri": "file:///work/both"}]},
            "confirm": {"action": "accept", "content": {"ok": True}},
        }
        done = await _raw_call(env.base, "roots_and_confirm", meta, answers, first.get("requestState"))
        body = json.loads(done["content"][0]["text"])
        assert body == {"roots": ["file:///work/both"], "confirm": answers["confirm"]}


async def test_roots_carry_into_later_rounds_without_asking_again() -> None:
    async with make_env("http") as env:
        assert env.base is not None
        meta = _meta_2026({"roots": {}, "elicitation": {}})
        round1 = await _raw_call(env.base, "roots_then_confirm", meta)
        assert set(round1["inputRequests"]) == {"roots"}
        answer = {"roots": {"roots": [{"uri": "file:///work/r", "name": "R"}]}}
        round2 = await _raw_call(env.base, "roots_then_confirm", meta, answer, round1.get("requestState"))
        assert set(round2["inputRequests"]) == {"confirm"}  # roots are not asked again
        state = round2["requestState"]
        assert state.startswith("v1.")  # sealed (AES-GCM) by the SDK's RequestStateBoundary
        assert "work" not in state
        assert "rootbound" not in state
        confirm = {"confirm": {"action": "accept", "content": {"ok": True}}}
        round3 = await _raw_call(env.base, "roots_then_confirm", meta, confirm, round2["requestState"])
        assert round3["resultType"] == "complete"
        body = json.loads(round3["content"][0]["text"])
        assert body == {"roots": ["file:///work/r"], "confirm": {"action": "accept", "content": {"ok": True}}}


async def test_application_state_survives_next_to_carried_roots() -> None:
    async with make_env("http") as env:
        assert env.base is not None
        meta = _meta_2026({"roots": {}})
        round1 = await _raw_call(env.base, "raw_state", meta)
        answer = {"roots": {"roots": [{"uri": "file:///work/s"}]}}
        round2 = await _raw_call(env.base, "raw_state", meta, answer, round1.get("requestState"))
        assert round2["resultType"] == "input_required"
        round3 = await _raw_call(env.base, "raw_state", meta, None, round2["requestState"])
        assert json.loads(round3["content"][0]["text"]) == {"roots": ["file:///work/s"], "state": "app-round-2"}


async def test_require_inputs_carries_the_handlers_own_state() -> None:
    async with make_env("http") as env:
        assert env.base is not None
        meta = _meta_2026({"roots": {}, "elicitation": {}})
        round1 = await _raw_call(env.base, "stateful_inputs", meta)
        assert set(round1["inputRequests"]) == {"roots", "confirm"}
        assert round1["requestState"].startswith("v1.")  # the handler's state, sealed by the SDK
        answers = {"roots": {"roots": [{"uri": "file:///work/st"}]}, "confirm": {"action": "accept", "content": {}}}
        done = await _raw_call(env.base, "stateful_inputs", meta, answers, round1["requestState"])
        assert json.loads(done["content"][0]["text"]) == {"roots": ["file:///work/st"], "state": "step-2"}


async def test_2026_missing_answer_asks_again() -> None:
    async with make_env("http") as env:
        assert env.base is not None
        meta = _meta_2026({"roots": {}})
        round1 = await _raw_call(env.base, "roots", meta)
        unrelated = {"other": {"action": "decline"}}
        round2 = await _raw_call(env.base, "roots", meta, unrelated, round1.get("requestState"))
        assert round2["resultType"] == "input_required"
        assert set(round2["inputRequests"]) == {"roots"}


@pytest.mark.parametrize(
    "answer",
    [
        {"roots": [{"uri": "file://evil.example/share"}]},
        {"roots": [{"uri": "file:///work/evil%2F..%2Fetc"}]},
        {"roots": [{"uri": "file:///work/evil/../etc"}]},
        {"roots": "evil"},
        {"action": "accept", "content": {"evil": True}},
    ],
)
async def test_2026_malformed_answer_is_32602_without_echo(answer: dict[str, Any]) -> None:
    async with make_env("http") as env:
        assert env.base is not None
        meta = _meta_2026({"roots": {}})
        round1 = await _raw_call(env.base, "roots", meta)
        with pytest.raises(MCPError) as info:
            await _raw_call(env.base, "roots", meta, {"roots": answer}, round1.get("requestState"))
        assert info.value.code == -32602
        assert "evil" not in repr(info.value.error.model_dump())


async def test_tampered_state_is_rejected_cleanly() -> None:
    async with make_env("http") as env:
        assert env.base is not None
        meta = _meta_2026({"roots": {}, "elicitation": {}})
        round1 = await _raw_call(env.base, "roots_then_confirm", meta)
        answer = {"roots": {"roots": [{"uri": "file:///work/r"}]}}
        round2 = await _raw_call(env.base, "roots_then_confirm", meta, answer, round1.get("requestState"))
        forged = round2["requestState"][:-4] + ("AAAA" if not round2["requestState"].endswith("AAAA") else "BBBB")
        with pytest.raises(MCPError) as info:
            await _raw_call(env.base, "roots_then_confirm", meta, None, forged)
        assert info.value.code == -32602


async def test_shared_keys_let_another_instance_serve_the_retry() -> None:
    keys = [b"k" * 32]
    servers = [
        build_server(RootsService(warn_deprecated=False), name="fleet", keys=keys),
        build_server(RootsService(warn_deprecated=False), name="fleet", keys=keys),
        build_server(RootsService(warn_deprecated=False), name="fleet", keys=[b"z" * 32]),
    ]
    async with (
        serve_http(http_app(servers[0])) as a,
        serve_http(http_app(servers[1])) as b,
        serve_http(http_app(servers[2])) as other,
    ):
        await _fleet(a, b, other)


async def _fleet(a: str, b: str, other: str) -> None:
    meta = _meta_2026({"roots": {}})
    round1 = await _raw_call(a, "roots", meta)
    answer = {"roots": {"roots": [{"uri": "file:///work/fleet"}]}}
    round2 = await _raw_call(b, "roots", meta, answer, round1.get("requestState"))
    assert round2["content"][0]["text"] == "file:///work/fleet"
    carried = await _raw_call(a, "roots_then_confirm", _meta_2026({"roots": {}, "elicitation": {}}))
    round2b = await _raw_call(
        b, "roots_then_confirm", _meta_2026({"roots": {}, "elicitation": {}}), answer, carried.get("requestState")
    )
    with pytest.raises(MCPError) as info:
        await _raw_call(
            other, "roots_then_confirm", _meta_2026({"roots": {}, "elicitation": {}}), None, round2b["requestState"]
        )
    assert info.value.code == -32602


# ------------------------------------------------------------------------------------- raw helpers


def _meta_2026(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }


async def _raw_call(
    base: str,
    tool: str,
    meta: dict[str, Any],
    input_responses: dict[str, Any] | None = None,
    request_state: str | None = None,
) -> dict[str, Any]:
    """One 2026-07-28 ``tools/call`` round as raw JSON over real HTTP: what a non-SDK client would send."""
    params: dict[str, Any] = {"name": tool, "arguments": {}, "_meta": meta}
    if input_responses is not None:
        params["inputResponses"] = input_responses
    if request_state is not None:
        params["requestState"] = request_state
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call", "params": params}
    headers = {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.post(base + "/mcp", json=body, headers=headers)
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    message = json.loads(text)
    if "error" in message:
        error = message["error"]
        raise MCPError(error["code"], error["message"], error.get("data"))
    result: dict[str, Any] = message["result"]
    return result


_ids = itertools.count(1)
