# mypy: ignore-errors
# Runs in a framework's own venv (.deps/frameworks/NAME), against that framework's SDK: not type-checked here.
"""fastmcp 4 ``Client`` (its own venv, with rootbound): roots from a ``RootsProvider`` through fastmcp's own
``roots=`` hook (``provider.roots_handler()``), so the era-correct capability and ``list_changed`` come with it.
Arguments go through ``Client.call_tool`` as given; ``mode`` picks the era."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from _plan import Adapter, Outcome, run
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from rootbound.mcp import RootsProvider


def text_of(content: list[Any]) -> str:
    return "\n".join(getattr(block, "text", None) or f"<{getattr(block, 'type', '?')}>" for block in content)


@contextlib.asynccontextmanager
async def build(cfg: dict[str, Any]) -> AsyncIterator[Adapter]:
    if cfg["transport"] == "stdio":
        command, *args = cfg["command"]
        transport: Any = StdioTransport(command, args)
    else:
        transport = StreamableHttpTransport(cfg["url"])
    provider = RootsProvider([])  # declares roots, lists none until set_roots
    client = Client(transport, roots=provider.roots_handler(), mode=cfg.get("mode", "auto"))
    notes: list[str] = []
    async with client:
        session = client.session
        notes.append(f"protocol {session.protocol_version}")

        async def list_tools() -> dict[str, dict[str, Any]]:
            return {tool.name: tool.input_schema for tool in await client.list_tools()}

        async def call(name: str, arguments: dict[str, Any]) -> Outcome:
            result = await client.call_tool(name, arguments, raise_on_error=False)
            return Outcome(result.is_error, text_of(result.content))

        async def set_roots(paths: list[str]) -> None:
            await provider.set_roots(paths)
            await provider.flush()  # handshake era: the list_changed is on its way before the next call

        yield Adapter(list_tools, call, set_roots, notes)
        notes.append(f"list_changed sent {provider.notifications_sent(session)}")


if __name__ == "__main__":
    run(build)
