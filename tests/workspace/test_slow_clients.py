"""HTTP a slow client cannot exhaust (issue 33 #3): read deadlines, a connection cap that makes room.

Real uvicorn with the guarded h11 protocol on 127.0.0.1 (in-process, for the cap's two outcomes, each made
deterministic by the stall grace), and a real ``rootbound serve --http`` subprocess under a flood of stalled
bodies while a victim session keeps reading. ``bench/slow_clients.py`` runs the flood at 2,000 connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp.client.streamable_http import streamable_http_client
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from mcp import Client
from rootbound.mcp import RootsProvider
from rootbound.workspace.limits.slow_clients import ConnectionLimits, guarded_protocol
from tests.helpers.serve_process import http_serve_process, proc_counts, text_of

STALLED_HEAD = (
    b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n{"
)


def test_pins_what_the_guard_uses_of_uvicorns_h11_protocol() -> None:
    for name in ("connection_made", "connection_lost", "data_received", "on_response_complete"):
        assert callable(getattr(H11Protocol, name)), name
    cycle_fields = RequestResponseCycle.__init__.__code__.co_names
    assert "more_body" in cycle_fields and "response_complete" in cycle_fields
    config = uvicorn.Config(lambda *a: None, http=guarded_protocol(ConnectionLimits()))
    config.load()
    assert issubclass(config.http_protocol_class, H11Protocol)


async def _hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@contextlib.contextmanager
def guarded_server(limits: ConnectionLimits) -> Iterator[int]:
    """uvicorn with the guard on 127.0.0.1, in a thread of its own; yields the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(_hello, log_level="critical", lifespan="off", http=guarded_protocol(limits))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        end = time.monotonic() + 60
        while not server.started and time.monotonic() < end:
            time.sleep(0.01)
        assert server.started
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def _connect(port: int, data: bytes = b"") -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=60)
    if data:
        conn.sendall(data)
    return conn


def _answer(conn: socket.socket) -> bytes:
    chunks = []
    with contextlib.suppress(OSError):
        while chunk := conn.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks)


def test_at_the_cap_a_new_connection_closes_the_longest_stalled_one() -> None:
    with guarded_server(ConnectionLimits(max_connections=2, read_timeout=3600, stall_grace=0)) as port:
        first = _connect(port, STALLED_HEAD)
        time.sleep(0.05)
        second = _connect(port, STALLED_HEAD)
        time.sleep(0.05)
        third = _connect(port, b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        assert _answer(third).endswith(b"ok")  # served: room was made
        assert _answer(first).startswith(b"HTTP/1.1 408")  # the longest stalled went
        second.settimeout(0.5)
        with pytest.raises(TimeoutError):
            second.recv(1)  # still open, still waiting for its body
        for conn in (first, second, third):
            conn.close()


def test_at_the_cap_with_nothing_stalled_the_new_connection_is_refused_at_once() -> None:
    with guarded_server(ConnectionLimits(max_connections=2, read_timeout=3600, stall_grace=3600)) as port:
        held = [_connect(port, STALLED_HEAD), _connect(port, STALLED_HEAD)]
        time.sleep(0.05)
        refused = _connect(port)
        answer = _answer(refused)
        assert answer.startswith(b"HTTP/1.1 503") and b"too many connections" in answer
        for conn in [*held, refused]:
            conn.close()


@pytest.mark.parametrize("data", [b"GET / HTTP/1.1\r\nhost: x\r\n", STALLED_HEAD], ids=["headers", "body"])
def test_a_request_that_does_not_arrive_in_time_is_answered_408(data: bytes) -> None:
    with guarded_server(ConnectionLimits(max_connections=8, read_timeout=0.5)) as port:
        conn = _connect(port, data)
        assert _answer(conn).startswith(b"HTTP/1.1 408")  # closed by the server, not by this test's timeout
        conn.close()
        again = _connect(port, b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        assert _answer(again).endswith(b"ok")
        again.close()


def test_stalled_bodies_leave_a_victim_served_and_fds_bounded(tmp_path: Path) -> None:
    (tmp_path / "v.txt").write_text("victim\n")
    cap, flood = 24, 80
    args = [str(tmp_path), "--max-connections", str(cap)]
    with http_serve_process(args) as (url, process):
        port = int(url.rsplit(":", 1)[1].split("/")[0])

        async def victim() -> tuple[list[tuple[bool, str]], int]:
            provider = RootsProvider([tmp_path])
            answers = []
            async with (
                httpx2.AsyncClient(timeout=httpx2.Timeout(60)) as http,
                Client(streamable_http_client(url, http_client=http), mode="legacy", **provider.client_kwargs()) as c,
            ):
                answers.append(await text_of(c, "read_file", path="v.txt"))
                head = STALLED_HEAD.replace(b"host: 127.0.0.1", b"host: 127.0.0.1:%d" % port)  # past the host check
                stalled = await anyio.to_thread.run_sync(lambda: [_connect(port, head) for _ in range(flood)])
                await anyio.sleep(1.5)  # past the stall grace: the flood is now what makes room
                answers.append(await text_of(c, "read_file", path="v.txt"))
                fds = proc_counts(process.pid)[1]
                for conn in stalled:
                    conn.close()
            return answers, fds

        answers, fds = anyio.run(victim)
    assert answers == [(False, "victim\n")] * 2
    assert fds < 60 + cap, f"{fds} fds open with {flood} stalled connections and a cap of {cap}"
