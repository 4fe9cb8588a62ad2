# mypy: ignore-errors
# Runs in a framework's own venv (.deps/frameworks/NAME), against that framework's SDK: not type-checked here.
"""smolagents through mcpadapt, on mcp 1.x (its own venv; rootbound is not installed there: the server is
``rootbound serve`` from this checkout's venv, a stdio subprocess). ``ToolCollection.from_mcp`` gives the Tool objects
a ``CodeAgent`` would be handed; no LLM runs here, so the driver calls those Tool objects itself, with the argument
spellings the config lists (the ones a model following the tools' signatures writes). It reports each tool's
``inputs`` as smolagents shows them and, per call, the text the agent would see and the ``isError`` of the MCP
result behind it (mcpadapt hands back the text alone; the SDK's ``ClientSession.call_tool`` is wrapped to see it)."""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

from smolagents import ToolCollection

from mcp import ClientSession, StdioServerParameters

ERRORS: list[bool] = []  # isError of every tools/call result, in order


def _record_is_error() -> None:
    original = ClientSession.call_tool

    async def call_tool(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = await original(self, *args, **kwargs)
        ERRORS.append(bool(result.isError))
        return result

    ClientSession.call_tool = call_tool


def main() -> dict[str, Any]:
    with open(sys.argv[1], encoding="utf-8") as handle:
        cfg = json.load(handle)
    _record_is_error()
    command, *args = cfg["command"]
    env = {
        **os.environ,
        "PYTHONPATH": cfg.get("pythonpath", ""),
    }  # the server's own path (the old code, to show a fail)
    params = StdioServerParameters(command=command, args=args, env=env)
    report: dict[str, Any] = {"calls": []}
    with ToolCollection.from_mcp(params, trust_remote_code=True, structured_output=False) as collection:
        tools = {tool.name: tool for tool in collection.tools}
        report["inputs"] = {name: tool.inputs for name, tool in tools.items()}
        for name, arguments in cfg["calls"]:
            before = len(ERRORS)
            try:
                text = tools[name](**arguments)  # what the agent's generated code does: tool(name=value, ...)
                outcome = {"text": str(text)[:4000], "is_error": ERRORS[before:] != [False]}
            except Exception as error:  # recorded: the judge decides
                outcome = {"text": f"{type(error).__name__}: {error}"[:4000], "is_error": True, "raised": True}
            report["calls"].append({"tool": name, "arguments": arguments, **outcome})
    return report


if __name__ == "__main__":
    try:
        result = main()
    except BaseException:  # the report carries the failure: the test prints it
        result = {"crashed": traceback.format_exc()[-6000:]}
    print(json.dumps(result), flush=True)
