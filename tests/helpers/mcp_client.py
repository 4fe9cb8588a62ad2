"""Test support for the client-side roots tests: one way to reach the recording server per transport.

* ``memory``: ``mcp.Client(server_object)`` (legacy: the SDK's in-memory streams; other modes: its direct
  in-process dispatcher);
* ``stdio``: ``tests/fixtures/recording_server.py`` as a real subprocess (``sys.executable``);
* ``http`` / ``http-stateless``: the SDK's Streamable HTTP app under uvicorn on 127.0.0.1, ephemeral port, in a
  background thread, with an ASGI wrapper that records each raw POST body.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.server import Server
from mcp.shared.memory import create_client_server_memory_streams

from mcp import Client
from rootbound.mcp.client import RootsProvider
from tests.fixtures.recording_server import Recorder, build_server

FIXTURE = Path(__file__).parent.parent / "fixtures" / "recording_server.py"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def stdio_params(*, legacy_only: bool = False) -> StdioServerParameters:
    """The recording server as a real subprocess of this interpreter."""
    args = [str(FIXTURE), *(["--legacy-only"] if legacy_only else [])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def recording_asgi(app: ASGIApp, recorder: Recorder) -> ASGIApp:
    """Record the exact bytes of every HTTP request body before the SDK parses it."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        chunks: list[bytes] = []

        async def recording_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body") and any(chunks):
                    recorder.frame(b"".join(chunks).decode("utf-8"))
            return message

        await app(scope, recording_receive, send)

    return wrapped


@contextmanager
def http_server(recorder: Recorder, *, stateless: bool) -> Iterator[str]:
    """A fresh recording server behind uvicorn on 127.0.0.1:<ephemeral>; yields the endpoint URL."""
    server: Server[Any] = build_server(recorder, "recording-http")
    app = recording_asgi(server.streamable_http_app(stateless_http=stateless), recorder)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    userver = uvicorn.Server(config)
    thread = threading.Thread(target=userver.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not userver.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        userver.should_exit = True
        thread.join(10)
        sock.close()


async def remote_snapshot(client: Client) -> dict[str, Any]:
    """What a subprocess recording server has seen (via its ``records`` tool)."""
    result = await client.call_tool("records", {})
    text = result.content[0]
    assert text.type == "text"
    snapshot: dict[str, Any] = json.loads(text.text)
    return snapshot


async def fetch_roots(client: Client) -> Any:
    """Have the server ask for roots in this connection's era; the raw answer it received."""
    result = await client.call_tool("fetch_roots", {})
    assert not result.is_error, result
    text = result.content[0]
    assert text.type == "text"
    return json.loads(text.text)


async def wait_until(predicate: Callable[[], Awaitable[bool]]) -> None:
    """Poll an async predicate for up to 5 s (the notification travels asynchronously, maybe to a subprocess)."""
    with anyio.fail_after(5):
        while not await predicate():
            await anyio.sleep(0.02)


@asynccontextmanager
async def bare_session(recorder: Recorder, provider: RootsProvider | None) -> AsyncIterator[ClientSession]:
    """A bare ``ClientSession`` (not entered into a handshake) wired to a recording server over memory streams."""
    server = build_server(recorder, "recording-bare")
    kwargs: dict[str, Any] = dict(provider.session_kwargs()) if provider is not None else {}
    streams = create_client_server_memory_streams()
    async with streams as ((client_read, client_write), (server_read, server_write)), anyio.create_task_group() as tg:
        tg.start_soon(server.run, server_read, server_write, server.create_initialization_options())
        async with ClientSession(client_read, client_write, **kwargs) as session:
            yield session
        tg.cancel_scope.cancel()
