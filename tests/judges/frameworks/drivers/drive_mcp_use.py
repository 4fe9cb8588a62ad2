# mypy: ignore-errors
# Runs in a framework's own venv (.deps/frameworks/NAME), against that framework's SDK: not type-checked here.
"""mcp-use (its own venv: its latest release needs mcp<2, so rootbound there runs on mcp 1.x, installed by pip from
this checkout). Tools come from its LangChain adapter (``LangChainAdapter.create_tools``), which turns each input
schema into a pydantic model and passes every field on, so options the call does not use arrive as ``null``.
Roots: a ``RootsProvider`` as ``MCPClient(list_roots_callback=provider.list_roots)``; mcp-use's connector keeps it
and hands the session a method of its own that delegates to it, where rootbound still finds the provider (so the
capability and ``list_changed`` are the provider's). A change is ``provider.set_roots`` (not the connector's
``set_roots``, which would answer from mcp-use's own list), flushed before the next call."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from _plan import Adapter, Outcome, run
from _wire import notes_for, record_initialize

record_initialize()  # before rootbound.mcp is imported (see _wire)

from mcp_use import MCPClient  # noqa: E402
from mcp_use.agents.adapters import LangChainAdapter  # noqa: E402

from rootbound.mcp import RootsProvider  # noqa: E402


@contextlib.asynccontextmanager
async def build(cfg: dict[str, Any]) -> AsyncIterator[Adapter]:
    if cfg["transport"] == "stdio":
        command, *args = cfg["command"]
        server: dict[str, Any] = {"command": command, "args": args}
    else:
        server = {"url": cfg["url"]}
    provider = RootsProvider([])  # declares roots, lists none until set_roots
    client = MCPClient({"mcpServers": {"workspace": server}}, list_roots_callback=provider.list_roots)
    session = await client.create_session("workspace")
    assert session is not None
    notes: list[str] = []
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
            await provider.set_roots(paths)
            await provider.flush()  # the list_changed is on its way before the next call

        yield Adapter(list_tools, call, set_roots, notes)
        notes.extend(notes_for(provider))
    finally:
        await client.close_all_sessions()


if __name__ == "__main__":
    run(build)
