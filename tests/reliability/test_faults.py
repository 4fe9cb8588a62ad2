"""Faults on mcp 2.x: an HTTP stream closed mid-round, abandoned 2026-07-28 rounds, connection churn over HTTP, and
roots deleted or re-created under a running ``rootbound serve``. A client that never answers, a client that leaves
while the server awaits ``roots/list`` and a ``list_changed`` storm over a real pipe run on both SDK majors in
``test_server_adapter_both.py``.

Already covered elsewhere (not repeated here): a ``roots/list`` timeout becomes a tool error
(``test_server.py::test_roots_list_timeout_is_a_tool_error_and_server_keeps_serving``); 10,000 notifications in
memory give one or two refreshes (``tests/mcp/both/test_server_wire.py::
test_list_changed_storm_in_memory_refreshes_at_most_twice``, on both SDK majors); 10,000 in-memory connections
leave no cache entry (``…::test_churned_connections_leave_no_cache_entries``); a root
replaced by a symlink is denied (``test_serve.py::test_root_replaced_by_a_symlink_is_denied_not_followed``).
"""

from __future__ import annotations

import contextlib
import gc
import json
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.routing import Route

from rootbound.mcp import RootsProvider, RootsService
from rootbound.mcp._rounds import CallScope
from tests.fixtures.hostile_wire import modern_connection
from tests.fixtures.roots_server import build_server
from tests.helpers.serve_process import serve, text_of
from tests.helpers.uvicorn_serve import serve_http

pytestmark = pytest.mark.anyio

GOOD = {"roots": [{"uri": "file:///work/ok"}]}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class Outcomes:
    """Outermost middleware: how each ``tools/call`` ended on the server (result text or exception type)."""

    def __init__(self) -> None:
        self.ended: list[tuple[str, float]] = []

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        started = time.perf_counter()
        try:
            result = await call_next(ctx)
        except BaseException as error:
            self.ended.append((type(error).__name__, time.perf_counter() - started))
            raise
        text = result["content"][0]["text"] if isinstance(result, dict) and result.get("content") else str(result)
        self.ended.append((text, time.perf_counter() - started))
        return result


def make_server(**kwargs: Any) -> tuple[RootsService, Any, Outcomes]:
    service = RootsService(warn_deprecated=False, **kwargs)
    server = build_server(service)
    outcomes = Outcomes()
    server.middleware.insert(0, outcomes)
    return service, server, outcomes


def live(kind: type) -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if type(obj) is kind)


# ------------------------------------------------------------------------------- leaving in the middle


async def test_legacy_http_post_stream_closed_mid_round_then_session_deleted() -> None:
    """Streamable HTTP: closing the POST's SSE stream is not leaving (the session may still POST its answer);
    DELETE is, and the pending roots/list ends at once with the session."""
    service, server, outcomes = make_server(timeout=10.0)
    async with serve_http(_app(server)) as base, httpx2.AsyncClient(timeout=30) as http:
        url = base + "/mcp"
        with anyio.fail_after(20):
            session = await _legacy_session(http, url)
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "roots", "arguments": {}}}
            async with http.stream("POST", url, json=call, headers=session) as stream:
                async for line in stream.aiter_lines():
                    if "roots/list" in line:
                        break
            await anyio.sleep(0.3)
            assert outcomes.ended == [] and service.cache_size == 1  # still waiting for an answer POST
            left = time.perf_counter()
            assert (await http.delete(url, headers=session)).status_code == 200
            while not outcomes.ended or service.cache_size:
                await anyio.sleep(0.01)
            assert time.perf_counter() - left < 2.0
    assert [text for text, _ in outcomes.ended] == ["roots are unavailable (connection closed)"]


async def test_2026_rounds_never_retried_leave_nothing_behind() -> None:
    """2026-07-28: the server keeps no per-request state, so 1,000 abandoned first rounds (and 1,000 abandoned
    second rounds with roots sealed into requestState) leave no cache entry and no live scope object."""
    service, server, _ = make_server()
    baseline = live(CallScope)
    both: dict[str, Any] = {"roots": {}, "elicitation": {}}
    with anyio.fail_after(30):
        async with modern_connection(server) as peer:
            for _ in range(1000):
                first = await peer.call("roots")
                assert first["result"]["resultType"] == "input_required"
            for _ in range(1000):
                second = await peer.call("roots_then_confirm", {"roots": GOOD}, capabilities=both)
                assert second["result"]["inputRequests"].keys() == {"confirm"}  # roots ride the sealed state
            assert service.cache_size == 0
            assert live(CallScope) == baseline
    assert service.fetches == 0


# ------------------------------------------------------------------------------- connection churn over HTTP


def _app(server: Any, *, idle: float | None = None) -> Starlette:
    manager = StreamableHTTPSessionManager(app=server, stateless=False, session_idle_timeout=idle)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=[Route("/mcp", endpoint=StreamableHTTPASGIApp(manager))], lifespan=lifespan)


async def _legacy_session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"roots": {"listChanged": True}},
        "clientInfo": {"name": "churn", "version": "0"},
    }
    response = await http.post(
        url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}, headers=HEADERS
    )
    session = {**HEADERS, "Mcp-Session-Id": response.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=initialized, headers=session)).status_code == 202
    return session


async def _call_answering_roots(http: httpx2.AsyncClient, url: str, session: dict[str, str]) -> str:
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "roots", "arguments": {}}}
    async with http.stream("POST", url, json=call, headers=session) as stream:
        async for line in stream.aiter_lines():
            if not line.startswith("data:"):
                continue
            message = json.loads(line[5:])
            if message.get("method") == "roots/list":
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": GOOD}
                assert (await http.post(url, json=answer, headers=session)).status_code == 202
            elif message.get("id") == 2:
                return str(message["result"]["content"][0]["text"])
    raise AssertionError("no result")


async def test_http_session_churn_returns_the_cache_to_zero() -> None:
    """100 handshake sessions over Streamable HTTP (initialize, a call that fetches roots, DELETE) plus 20
    abandoned without DELETE: the deleted ones drop their entry at once, the abandoned ones when the SDK's idle
    timeout reaps the session (30 min by default; 1 s here)."""
    service, server, _ = make_server()
    async with serve_http(_app(server, idle=1.0)) as base, httpx2.AsyncClient(timeout=30) as http:
        url = base + "/mcp"
        with anyio.fail_after(60):
            peak = 0

            async def one(delete: bool) -> None:
                nonlocal peak
                session = await _legacy_session(http, url)
                assert await _call_answering_roots(http, url, session) == "file:///work/ok"
                peak = max(peak, service.cache_size)
                if delete:
                    assert (await http.delete(url, headers=session)).status_code == 200

            for batch in range(6):
                async with anyio.create_task_group() as tg:
                    for _ in range(20):
                        tg.start_soon(one, batch < 5)
            abandoned = service.cache_size
            started = time.perf_counter()
            while service.cache_size:
                await anyio.sleep(0.05)
            reaped_after = time.perf_counter() - started
    print(f"\n[http churn] 120 sessions, peak cache {peak}, {abandoned} abandoned reaped after {reaped_after:.1f} s")
    assert peak > 1
    assert 0 < abandoned <= 20  # deleted sessions dropped their entry at once; some may already be reaped
    assert service.cache_size == 0


# ------------------------------------------------------------------------------- roots deleted under the server


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_roots_deleted_or_recreated_while_serving(tmp_path: Path, mode: str) -> None:
    """``rootbound serve DIR`` over stdio. A client root deleted: denied. Re-created with a planted file: denied
    in the handshake era (the held snapshot names the old directory until list_changed). A 2026-07-28 request
    carries its roots afresh, so the new directory, inside DIR, is usually just that request's root; if an equal
    earlier snapshot is still alive its held fd is found stale and the root is denied instead (both are safe:
    never the old inode, never outside DIR). The operator DIR itself moved away and re-created: everything
    denied in both eras (DIRs are held for the process)."""
    base = tmp_path.resolve()
    ws, app = base / "ws", base / "ws" / "app"
    app.mkdir(parents=True)
    (app / "a.txt").write_text("inside\n")
    provider = RootsProvider([app])
    with anyio.fail_after(60):
        async with serve("stdio", [str(ws)], mode=mode, provider=provider) as client:
            assert await text_of(client, "read_file", path="a.txt") == (False, "inside\n")
            shutil.rmtree(app)
            error, text = await text_of(client, "read_file", path="a.txt")
            assert error and "inside" not in text, text
            app.mkdir()
            (app / "a.txt").write_text("PLANTED\n")
            error, text = await text_of(client, "read_file", path=str(app / "a.txt"))
            if mode == "legacy" or error:
                assert error and "PLANTED" not in text, text
            else:
                assert text == "PLANTED\n"  # the new directory is this request's root, inside DIR
            moved = base / "ws-moved"
            ws.rename(moved)
            (ws / "app").mkdir(parents=True)
            (ws / "app" / "a.txt").write_text("PLANTED\n")
            for path in ("a.txt", str(ws / "app" / "a.txt")):
                error, text = await text_of(client, "read_file", path=path)
                assert error and "PLANTED" not in text, text
            error, text = await text_of(client, "list_roots")
            lines = text.splitlines()
            assert (error, lines[0], lines[-1]) == (False, "(no roots: every path is denied)", "source: client")
            # A 2026-07-28 request's roots are taken in afresh: opened beneath the held (moved) DIR, ws/app lands in
            # ws-moved/app, not where its name says, so it is refused and said why; the handshake-era snapshot just
            # loses it.
            refused = [line for line in lines if line.startswith("refused a client root: ")]
            if mode == "2026-07-28":
                assert len(refused) == 1 and refused[0].startswith(f"refused a client root: {app.as_uri()} ("), lines
            else:
                assert refused == [], lines


# ------------------------------------------------------------------------------- HTTP latency under keep-alive


def test_serve_http_responses_are_not_held_by_nagle(tmp_path: Path) -> None:
    """uvicorn (h11) writes a response's headers and body separately; on a listening socket created with proto 0
    asyncio leaves Nagle on, and the body then waits for the client's delayed ACK: ~40 ms per keep-alive response
    (a 2026-07-28 call is two of them). Each request here is one segment from a client that keeps Nagle on too."""
    import socket
    import statistics

    from tests.helpers.serve_process import http_serve

    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "list_roots",
                "arguments": {},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
                },
            },
        }
    ).encode()
    with http_serve([str(tmp_path)]) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Mcp-Method: tools/call\r\nMcp-Name: list_roots\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        timings = []
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            for _ in range(9):
                started = time.perf_counter()
                conn.sendall(head + body)
                data = b""
                while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
                    data += conn.recv(65536)
                timings.append(time.perf_counter() - started)
                assert b'"input_required"' in data
    median = statistics.median(timings[1:])
    print(f"\n[keep-alive] median response {median * 1000:.1f} ms")
    assert median < 0.025, [f"{t * 1000:.1f}" for t in timings]


def _length(data: bytes) -> int:
    head = data.split(b"\r\n\r\n", 1)[0].decode().lower()
    return int(next(line.split(":")[1] for line in head.split("\r\n") if line.startswith("content-length")))
