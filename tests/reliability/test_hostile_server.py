"""Hostile clients against ``RootsService`` on the raw wire: every malformed roots answer in both eras gets a
clean, fixed answer that never echoes the payload, the connection keeps serving, and RSS stays bounded.

* Handshake era: the answer is a JSON-RPC *response*, which cannot be answered with an error; the tool call that
  asked becomes ``isError: true`` with ``invalid roots answer (<reason class>)``.
* 2026-07-28: the answer arrives in the retry's ``inputResponses``; the retry gets JSON-RPC ``-32602``, from
  rootbound (``invalid roots answer``, ``data.reason``) or, for schema-invalid shapes, from the SDK's own check
  (``Invalid request parameters``, ``data: ""``), which runs first.

Transports: in-memory (every case, one test each), a stdio subprocess (200-round soaks with RSS from
``/proc/<pid>/status``) and Streamable HTTP under uvicorn (body limit, parse errors, legacy answer POSTs).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import pytest

from rootbound.mcp import RootsService
from tests.fixtures.hostile_wire import (
    LEGACY_CASES,
    MARK,
    MIB,
    MODERN_CASES,
    SDK,
    WIRE_CASES,
    Case,
    answer_line,
    modern_call_line,
    modern_connection,
    stdio_peer,
)
from tests.fixtures.roots_server import build_server
from tests.helpers.mcp_server import http_app
from tests.helpers.raw_peer import answer_with, raw_connection
from tests.helpers.uvicorn_serve import serve_http

pytestmark = pytest.mark.anyio

GOOD = {"roots": [{"uri": "file:///work/ok"}]}
SOAK_ROUNDS = 200
RSS_BOUND_KIB = 64 * 1024


def make_server(**kwargs: Any) -> tuple[RootsService, Any]:
    service = RootsService(warn_deprecated=False, **kwargs)
    return service, build_server(service)


def expected_modern_error(case: Case) -> dict[str, Any]:
    if case.modern == SDK:
        return {"code": -32602, "message": "Invalid request parameters", "data": ""}
    return {"code": -32602, "message": "invalid roots answer", "data": {"reason": case.modern}}


def legacy_tool_error(reason: str) -> dict[str, Any]:
    # Exact equality: the fixed text, no echo, and no 2026-only resultType on a 2025-11-25 wire.
    return {"content": [{"type": "text", "text": f"invalid roots answer ({reason})"}], "isError": True}


# ----------------------------------------------------------------------------------- in-memory, every case


@pytest.mark.parametrize("case", LEGACY_CASES, ids=lambda case: case.name)
async def test_legacy_malformed_answer_is_a_fixed_tool_error(case: Case) -> None:
    service, server = make_server()
    assert case.legacy is not None
    with anyio.fail_after(30):
        async with raw_connection(server, answer=answer_with(case.make())) as peer:
            response = await peer.call_tool("roots")
            assert response["result"] == legacy_tool_error(case.legacy)
            assert MARK not in json.dumps(response)
            peer.answer = answer_with(GOOD)  # the same connection keeps serving: a good answer is used at once
            assert (await peer.call_tool("roots"))["result"]["content"][0]["text"] == "file:///work/ok"
            assert service.cache_size == 1
    assert service.cache_size == 0


async def test_legacy_error_answer_is_not_echoed() -> None:
    _, server = make_server()

    def error(request: dict[str, Any]) -> dict[str, Any]:
        detail = {"code": -32603, "message": MARK * 2500, "data": {MARK: MARK}}
        return {"jsonrpc": "2.0", "id": request["id"], "error": detail}

    with anyio.fail_after(10):
        async with raw_connection(server, answer=error) as peer:
            response = await peer.call_tool("roots")
    text = "roots are unavailable (client answered with an error)"
    assert response["result"] == {"content": [{"type": "text", "text": text}], "isError": True}


@pytest.mark.parametrize("case", MODERN_CASES, ids=lambda case: case.name)
async def test_modern_malformed_answer_is_32602_without_echo(case: Case) -> None:
    service, server = make_server()
    answer = case.make()
    with anyio.fail_after(30):
        async with modern_connection(server) as peer:
            first = await peer.call("roots")
            assert first["result"]["inputRequests"] == {"roots": {"method": "roots/list"}}
            started = time.perf_counter()
            response = await peer.call("roots", {"roots": answer})
            elapsed = time.perf_counter() - started
            assert response["error"] == expected_modern_error(case)
            assert MARK not in json.dumps(response)
            # Over-count answers are refused before the SDK's per-root schema check (300,000 roots took ~3 s).
            assert elapsed < 1.0, f"{case.name}: {elapsed:.2f} s"
            ok = await peer.call("roots", {"roots": GOOD})
            assert ok["result"]["content"][0]["text"] == "file:///work/ok"
    assert service.cache_size == 0


@pytest.mark.parametrize("responses", [MARK, [MARK], 7])
async def test_modern_input_responses_that_are_not_an_object(responses: Any) -> None:
    _, server = make_server()
    with anyio.fail_after(10):
        async with modern_connection(server) as peer:
            response = await peer.call("roots", responses, raw_responses=True)
            assert response["error"] == {"code": -32602, "message": "Invalid request parameters", "data": ""}
            assert (await peer.call("roots"))["result"]["resultType"] == "input_required"


# ------------------------------------------------------------------------------ stdio subprocess: RSS soaks


def soak_plan(cases: list[Case]) -> list[Case]:
    """200 rounds: the small cases in turn, every big case once (every 40th round).

    RSS is compared after a warm-up round of every case (one-time allocations: pydantic schemas, allocator
    arenas sized by a 10 MB parse) so that growth means accumulation; the fresh figure is bounded too."""
    small = [case for case in cases if not case.big]
    big = [case for case in cases if case.big]
    plan = [small[index % len(small)] for index in range(SOAK_ROUNDS)]
    for slot, case in enumerate(big):
        plan[40 * slot + 39] = case
    return plan


def report(era: str, fresh: dict[str, int], warm: dict[str, int], after: dict[str, int], seconds: float) -> None:
    print(
        f"\n[{era} soak] {SOAK_ROUNDS} malformed rounds in {seconds:.1f} s; VmRSS fresh {fresh['rss_kib'] / 1024:.1f}"
        f" MiB, after warm-up {warm['rss_kib'] / 1024:.1f} MiB, after soak {after['rss_kib'] / 1024:.1f} MiB"
        f" (growth {(after['rss_kib'] - warm['rss_kib']) / 1024:+.1f} MiB), peak VmHWM {after['hwm_kib'] / 1024:.1f}"
        f" MiB; cache_size {after['cache_size']}, fetches {after['fetches']}"
    )


async def test_legacy_soak_over_stdio_keeps_serving_with_bounded_rss() -> None:
    cases = [case for case in LEGACY_CASES if case.wire]
    encoded = {case.name: case.encoded() for case in cases}
    with anyio.fail_after(300):
        # A roots timeout no loaded machine reaches: the 10 MB answers take seconds to parse there (issue 33 #7).
        async with stdio_peer("--timeout", "120") as peer:
            await peer.initialize()
            fresh = await peer.probe()

            async def run(case: Case) -> None:
                async def answer(request: dict[str, Any]) -> bytes:
                    return answer_line(request["id"], encoded[case.name])

                response = await peer.exchange("tools/call", {"name": "roots", "arguments": {}}, answer)
                assert case.legacy is not None
                assert response["result"] == legacy_tool_error(case.legacy), case.name

            for case in cases:  # warm-up: every case once, so the baseline includes one-time allocations
                await run(case)
            warm = await peer.probe()
            started = time.perf_counter()
            for case in soak_plan(cases):
                await run(case)
            seconds = time.perf_counter() - started

            async def good(request: dict[str, Any]) -> bytes:
                return answer_line(request["id"], json.dumps(GOOD).encode())

            response = await peer.exchange("tools/call", {"name": "roots", "arguments": {}}, good)
            assert response["result"]["content"][0]["text"] == "file:///work/ok"
            after = await peer.probe()
            assert peer.stray == []
    report("legacy", fresh, warm, after, seconds)
    assert after["rss_kib"] - warm["rss_kib"] < RSS_BOUND_KIB
    assert after["rss_kib"] - fresh["rss_kib"] < 2 * RSS_BOUND_KIB
    assert after["cache_size"] == 1  # this live connection's entry only
    assert after["fetches"] == len(cases) + SOAK_ROUNDS + 1  # a failed fetch never fills the cache


async def test_legacy_unparseable_answers_over_stdio_time_out_and_the_connection_carries_on() -> None:
    """Lines no JSON-RPC parser accepts (nesting past ~200 levels, a result that is not an object, garbage,
    a batch, an unknown id) are dropped by the SDK's transport: the pending roots/list times out (fail closed)."""
    with anyio.fail_after(30):
        async with stdio_peer("--timeout", "0.5") as peer:
            await peer.initialize()
            deep = b'{"roots":[{"uri":"file:///work/a","_meta":' + b'{"evil":' * 10_000 + b"{}" + b"}" * 10_000 + b"}]}"
            for unparseable in (deep, b'"evil"'):

                async def garbage(request: dict[str, Any], result: bytes = unparseable) -> bytes:
                    await peer.send_line(b"evil, not JSON")
                    await peer.send_line(b'[{"jsonrpc":"2.0","id":' + json.dumps(request["id"]).encode() + b"}]")
                    await peer.send_line(b'{"jsonrpc":"2.0","id":"unknown-evil","result":{}}')
                    return answer_line(request["id"], result)

                response = await peer.exchange("tools/call", {"name": "roots", "arguments": {}}, garbage)
                text = "roots are unavailable (the client did not answer roots/list within 0.5 s)"
                assert response["result"] == {"content": [{"type": "text", "text": text}], "isError": True}
            assert [n["method"] for n in peer.notifications] == ["notifications/cancelled"] * 2

            async def good(request: dict[str, Any]) -> bytes:
                return answer_line(request["id"], json.dumps(GOOD).encode())

            response = await peer.exchange("tools/call", {"name": "roots", "arguments": {}}, good)
            assert response["result"]["content"][0]["text"] == "file:///work/ok"
            assert peer.stray == []


async def test_modern_soak_over_stdio_keeps_serving_with_bounded_rss() -> None:
    cases = [case for case in MODERN_CASES if case.wire]
    lines = {case.name: case.encoded() for case in cases}
    ids = iter(range(1, 10_000))

    async def run(case: Case) -> None:
        request_id = next(ids)
        await peer.send_line(modern_call_line(request_id, lines[case.name]))
        response = await peer.receive()
        assert response == {"jsonrpc": "2.0", "id": request_id, "error": expected_modern_error(case)}, case.name

    with anyio.fail_after(60):
        async with stdio_peer() as peer:
            fresh = await peer.probe(modern=True)
            # Unparseable lines (garbage, an array, nesting past the JSON parser's limit) are dropped without a
            # response: JSON-RPC would send -32700 with a null id; the SDK's stdio transport sends nothing.
            deep = b'{"roots":[{"uri":"file:///work/a","_meta":' + b'{"evil":' * 10_000 + b"{}" + b"}" * 10_000 + b"}]}"
            for line in (b"evil, not JSON", b"[1,2]", modern_call_line(9999, deep)):
                await peer.send_line(line)
            for case in cases:
                await run(case)
            warm = await peer.probe(modern=True)
            started = time.perf_counter()
            for case in soak_plan(cases):
                await run(case)
            seconds = time.perf_counter() - started
            good = json.dumps(GOOD).encode()
            await peer.send_line(modern_call_line(next(ids), good))
            assert (await peer.receive())["result"]["content"][0]["text"] == "file:///work/ok"
            after = await peer.probe(modern=True)
            assert peer.stray == []
    report("modern", fresh, warm, after, seconds)
    assert after["rss_kib"] - warm["rss_kib"] < RSS_BOUND_KIB
    assert after["rss_kib"] - fresh["rss_kib"] < 2 * RSS_BOUND_KIB
    assert after["cache_size"] == 0
    assert after["fetches"] == 0  # the modern era never sends a request of its own


# ------------------------------------------------------------------------------------- Streamable HTTP

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def modern_headers(tool: str = "roots") -> dict[str, str]:
    return {**HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}


def body_of(response: httpx2.Response) -> Any:
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    return json.loads(text)


async def test_modern_http_body_limit_parse_errors_and_over_count_answers() -> None:
    service, server = make_server()
    big_name = {"roots": [{"uri": "file:///work/a", "name": MARK * (10 * MIB // 4)}]}
    many = {"roots": [{"uri": f"file:///work/{MARK}{i}"} for i in range(100_000)]}
    deep = b'{"roots":[{"uri":"file:///work/a","_meta":' + b'{"evil":' * 10_000 + b"{}" + b"}" * 10_000 + b"}]}"
    async with serve_http(http_app(server)) as base, httpx2.AsyncClient(timeout=30) as http:
        url = base + "/mcp"
        with anyio.fail_after(60):
            # 10 MB: the SDK's 4 MiB body limit answers before any parsing (plain text, not JSON-RPC).
            response = await http.post(
                url, content=modern_call_line(1, json.dumps(big_name).encode()), headers=modern_headers()
            )
            assert (response.status_code, response.text) == (413, "Request body too large")
            # 3.5 MB, under the limit: refused by count before the SDK's schema check.
            started = time.perf_counter()
            response = await http.post(
                url, content=modern_call_line(2, json.dumps(many).encode()), headers=modern_headers()
            )
            elapsed = time.perf_counter() - started
            assert response.status_code == 400
            assert body_of(response)["error"] == {
                "code": -32602,
                "message": "invalid roots answer",
                "data": {"reason": "too many roots"},
            }
            assert elapsed < 1.0, elapsed
            # Unparseable bodies: -32700 with a null id, nothing echoed.
            for content in (modern_call_line(3, deep), b"evil, not JSON"):
                response = await http.post(url, content=content, headers=modern_headers())
                assert response.status_code == 400
                message = body_of(response)
                assert message == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
            # And the endpoint keeps serving both rounds of a good call.
            response = await http.post(url, content=modern_call_line(4, None), headers=modern_headers())
            assert body_of(response)["result"]["resultType"] == "input_required"
            response = await http.post(
                url, content=modern_call_line(5, json.dumps(GOOD).encode()), headers=modern_headers()
            )
            assert body_of(response)["result"]["content"][0]["text"] == "file:///work/ok"
    assert service.cache_size == 0


async def _sse_messages(response: httpx2.Response) -> AsyncIterator[dict[str, Any]]:
    async for line in response.aiter_lines():
        if line.startswith("data:") and line[5:].strip():
            yield json.loads(line[5:])


async def test_legacy_http_answer_over_the_body_limit_times_out_cleanly() -> None:
    """Handshake era over Streamable HTTP: the client POSTs its roots/list answer; 10 MB is refused (413) before
    the SDK reads it, so the server never gets an answer: the tool call fails closed on the timeout."""
    service, server = make_server(timeout=1.0)
    big = json.dumps({"roots": [{"uri": "file:///work/a", "_meta": {"blob": MARK * (10 * MIB // 4)}}]}).encode()
    async with serve_http(http_app(server)) as base, httpx2.AsyncClient(timeout=30) as http:
        url = base + "/mcp"
        with anyio.fail_after(30):
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"roots": {"listChanged": True}},
                    "clientInfo": {"name": "hostile", "version": "0"},
                },
            }
            response = await http.post(url, json=init, headers=HEADERS)
            session = {
                **HEADERS,
                "Mcp-Session-Id": response.headers["mcp-session-id"],
                "MCP-Protocol-Version": "2025-11-25",
            }
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post(url, json=initialized, headers=session)).status_code == 202
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "roots", "arguments": {}}}
            statuses: list[int] = []
            final: dict[str, Any] = {}
            async with http.stream("POST", url, json=call, headers=session) as stream:
                async for message in _sse_messages(stream):
                    if message.get("method") == "roots/list":
                        answer = answer_line(message["id"], big)
                        statuses.append((await http.post(url, content=answer, headers=session)).status_code)
                    elif message.get("id") == 2:
                        final = message
                        break
            assert statuses == [413]
            text = "roots are unavailable (the client did not answer roots/list within 1 s)"
            assert final["result"] == {"content": [{"type": "text", "text": text}], "isError": True}
            assert service.cache_size == 1
            assert (await http.delete(url, headers=session)).status_code == 200
            while service.cache_size:
                await anyio.sleep(0.01)


def test_cases_cover_the_issue_list() -> None:
    """The issue's list, by name: non-file, remote host, %2F/%00/NUL, dot segments, wrong types, deep, 100,000
    roots, 10 MB."""
    names = " | ".join(case.name for case in WIRE_CASES + [c for c in LEGACY_CASES if not c.wire])
    for needle in (
        "non-file",
        "remote host",
        "%2F",
        "%00",
        "raw NUL",
        "dot segment",
        "not a string",
        "deep",
        "100,000 roots",
        "10 MB",
    ):
        assert needle in names
