# mypy: ignore-errors
# Runs in a framework's own venv (.deps/frameworks/NAME), against that framework's SDK: not type-checked here.
"""pydantic-ai (its own venv, with rootbound): ``MCPToolset`` with roots from a ``RootsProvider``
(``roots=provider.roots_handler()``), driven by an ``Agent`` on a ``FunctionModel``: each call is a tool call the
scripted model makes from the tool definitions pydantic-ai offers it, validated and sent by pydantic-ai; the
answer comes back to the model as a tool return, or as a retry prompt when the tool failed. No LLM."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from _plan import Adapter, Outcome, run
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from rootbound.mcp import RootsProvider


@contextlib.asynccontextmanager
async def build(cfg: dict[str, Any]) -> AsyncIterator[Adapter]:
    target: Any
    if cfg["transport"] == "stdio":
        command, *args = cfg["command"]
        target = StdioTransport(command, args)
    else:
        target = cfg["url"]
    provider = RootsProvider([])
    toolset = MCPToolset(target, roots=provider.roots_handler())
    offered: dict[str, dict[str, Any]] = {}
    pending: list[tuple[str, dict[str, Any]]] = []
    answers: list[Outcome] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        for tool in info.function_tools:
            offered[tool.name] = tool.parameters_json_schema
        last = messages[-1].parts if messages else []
        for part in last:
            if isinstance(part, ToolReturnPart):  # outcome: 'success', or 'retried'/'failed' for a tool error
                content = part.content
                text = content if isinstance(content, str) else json.dumps(content, default=str)
                answers.append(Outcome(part.outcome != "success", text))
            elif isinstance(part, RetryPromptPart):
                answers.append(Outcome(True, part.model_response()))
        if pending:
            name, arguments = pending.pop()
            return ModelResponse(parts=[ToolCallPart(name, arguments)])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model), toolsets=[toolset])
    async with agent:
        await agent.run("list the tools")  # the model sees every tool definition

        async def list_tools() -> dict[str, dict[str, Any]]:
            return dict(offered)

        async def call(name: str, arguments: dict[str, Any]) -> Outcome:
            pending.append((name, arguments))
            before = len(answers)
            await agent.run(f"call {name}")
            return answers[-1] if len(answers) > before else Outcome(True, "no tool answer reached the model")

        async def set_roots(paths: list[str]) -> None:
            await provider.set_roots(paths)
            await provider.flush()

        yield Adapter(list_tools, call, set_roots)


if __name__ == "__main__":
    run(build)
