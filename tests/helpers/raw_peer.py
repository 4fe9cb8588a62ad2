"""A scripted JSON-RPC client over in-memory streams, driving the real ``Server.run`` loop.

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
from mcp_types import jsonrpc_message_adapter

RootsAnswer = Callable[[dict[str, Any]], dict[str, Any]]
"""Given the server's ``roots/list`` request, the whole JSON-RPC response object to send back."""


def answer_with(result: Any) -> RootsAnswer:
    return lambda request: {"jsonrpc": "2.0", "id": request["id"], "result": result}


class RawPeer:
    """One handshake-era connection; ``roots_requests`` counts the ``roots/list`` requests it received."""

    def __init__(self, read: Any, write: Any, answer: RootsAnswer | None) -> None:
        self._read = read
        self._write = write
        self.answer = answer
        self.roots_requests = 0
        self._ids = itertools.count(1)

    async def send(self, message: dict[str, Any]) -> None:
        await self._write.send(SessionMessage(jsonrpc_message_adapter.validate_python(message)))

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and pump messages (answering ``roots/list``) until its response arrives."""
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        while True:
            incoming: dict[str, Any] = (await self._read.receive()).message.model_dump(by_alias=True, exclude_none=True)
            if incoming.get("method") == "roots/list" and "id" in incoming:
                self.roots_requests += 1
                if self.answer is not None:
                    await self.send(self.answer(incoming))
                continue
            if incoming.get("id") == request_id:
                return incoming

    async def initialize(self, capabilities: dict[str, Any]) -> dict[str, Any]:
        response = await self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
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
    server: Server[Any], *, answer: RootsAnswer | None = None, capabilities: dict[str, Any] | None = None
) -> AsyncIterator[RawPeer]:
    """An initialised handshake-era connection; closing the client stream ends the server loop."""
    async with (
        create_client_server_memory_streams() as ((c_read, c_write), (s_read, s_write)),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(lambda: server.run(s_read, s_write, server.create_initialization_options()))
        peer = RawPeer(c_read, c_write, answer)
        await peer.initialize({"roots": {"listChanged": True}} if capabilities is None else capabilities)
        try:
            yield peer
        finally:
            await c_write.aclose()
