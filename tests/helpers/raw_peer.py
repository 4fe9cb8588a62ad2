"""A scripted JSON-RPC client over in-memory streams, driving the real ``Server.run`` loop, on either SDK major.

Not the SDK client: it sends exactly the JSON it is given (malformed roots answers included) and answers the
server's ``roots/list`` requests with whatever the test supplies.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage

from rootbound.mcp._sdk_major import MCP_V2

if MCP_V2:
    from mcp_types import jsonrpc_message_adapter
else:
    from mcp.types import JSONRPCMessage

RootsAnswer = Callable[[dict[str, Any]], dict[str, Any]]
"""Given the server's ``roots/list`` request, the whole JSON-RPC response object to send back."""


def answer_with(result: Any) -> RootsAnswer:
    return lambda request: {"jsonrpc": "2.0", "id": request["id"], "result": result}


def _message(wire: dict[str, Any]) -> Any:
    if MCP_V2:
        return jsonrpc_message_adapter.validate_python(wire)
    else:
        return JSONRPCMessage.model_validate(wire)


class RawPeer:
    """One handshake-era connection; ``roots_requests`` counts the ``roots/list`` requests it received."""

    def __init__(self, read: Any, write: Any, answer: RootsAnswer | None) -> None:
        self._read = read
        self._write = write
        self.answer = answer
        self.roots_requests = 0
        self._ids = itertools.count(1)

    async def send(self, message: dict[str, Any]) -> None:
        await self._write.send(SessionMessage(_message(message)))

    def next_id(self) -> int:
        return next(self._ids)

    async def response(self, request_id: int) -> dict[str, Any]:
        """Pump messages (answering ``roots/list``) until the response to ``request_id`` arrives."""
        while True:
            incoming: dict[str, Any] = (await self._read.receive()).message.model_dump(by_alias=True, exclude_none=True)
            if incoming.get("method") == "roots/list" and "id" in incoming:
                self.roots_requests += 1
                if self.answer is not None:
                    await self.send(self.answer(incoming))
                continue
            if incoming.get("id") == request_id:
                return incoming

    async def responses(self, request_ids: list[int]) -> dict[int, dict[str, Any]]:
        """Pump messages (answering ``roots/list``) until every one of ``request_ids`` is answered, in any order."""
        found: dict[int, dict[str, Any]] = {}
        while len(found) < len(set(request_ids)):
            incoming: dict[str, Any] = (await self._read.receive()).message.model_dump(by_alias=True, exclude_none=True)
            if incoming.get("method") == "roots/list" and "id" in incoming:
                self.roots_requests += 1
                if self.answer is not None:
                    await self.send(self.answer(incoming))
            elif incoming.get("id") in request_ids:
                found[incoming["id"]] = incoming
        return found

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and pump messages (answering ``roots/list``) until its response arrives."""
        request_id = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.response(request_id)

    async def initialize(self, capabilities: dict[str, Any], protocol: str = "2025-11-25") -> dict[str, Any]:
        response = await self.request(
            "initialize",
            {
                "protocolVersion": protocol,
                "capabilities": capabilities,
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return response

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.request("tools/call", {"name": name, "arguments": arguments or {}})

    async def notify_roots_changed(self) -> None:
        await self.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})


@contextlib.asynccontextmanager
async def raw_connection(
    server: Server[Any],
    *,
    answer: RootsAnswer | None = None,
    capabilities: dict[str, Any] | None = None,
    protocol: str = "2025-11-25",
) -> AsyncIterator[RawPeer]:
    """An initialised handshake-era connection (``protocol``: the version ``initialize`` asks for); closing the
    client stream ends the server loop."""
    async with (
        create_client_server_memory_streams() as ((c_read, c_write), (s_read, s_write)),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(lambda: server.run(s_read, s_write, server.create_initialization_options()))
        peer = RawPeer(c_read, c_write, answer)
        await peer.initialize({"roots": {"listChanged": True}} if capabilities is None else capabilities, protocol)
        try:
            yield peer
        finally:
            await c_write.aclose()
