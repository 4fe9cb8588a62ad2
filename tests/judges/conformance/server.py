"""Fixture server for the official conformance runner (`conformance server`), built on ``RootsService``.

``python tests/judges/conformance/server.py --port N`` serves Streamable HTTP on ``http://127.0.0.1:N/mcp`` (both eras:
stateful handshake sessions and stateless 2026-07-28 requests, as the SDK's session manager does). ``--port 0``
picks a free port. Either way the first stdout line is ``listening on <url>``, printed once the socket listens.

It implements the tools and the prompt the 2026-07-28 MRTR scenarios (``input-required-result-*``) and the
``server-stateless`` scenario call. Every input request goes through rootbound: roots with
``service.try_roots()``, elicitation and sampling with ``service.ask()``, and the round is closed with
``service.require_inputs()`` (which also answers ``-32021`` for a kind the request did not declare). Where a scenario
wants the server's own ``requestState``, the tool returns its own ``InputRequiredResult`` and rootbound keeps any
roots it already has next to that state; the SDK's ``RequestStateBoundary`` (installed by ``RootsService``) seals
every ``requestState``, which is what ``input-required-result-tampered-state`` checks.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from rootbound import RootSet
from rootbound.core.mrtr import MISSING, client_supports_roots
from rootbound.mcp import RootsService

logger = logging.getLogger("rootbound.conformance")

CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"

service = RootsService(warn_deprecated=False)


def _elicit(message: str, field: str, kind: str = "string") -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=message,
            requested_schema={"type": "object", "properties": {field: {"type": kind}}, "required": [field]},
        )
    )


def _sample(text: str, max_tokens: int) -> types.CreateMessageRequest:
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))],
            max_tokens=max_tokens,
        )
    )


def _invalid(what: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=f"invalid input response: {what}")


def _accepted(answer: Any, field: str) -> Any:
    """The ``content[field]`` of an accepted elicitation answer; anything else is a protocol error (-32602)."""
    if not isinstance(answer, Mapping) or not isinstance(answer.get("action"), str):
        raise _invalid("expected an ElicitResult")
    content = answer.get("content")
    if answer["action"] != "accept" or not isinstance(content, Mapping) or field not in content:
        raise _invalid(f"expected an accepted answer with {field!r}")
    return content[field]


def _sampled(answer: Any) -> str:
    """The text of a sampling answer (a ``CreateMessageResult``); anything else is a protocol error (-32602)."""
    if not isinstance(answer, Mapping) or not isinstance(answer.get("content"), Mapping):
        raise _invalid("expected a CreateMessageResult")
    text = answer["content"].get("text")
    return text if isinstance(text, str) else ""


def _declared(ctx: ServerRequestContext[Any, Any]) -> Mapping[str, Any]:
    meta = (ctx.params or {}).get("_meta")
    capabilities = meta.get(CAPABILITIES_META) if isinstance(meta, Mapping) else None
    return capabilities if isinstance(capabilities, Mapping) else {}


def _state(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The application's own ``requestState`` of this round (already unsealed and split from rootbound's)."""
    state = (ctx.params or {}).get("requestState")
    return state if isinstance(state, str) else None


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _describe(roots: RootSet) -> str:
    return ", ".join(f"{root.uri} ({root.name})" if root.name else root.uri for root in roots) or "no roots"


# ------------------------------------------------------------------------------------------------- tools


async def list_roots_tool(ctx: ServerRequestContext[Any, Any], arguments: Mapping[str, Any]) -> types.CallToolResult:
    roots = await service.roots(ctx)  # round 1: an InputRequiredResult asking roots/list; round 2: the roots
    return _text(f"roots: {_describe(roots)}")


async def multiple_inputs_tool(
    ctx: ServerRequestContext[Any, Any], arguments: Mapping[str, Any]
) -> types.CallToolResult | types.InputRequiredResult:
    roots = await service.try_roots(ctx)
    name = service.ask("user_name", _elicit("What is your name?", "name"), ctx)
    greeting = service.ask("greeting", _sample("Generate a greeting", 50), ctx)
    pending: dict[str, types.InputRequest] = {}
    if roots is MISSING:
        pending[service.key] = types.ListRootsRequest()
    if name is MISSING:
        pending["user_name"] = _elicit("What is your name?", "name")
    if greeting is MISSING:
        pending["greeting"] = _sample("Generate a greeting", 50)
    if pending or not isinstance(roots, RootSet):
        # The scenario wants a requestState of the server's own: rootbound adds any roots it already holds.
        return types.InputRequiredResult(input_requests=pending, request_state="multiple-inputs")
    return _text(f"{_sampled(greeting)} {_accepted(name, 'name')}; roots: {_describe(roots)}")


async def elicitation_tool(ctx: ServerRequestContext[Any, Any], arguments: Mapping[str, Any]) -> types.CallToolResult:
    name = service.ask("user_name", _elicit("What is your name?", "name"), ctx)
    service.require_inputs(ctx)
    return _text(f"Hello, {_accepted(name, 'name')}!")


async def sampling_tool(ctx: ServerRequestContext[Any, Any], arguments: Mapping[str, Any]) -> types.CallToolResult:
    answer = service.ask("capital_question", _sample("What is the capital of France?", 100), ctx)
    service.require_inputs(ctx)
    return _text(_sampled(answer))


async def request_state_tool(
    ctx: ServerRequestContext[Any, Any], arguments: Mapping[str, Any]
) -> types.CallToolResult | types.InputRequiredResult:
    answer = service.ask("confirm", _elicit("Please confirm", "ok", "boolean"), ctx)
    if answer is MISSING or _state(ctx) != "confirm-pending":
        return types.InputRequiredResult(
            input_requests={"confirm": _elicit("Please confirm", "ok", "boolean")}, request_state="confirm-pending"
        )
    return _text(f"state-ok, confirmed={_accepted(answer, 'ok')}")


async def multi_round_tool(
    ctx: ServerRequestContext[Any, Any], arguments: Mapping[str, Any]
) -> types.CallToolResult | types.InputRequiredResult:
    state = _state(ctx)
    if state is not None and state.startswith("step2:"):
        color = service.ask("step2", _elicit("Step 2: What is your favorite color?", "color"), ctx)
        if color is not MISSING:
            return _text(f"{state.removeprefix('step2:')} likes {_accepted(color, 'color')}")
        return types.InputRequiredResult(
            input_requests={"step2": _elicit("Step 2: What is your favorite color?", "color")}, request_state=state
        )
    name = service.ask("step1", _elicit("Step 1: What is your name?", "name"), ctx)
    if name is MISSING or state != "step1":
        return types.InputRequiredResult(
            input_requests={"step1": _elicit("Step 1: What is your name?", "name")}, request_state="step1"
        )
    return types.InputRequiredResult(
        input_requests={"step2": _elicit("Step 2: What is your favorite color?", "color")},
        request_state=f"step2:{_accepted(name, 'name')}",
    )


async def tampered_state_tool(
    ctx: ServerRequestContext[Any, Any], arguments: Mapping[str, Any]
) -> types.CallToolResult | types.InputRequiredResult:
    # A tampered requestState never reaches this handler: the SDK's RequestStateBoundary rejects it (-32602).
    answer = service.ask("confirm", _elicit("Please confirm", "ok", "boolean"), ctx)
    if answer is MISSING or _state(ctx) != "sealed":
        return types.InputRequiredResult(
            input_requests={"confirm": _elicit("Please confirm", "ok", "boolean")}, request_state="sealed"
        )
    return _text(f"state verified, confirmed={_accepted(answer, 'ok')}")


async def capabilities_tool(ctx: ServerRequestContext[Any, Any], arguments: Mapping[str, Any]) -> types.CallToolResult:
    """Asks only for the kinds this request declared (roots included): never an undeclared input request."""
    declared = _declared(ctx)
    answers: dict[str, Any] = {}
    if isinstance(declared.get("sampling"), Mapping):
        answers["sampling"] = service.ask("capital_question", _sample("What is the capital of France?", 100), ctx)
    if isinstance(declared.get("elicitation"), Mapping):
        answers["elicitation"] = service.ask("user_name", _elicit("What is your name?", "name"), ctx)
    if client_supports_roots(declared):
        answers["roots"] = await service.try_roots(ctx)
    service.require_inputs(ctx)
    return _text("answered: " + (", ".join(sorted(answers)) or "nothing was declared"))


async def missing_capability_tool(
    ctx: ServerRequestContext[Any, Any], arguments: Mapping[str, Any]
) -> types.CallToolResult:
    # Needs sampling: -32021 (HTTP 400) with requiredCapabilities {"sampling": {}} when the request lacks it.
    answer = service.ask("probe", _sample("capability probe", 10), ctx)
    service.require_inputs(ctx)
    return _text(f"sampled: {_sampled(answer)}")


async def streaming_elicitation_tool(
    ctx: ServerRequestContext[Any, Any], arguments: Mapping[str, Any]
) -> types.CallToolResult:
    # The ask travels inside the result (MRTR), never as a server-initiated request on the response stream.
    answer = service.ask("confirm", _elicit("Confirm?", "ok", "boolean"), ctx)
    service.require_inputs(ctx)
    return _text(f"confirmed={_accepted(answer, 'ok')}")


async def logging_tool(ctx: ServerRequestContext[Any, Any], arguments: Mapping[str, Any]) -> types.CallToolResult:
    # Logged on the server only: the request set no logLevel, so no notifications/message goes to the client.
    logger.info("test_logging_tool called")
    return _text("logged")


TOOLS = {
    "test_input_required_result_list_roots": list_roots_tool,
    "test_input_required_result_multiple_inputs": multiple_inputs_tool,
    "test_input_required_result_elicitation": elicitation_tool,
    "test_input_required_result_sampling": sampling_tool,
    "test_input_required_result_request_state": request_state_tool,
    "test_input_required_result_multi_round": multi_round_tool,
    "test_input_required_result_tampered_state": tampered_state_tool,
    "test_input_required_result_capabilities": capabilities_tool,
    "test_missing_capability": missing_capability_tool,
    "test_streaming_elicitation": streaming_elicitation_tool,
    "test_logging_tool": logging_tool,
}
PROMPT = "test_input_required_result_prompt"


async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[types.Tool(name=name, description=name, input_schema={"type": "object"}) for name in TOOLS]
    )


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    tool = TOOLS.get(params.name)
    if tool is None:
        raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool: {params.name}")
    return await tool(ctx, params.arguments or {})


async def list_prompts(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[types.Prompt(name=PROMPT, description="MRTR on prompts/get")])


async def get_prompt(
    ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
) -> types.GetPromptResult | types.InputRequiredResult:
    if params.name != PROMPT:
        raise MCPError(code=types.INVALID_PARAMS, message=f"unknown prompt: {params.name}")
    context = service.ask("user_context", _elicit("What context should the prompt use?", "context"), ctx)
    service.require_inputs(ctx)
    text = f"Use this context: {_accepted(context, 'context')}"
    return types.GetPromptResult(
        messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))]
    )


def build_server() -> Server[Any]:
    server: Server[Any] = Server(
        "rootbound-conformance",
        version="0.1.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    return service.install(server)


async def serve(port: int) -> None:
    server = build_server()
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*"],
    )
    app = server.streamable_http_app(transport_security=security)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    uv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: uv.serve(sockets=[sock]))
        with anyio.fail_after(10):
            while not uv.started:
                await anyio.sleep(0.01)
        print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, required=True, help="TCP port on 127.0.0.1 (0: pick a free one)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    anyio.run(serve, args.port)


if __name__ == "__main__":
    main()
