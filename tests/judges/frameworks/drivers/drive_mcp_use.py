# mypy: ignore-errors
# Runs in a framework's own venv (.deps/frameworks/NAME), against that framework's SDK: not type-checked here.
"""mcp-use (its own venv: its latest release needs mcp<2, so no rootbound here). Tools come from its LangChain
adapter (``LangChainAdapter.create_tools``), which turns each input schema into a pydantic model and passes every
field on, so options the call does not use arrive as ``null``. Roots: ``MCPClient(roots=...)`` and the
connector's ``set_roots``, which sends ``notifications/roots/list_changed``; with no roots set, mcp-use still
declares the capability and answers ``[]``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from _plan import Adapter, Outcome, run, uri
from mcp.types import Root
from mcp_use import MCPClient
from mcp_use.agents.adapters import LangChainAdapter


@contextlib.asynccontextmanager
async def build(cfg: dict[str, Any]) -> AsyncIterator[Adapter]:
    if cfg["transport"] == "stdio":
        command, *args = cfg["command"]
        server: dict[str, Any] = {"command": command, "args": args}
    else:
        server = {"url": cfg["url"]}
    client = MCPClient({"mcpServers": {"workspace": server}}, roots=[])
    session = await client.create_session("workspace")
    assert session is not None
    try:
        tools = {tool.name: tool for tool in await LangChainAdapter().create_tools(client)}
        sent: list[dict[str, Any]] = []
        original = session.connector.call_tool

        async def recording(name: str, arguments: dict[str, Any], *rest: Any, **options: Any) -> Any:
            sent.append(dict(arguments))
            result = await original(name, arguments, *rest, **options)
            outcomes.append(bool(result.isError))
            return result

        outcomes: list[bool] = []
        session.connector.call_tool = recording  # type: ignore[method-assign]
        notes: list[str] = []

        async def list_tools() -> dict[str, dict[str, Any]]:
            return {name: tool.args_schema.model_json_schema() for name, tool in tools.items()}

        async def call(name: str, arguments: dict[str, Any]) -> Outcome:
            before = len(outcomes)
            text = await tools[name].ainvoke(arguments)
            if len(outcomes) == before:
                return Outcome(True, f"not sent: {text}")
            if any(value is None for value in sent[-1].values()) and "sent null" not in notes:
                notes.append("sent null")
            return Outcome(outcomes[-1], text if isinstance(text, str) else repr(text))

        async def set_roots(paths: list[str]) -> None:
            await session.connector.set_roots([Root(uri=uri(path)) for path in paths])  # type: ignore[arg-type]

        yield Adapter(list_tools, call, set_roots, notes)
    finally:
        await client.close_all_sessions()


if __name__ == "__main__":
    run(build)
