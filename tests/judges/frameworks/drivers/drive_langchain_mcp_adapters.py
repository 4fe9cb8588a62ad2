# mypy: ignore-errors
# Runs in a framework's own venv (.deps/frameworks/NAME), against that framework's SDK: not type-checked here.
"""langchain-mcp-adapters (its own venv: its latest release needs mcp<2, so no rootbound here). Tools come from
``load_mcp_tools`` on a session of ``MultiServerMCPClient``; each call is a LangChain tool call (``ainvoke`` with
a ``ToolCall``), answered by a ``ToolMessage`` whose ``status`` says whether the tool failed. Roots: the session's
``list_roots_callback`` (``session_kwargs``), a change announced with ``send_roots_list_changed``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from _plan import Adapter, Outcome, run, uri
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools

from mcp import types


@contextlib.asynccontextmanager
async def build(cfg: dict[str, Any]) -> AsyncIterator[Adapter]:
    roots: list[types.Root] = []

    async def list_roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=list(roots))

    connection: dict[str, Any]
    if cfg["transport"] == "stdio":
        command, *args = cfg["command"]
        connection = {"transport": "stdio", "command": command, "args": args}
    else:
        connection = {"transport": "streamable_http", "url": cfg["url"]}
    connection["session_kwargs"] = {"list_roots_callback": list_roots}
    client = MultiServerMCPClient({"workspace": connection})
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
            roots[:] = [types.Root(uri=uri(path)) for path in paths]  # type: ignore[arg-type]
            await session.send_roots_list_changed()

        yield Adapter(list_tools, call, set_roots)


if __name__ == "__main__":
    run(build)
