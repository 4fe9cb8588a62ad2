# mypy: ignore-errors
# Runs in .deps/frameworks/pydantic-ai (tests/judges/frameworks/test_docs_snippets.py); docs/client.md shows it.
import sys

import anyio
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.test import TestModel

from rootbound.mcp import RootsProvider


async def main(target: str, project: str) -> None:
    provider = RootsProvider([project])
    toolset = MCPToolset(target, roots=provider.roots_handler())
    agent = Agent(TestModel(call_tools=["list_roots"]), toolsets=[toolset])  # your model here
    async with agent:
        result = await agent.run("Which folders can you see?")
    print(result.output)


anyio.run(main, *sys.argv[1:])
