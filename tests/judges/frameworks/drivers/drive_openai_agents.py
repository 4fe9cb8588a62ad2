# mypy: ignore-errors
# Runs in a framework's own venv (.deps/frameworks/NAME), against that framework's SDK: not type-checked here.
"""openai-agents (its own venv, mcp 2.x): ``MCPServerStdio`` / ``MCPServerStreamableHttp`` with
``convert_schemas_to_strict=True``. Each call is the one a strict-mode model must make: every property present,
``null`` for the options it does not use, checked against the strict schema before it is sent through the
``FunctionTool`` the SDK built. openai-agents has no roots API: the DIR is the workspace."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from _plan import Adapter, Outcome, run
from agents import Agent, RunContextWrapper
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp, MCPUtil
from agents.tool_context import ToolContext
from jsonschema import Draft202012Validator


def strict_call(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments a strict-mode model sends: every property, ``null`` where the call does not use it."""
    full = _fill(schema, arguments)
    Draft202012Validator(schema).validate(full)  # the strict schema accepts it, or this raises
    return full


def _fill(schema: dict[str, Any], value: Any) -> Any:
    """Every property of every object (in lists too) present: strict mode makes them all required. An optional
    value (``anyOf [T, null]``) is filled by its non-null branch."""
    if value is not None and "anyOf" in schema:
        kind = "object" if isinstance(value, dict) else "array" if isinstance(value, list) else None
        branch = next((b for b in schema["anyOf"] if isinstance(b, dict) and b.get("type") == kind), None)
        if branch is not None:
            return _fill(branch, value)
    if isinstance(value, dict) and "properties" in schema:
        return {name: _fill(sub, value.get(name)) for name, sub in schema["properties"].items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_fill(schema["items"], item) for item in value]
    return value


@contextlib.asynccontextmanager
async def build(cfg: dict[str, Any]) -> AsyncIterator[Adapter]:
    if cfg["transport"] == "stdio":
        command, *args = cfg["command"]
        server: Any = MCPServerStdio({"command": command, "args": args}, client_session_timeout_seconds=30)
    else:
        server = MCPServerStreamableHttp({"url": cfg["url"]}, client_session_timeout_seconds=30)
    results: list[Any] = []
    original = server.call_tool

    async def recording(tool_name: str, arguments: dict[str, Any] | None, meta: Any = None) -> Any:
        result = await original(tool_name, arguments, meta)
        results.append(result)
        return result

    server.call_tool = recording
    agent = Agent(name="judge", mcp_servers=[server])
    notes: list[str] = []
    async with server:
        context = RunContextWrapper(context=None)
        tools = await MCPUtil.get_function_tools(server, True, context, agent, failure_error_function=None)
        by_name = {tool.name: tool for tool in tools}
        not_strict = sorted(name for name, tool in by_name.items() if not tool.strict_json_schema)
        if not_strict:
            notes.append(f"not strict: {not_strict}")

        async def list_tools() -> dict[str, dict[str, Any]]:
            return {name: tool.params_json_schema for name, tool in by_name.items()}

        async def call(name: str, arguments: dict[str, Any]) -> Outcome:
            tool = by_name[name]
            payload = json.dumps(strict_call(tool.params_json_schema, arguments))
            ctx = ToolContext(context=None, tool_name=name, tool_call_id=f"call-{len(results)}", tool_arguments=payload)
            before = len(results)
            output = await tool.on_invoke_tool(ctx, payload)
            is_error = len(results) == before or bool(results[-1].is_error)
            return Outcome(is_error, output if isinstance(output, str) else json.dumps(output, default=str))

        yield Adapter(list_tools, call, None, notes)


if __name__ == "__main__":
    run(build)
