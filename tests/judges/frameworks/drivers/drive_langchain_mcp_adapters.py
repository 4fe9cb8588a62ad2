# mypy: ignore-errors
# Runs in a framework's own venv (.deps/frameworks/NAME), against that framework's SDK: not type-checked here.
"""langchain-mcp-adapters (its own venv: its latest release needs mcp<2, so rootbound there runs on mcp 1.x,
installed by pip from this checkout). Tools come from ``load_mcp_tools`` on a session of ``MultiServerMCPClient``;
each call is a LangChain tool call (``ainvoke`` with a ``ToolCall``), answered by a ``ToolMessage`` whose ``status``
says whether the tool failed. Roots: a ``RootsProvider`` through the connection's ``session_kwargs``
(``provider.session_kwargs()``: the session's ``list_roots_callback``); a change is ``provider.set_roots``, whose
coalesced ``list_changed`` is flushed before the next call."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from _plan import Adapter, Outcome, run
from _wire import notes_for, record_initialize

record_initialize()  # before rootbound.mcp is imported (see _wire)

from langchain_mcp_adapters.client import MultiServerMCPClient  # noqa: E402
from langchain_mcp_adapters.tools import load_mcp_tools  # noqa: E402

from rootbound.mcp import RootsProvider  # noqa: E402


@contextlib.asynccontextmanager
async def build(cfg: dict[str, Any]) -> AsyncIterator[Adapter]:
    provider = RootsProvider([])  # declares roots, lists none until set_roots
    connection: dict[str, Any]
    if cfg["transport"] == "stdio":
        command, *args = cfg["command"]
        connection = {"transport": "stdio", "command": command, "args": args}
    else:
        connection = {"transport": "streamable_http", "url": cfg["url"]}
    connection["session_kwargs"] = dict(provider.session_kwargs())
    client = MultiServerMCPClient({"workspace": connection})
    notes: list[str] = []
    async with client.session("workspace") as session:
        tools = {tool.name: tool for tool in await load_mcp_tools(session)}
        calls = 0

        async def list_tools() -> dict[str, dict[str, Any]]:
            return {
                name: dict(tool.args_schema) if isinstance(tool.args_schema, dict) else {}
                for name, tool in tools.items()
            }

        async def call(name: str, arguments: dict[str, Any]) -> Outcome:
            nonlocal calls
            calls += 1
            message = await tools[name].ainvoke(
                {"type": "tool_call", "name": name, "args": arguments, "id": f"c{calls}"}
            )
            content = message.content if isinstance(message.content, str) else repr(message.content)
            return Outcome(message.status == "error", content)

        async def set_roots(paths: list[str]) -> None:
            await provider.set_roots(paths)
            await provider.flush()  # the list_changed is on its way before the next call

        yield Adapter(list_tools, call, set_roots, notes)
        notes.extend(notes_for(provider))


if __name__ == "__main__":
    run(build)
