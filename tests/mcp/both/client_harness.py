"""A raw JSON-RPC server peer for the client-side roots tests that run on BOTH SDK majors (mcp 1.x and 2.x).

Why raw: the point of these tests is what the client put on the wire (the exact ``roots`` capability in
``initialize``, how many ``notifications/roots/list_changed`` and where they fall relative to
``notifications/initialized``, the roots answers byte for byte); a peer that parses nothing through an SDK model
sees exactly that, and it is the same code under both majors (the SDKs' lowlevel servers differ completely).

The peer speaks the handshake era: it answers ``initialize`` with the version the client asked for (when it knows
it), ``ping``, ``tools/list`` and ``tools/call`` of ``fetch_roots`` (it sends ``roots/list`` to the client and
returns the raw answer as JSON text) and ``records`` (everything it received, for the stdio subprocess). In memory,
tests read :attr:`RawServer.received` and may hold the ``initialize`` answer (:attr:`RawServer.release`) to act in
the middle of a handshake. Run as a script it serves stdio and also records every raw stdin line.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LIST_CHANGED = "notifications/roots/list_changed"
INITIALIZED = "notifications/initialized"
TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in ("fetch_roots", "records")]

Message = dict[str, Any]


class RawServer:
    """The server side of one connection, on dicts; ``send`` writes one message to the client."""

    def __init__(self, send: Callable[[Message], Awaitable[None]], *, hold_initialize: bool = False) -> None:
        self._send = send
        self.received: list[Message] = []  # every message from the client, in arrival order
        self.frames: list[str] = []  # raw lines (stdio only)
        self.release = anyio.Event()  # set it to let a held initialize answer go
        if not hold_initialize:
            self.release.set()
        self._next_id = 0
        self._waiting: dict[Any, tuple[anyio.Event, list[Message]]] = {}

    async def handle(self, message: Message, tg: anyio.abc.TaskGroup) -> None:
        self.received.append(message)
        if "method" not in message:  # a response to one of our requests
            waiter = self._waiting.pop(message.get("id"), None)
            if waiter is not None:
                waiter[1].append(message)
                waiter[0].set()
        elif "id" in message:  # a request: answered in its own task, so fetch_roots may wait on the client
            tg.start_soon(self._answer, message)

    async def _answer(self, message: Message) -> None:
        method, params = message["method"], message.get("params") or {}
        result: Any
        if method == "initialize":
            await self.release.wait()
            asked = params.get("protocolVersion")
            version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
            info = {"name": "raw", "version": "0"}
            result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call" and params.get("name") == "fetch_roots":
            answer = await self.request("roots/list")
            text = json.dumps(answer.get("result", answer.get("error")))
            result = {"content": [{"type": "text", "text": text}], "isError": "error" in answer}
        elif method == "tools/call" and params.get("name") == "records":
            text = json.dumps({"received": self.received, "frames": self.frames})
            result = {"content": [{"type": "text", "text": text}]}
        else:
            await self._send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": method}})
            return
        await self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    async def request(self, method: str, params: Message | None = None) -> Message:
        """Send a request to the client and return its whole response message (``result`` or ``error``)."""
        self._next_id += 1
        request_id = f"srv-{self._next_id}"
        event, box = anyio.Event(), list[Message]()
        self._waiting[request_id] = (event, box)
        message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)
        await event.wait()
        answer: Message = box[0]
        return answer

    def methods(self) -> list[str]:
        """The method of every request and notification received, in order."""
        return [m["method"] for m in self.received if "method" in m]


def declared_capabilities(received: list[Message]) -> list[Message]:
    """The capabilities of every ``initialize`` the client sent."""
    return [m["params"]["capabilities"] for m in received if m.get("method") == "initialize"]


def count(received: list[Message], method: str) -> int:
    return sum(1 for m in received if m.get("method") == method)


# -- the client side: an SDK ClientSession of whichever major is installed ---------------------------------------


def _from_sdk(message: Any) -> Message:
    dumped: Message = message.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


def _to_sdk(message: Message) -> Any:
    from rootbound.mcp._sdk_major import MCP_V2

    if MCP_V2:
        import mcp_types

        return mcp_types.jsonrpc_message_adapter.validate_python(message)
    else:
        from mcp import types

        return types.JSONRPCMessage.model_validate(message)


@asynccontextmanager
async def memory_session(
    kwargs: Message | None = None, *, hold_initialize: bool = False
) -> AsyncIterator[tuple[Any, RawServer]]:
    """A ``ClientSession(read, write, **kwargs)`` (entered, NOT initialized) wired to a :class:`RawServer` in memory."""
    from mcp.client.session import ClientSession
    from mcp.shared.message import SessionMessage

    to_server_send, to_server_receive = anyio.create_memory_object_stream[SessionMessage](32)
    to_client_send, to_client_receive = anyio.create_memory_object_stream[SessionMessage | Exception](32)

    async def send(message: Message) -> None:
        await to_client_send.send(SessionMessage(message=_to_sdk(message)))

    server = RawServer(send, hold_initialize=hold_initialize)

    async def serve(tg: anyio.abc.TaskGroup) -> None:
        async with to_server_receive:
            async for item in to_server_receive:
                await server.handle(_from_sdk(item.message), tg)

    async with anyio.create_task_group() as tg, to_client_send:
        tg.start_soon(serve, tg)
        async with ClientSession(to_client_receive, to_server_send, **(kwargs or {})) as session:
            yield session, server
        tg.cancel_scope.cancel()


@asynccontextmanager
async def stdio_session(kwargs: Message | None = None) -> AsyncIterator[Any]:
    """A ``ClientSession`` (entered, NOT initialized) on this file run as a stdio subprocess."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).resolve())], env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write, **(kwargs or {})) as session:
        yield session


async def remote_records(session: Any) -> Message:
    """What the stdio peer received: ``{"received": [...], "frames": [raw lines]}``."""
    result = await session.call_tool("records", {})
    records: Message = json.loads(result.content[0].text)
    return records


async def fetch_roots(session: Any) -> Any:
    """Ask the peer (any transport) to send ``roots/list`` to the client; the raw result or error object."""
    result = await session.call_tool("fetch_roots", {})
    return json.loads(result.content[0].text)


def make_context(session: Any, request_id: int | str = 7) -> Any:
    """The request context the installed SDK hands a roots callback (1.x ``RequestContext``, 2.x
    ``ClientRequestContext``)."""
    from rootbound.mcp._sdk_major import MCP_V2

    if MCP_V2:
        from mcp.client.session import ClientRequestContext

        return ClientRequestContext(session=session, request_id=request_id)
    else:
        from mcp.shared.context import RequestContext

        return RequestContext(request_id=request_id, meta=None, session=session, lifespan_context=None)


async def wait_until(predicate: Callable[[], Awaitable[bool] | bool]) -> None:
    """Poll ``predicate`` until true (a hang guard, not a timing assertion)."""
    with anyio.fail_after(15):
        while True:
            value = predicate()
            if not isinstance(value, bool):
                value = await value
            if value:
                return
            await anyio.sleep(0.01)


# -- run as a script: the same peer on stdio ---------------------------------------------------------------------


async def _serve_stdio() -> None:
    stdin = anyio.wrap_file(sys.stdin)
    lock = anyio.Lock()

    async def send(message: Message) -> None:
        async with lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    server = RawServer(send)
    async with anyio.create_task_group() as tg:
        async for line in stdin:
            if not line.strip():
                continue
            server.frames.append(line.rstrip("\n"))
            await server.handle(json.loads(line), tg)
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(_serve_stdio)
