# mypy: ignore-errors
"""Run the tool schemas of ``rootbound serve`` through agent frameworks' MCP schema converters (issue 35).

Run by a converter venv's Python (``.deps/converters-mcp1`` or ``-mcp2``), never by the suite's: ``python
drive_converters.py TOOLS.json CONVERTER...``. TOOLS.json is the ``tools/list`` answer of ``rootbound serve`` (the
``tools`` array, wire form). Each converter is the framework's own function that turns an MCP tool into what its
model sees, imported and called as the framework calls it; no model, no network (a session that is never
connected, or a stand-in that only answers ``list_tools`` with TOOLS.json). For each tool it records the argument
names the converted tool offers, or the error the converter raised. Prints one JSON line: ``{converter: {"package":
NAME, "version": V, "tools": {tool: {"arguments": [...]} | {"error": TEXT}}}}``; the judging is the test's.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

Converted = dict[str, list[str]]  # tool name -> the argument names the converted tool offers


class ListingOnly:
    """A client session that answers ``list_tools`` with the dumped tools and nothing else (never connected)."""

    def __init__(self, tools: list[Any]) -> None:
        self.tools = tools

    async def list_tools(self, *args: Any, **kwargs: Any) -> Any:
        import mcp.types

        return mcp.types.ListToolsResult(tools=self.tools)

    async def call_tool(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no tool is called here")


def _input(tool: Any) -> dict[str, Any]:
    """The tool's input schema on either SDK major (``inputSchema`` on 1.x, ``input_schema`` on 2.x)."""
    schema: dict[str, Any] = getattr(tool, "input_schema", None) or tool.inputSchema
    return schema


def _names(schema: Any) -> list[str]:
    return sorted((schema or {}).get("properties", {}))


def _per_tool(tools: list[Any], convert: Callable[[Any], list[str] | dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tool in tools:
        try:
            converted = convert(tool)
            out[tool.name] = converted if isinstance(converted, dict) else {"arguments": sorted(converted)}
        except Exception as error:  # the converter's own failure is the finding
            out[tool.name] = {"error": _describe(error)}
    return out


def _describe(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" ({frames[-1].filename.rsplit('site-packages/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {str(error)[:300]}{where}"


# --- the converters ------------------------------------------------------------------------------------------------


def semantic_kernel(tools: list[Any]) -> dict[str, Any]:
    """``MCPStdioPlugin.load_tools`` + ``Kernel.add_plugin`` (what ``async with MCPStdioPlugin(...)`` does), then
    each function in OpenAI function-calling form (what the chat completion services send)."""
    from semantic_kernel import Kernel
    from semantic_kernel.connectors.ai.function_calling_utils import kernel_function_metadata_to_function_call_format
    from semantic_kernel.connectors.mcp import MCPStdioPlugin

    out: dict[str, Any] = {}
    for tool in tools:  # one plugin per tool: the plugin loads what it can, so a failure is per tool
        try:
            plugin = MCPStdioPlugin(name="rootbound", command="rootbound", args=["serve"])
            plugin.session = ListingOnly([tool])
            asyncio.run(plugin.load_tools())
            kernel = Kernel()
            loaded = kernel.add_plugin(plugin)
            functions = list(loaded.functions.values())
            if len(functions) != 1:
                raise AssertionError(f"the plugin loaded {len(functions)} functions")
            spec = kernel_function_metadata_to_function_call_format(functions[0].metadata)
            out[tool.name] = {"arguments": _names(spec["function"]["parameters"])}
        except Exception as error:
            out[tool.name] = {"error": _describe(error)}
    return out


def autogen_ext(tools: list[Any]) -> dict[str, Any]:
    """``mcp_server_tools`` (the whole server at once, as users call it), then each adapter's model schema."""
    from autogen_ext.tools.mcp import StdioServerParams, mcp_server_tools

    params = StdioServerParams(command="rootbound", args=["serve"])
    try:
        adapters = asyncio.run(mcp_server_tools(params, session=ListingOnly(tools)))
    except Exception as error:
        return {tool.name: {"error": "mcp_server_tools: " + _describe(error)} for tool in tools}
    by_name = {adapter.name: adapter for adapter in adapters}
    return _per_tool(tools, lambda tool: _names(by_name[tool.name].schema["parameters"]))


def dspy(tools: list[Any]) -> dict[str, Any]:
    """``dspy.Tool.from_mcp_tool``, then the LiteLLM function call it is sent as."""
    import dspy as dspy_package

    def convert(tool: Any) -> list[str]:
        converted = dspy_package.Tool.from_mcp_tool(ListingOnly([]), tool)
        call = converted.format_as_litellm_function_call()
        return _names(call["function"]["parameters"])

    return _per_tool(tools, convert)


def google_genai(tools: list[Any]) -> dict[str, Any]:
    """``_mcp_utils.mcp_to_gemini_tool``: what ``generate_content`` does with an MCP session in ``tools``."""
    from google.genai import _mcp_utils

    def convert(tool: Any) -> list[str]:
        gemini = _mcp_utils.mcp_to_gemini_tool(tool)
        declaration = gemini.function_declarations[0]
        return sorted((declaration.parameters.properties or {}) if declaration.parameters else {})

    return _per_tool(tools, convert)


def _agents_server() -> Any:
    from agents.mcp import MCPServerStdio

    return MCPServerStdio(params={"command": "rootbound", "args": ["serve"]})  # never connected


def openai_agents_strict(tools: list[Any]) -> dict[str, Any]:
    """``MCPUtil.to_function_tool(..., convert_schemas_to_strict=True)``, and whether the strict form was made
    (openai-agents falls back to the schema as listed, sent non-strict, when it cannot make one)."""
    from agents.mcp.util import MCPUtil

    server = _agents_server()

    def convert(tool: Any) -> dict[str, Any]:
        function = MCPUtil.to_function_tool(tool, server, convert_schemas_to_strict=True)
        return {"arguments": _names(function.params_json_schema), "strict": bool(function.strict_json_schema)}

    return _per_tool(tools, convert)


def openai_agents(tools: list[Any]) -> dict[str, Any]:
    """``MCPUtil.to_function_tool`` as ``MCPServerStdio`` calls it by default (no strict conversion)."""
    from agents.mcp.util import MCPUtil

    server = _agents_server()
    return _per_tool(tools, lambda tool: _names(MCPUtil.to_function_tool(tool, server, False).params_json_schema))


def pydantic_ai_openai(tools: list[Any]) -> dict[str, Any]:
    """pydantic-ai's OpenAI schema transformer in strict mode (what an OpenAI model gets for a strict tool)."""
    from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer

    return _per_tool(tools, lambda tool: _names(OpenAIJsonSchemaTransformer(_input(tool), strict=True).walk()))


def pydantic_ai_google(tools: list[Any]) -> dict[str, Any]:
    """pydantic-ai's Google (Gemini) schema transformer."""
    from pydantic_ai.profiles.google import GoogleJsonSchemaTransformer

    return _per_tool(tools, lambda tool: _names(GoogleJsonSchemaTransformer(_input(tool)).walk()))


def google_adk(tools: list[Any]) -> dict[str, Any]:
    """ADK's ``McpTool`` declaration (what ``McpToolset`` hands Gemini), with ADK's default feature flags."""
    from google.adk.tools.mcp_tool.mcp_session_manager import MCPSessionManager, StdioConnectionParams
    from google.adk.tools.mcp_tool.mcp_tool import McpTool

    from mcp import StdioServerParameters

    manager = MCPSessionManager(
        StdioConnectionParams(server_params=StdioServerParameters(command="rootbound", args=["serve"]))
    )

    def convert(tool: Any) -> list[str]:
        declaration = McpTool(mcp_tool=tool, mcp_session_manager=manager)._get_declaration()
        if declaration.parameters is not None:
            return sorted(declaration.parameters.properties or {})
        return _names(declaration.parameters_json_schema)

    return _per_tool(tools, convert)


def langchain(tools: list[Any]) -> dict[str, Any]:
    """langchain-mcp-adapters' ``convert_mcp_tool_to_langchain_tool``, then ``convert_to_openai_tool`` (what a
    chat model's ``bind_tools`` sends)."""
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool

    def convert(tool: Any) -> list[str]:
        converted = convert_mcp_tool_to_langchain_tool(ListingOnly([]), tool)
        return _names(convert_to_openai_tool(converted)["function"]["parameters"])

    return _per_tool(tools, convert)


CONVERTERS: dict[str, tuple[str, Callable[[list[Any]], dict[str, Any]]]] = {
    "semantic-kernel": ("semantic-kernel", semantic_kernel),
    "autogen-ext mcp_server_tools": ("autogen-ext", autogen_ext),
    "dspy Tool.from_mcp_tool": ("dspy", dspy),
    "google-genai mcp_to_gemini_tool": ("google-genai", google_genai),
    "openai-agents strict": ("openai-agents", openai_agents_strict),
    "openai-agents": ("openai-agents", openai_agents),
    "pydantic-ai OpenAI strict": ("pydantic-ai-slim", pydantic_ai_openai),
    "pydantic-ai Google": ("pydantic-ai-slim", pydantic_ai_google),
    "google-adk McpTool": ("google-adk", google_adk),
    "langchain-mcp-adapters + convert_to_openai_tool": ("langchain-mcp-adapters", langchain),
}


def main() -> None:
    import mcp.types

    with open(sys.argv[1], encoding="utf-8") as dumped:
        listed = json.load(dumped)
    tools = [mcp.types.Tool.model_validate(tool) for tool in listed]
    report: dict[str, Any] = {}
    for name in sys.argv[2:]:
        package, run = CONVERTERS[name]
        report[name] = {"package": package, "version": version(package), "mcp": version("mcp"), "tools": run(tools)}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
