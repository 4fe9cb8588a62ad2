"""A hostile *server* against a ``RootsProvider`` client: malformed ``roots/list`` requests (handshake era) and
malformed MRTR ``inputRequests`` (2026-07-28). The client answers cleanly or refuses locally, never consults the
provider for a malformed request, sends no roots it was not asked for properly, leaks no exception text, and
keeps working on the same connection."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp.client.context import ClientRequestContext
from pydantic import ValidationError

from mcp import Client, InputRequiredRoundsExceededError, MCPError
from rootbound.mcp import RootsProvider
from tests.fixtures.hostile_server import HostileServer
from tests.fixtures.hostile_wire import MARK

pytestmark = pytest.mark.anyio

ROOTS = {"roots": [{"uri": "file:///work/a"}]}
INVALID_PARAMS = {"code": -32602, "message": "Invalid request parameters", "data": ""}

# (case, raw line, its id, the client's whole error/result member, or None: no answer is possible)
LEGACY_REQUESTS: list[tuple[str, str, Any, dict[str, Any] | None]] = [
    ("params not an object", f'{{"jsonrpc":"2.0","id":"r1","method":"roots/list","params":"{MARK}"}}', "r1", None),
    ("_meta not an object", f'{{"jsonrpc":"2.0","id":"r2","method":"roots/list","params":{{"_meta":"{MARK}"}}}}',
     "r2", {"error": INVALID_PARAMS}),
    ("progressToken an object",
     f'{{"jsonrpc":"2.0","id":"r3","method":"roots/list","params":{{"_meta":{{"progressToken":{{"{MARK}":1}}}}}}}}',
     "r3", {"error": INVALID_PARAMS}),
    ("unknown params member (open schema)",
     f'{{"jsonrpc":"2.0","id":"r4","method":"roots/list","params":{{"{MARK}":1}}}}', "r4", {"result": ROOTS}),
    ("method misspelt", '{"jsonrpc":"2.0","id":"r5","method":"roots/lists"}', "r5",
     {"error": {"code": -32601, "message": "Method not found", "data": "roots/lists"}}),
    ("id null", '{"jsonrpc":"2.0","id":null,"method":"roots/list"}', None, None),
    ("batch array", '[{"jsonrpc":"2.0","id":"r7","method":"roots/list"}]', "r7", None),
    ("not JSON", f'{{"jsonrpc":"2.0","id":"r8","method":"roots/list",{MARK}', "r8", None),
    ("no jsonrpc member", '{"id":"r9","method":"roots/list"}', "r9", None),
    ("sampling, never declared",
     '{"jsonrpc":"2.0","id":"r10","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}', "r10",
     {"error": {"code": -32600, "message": "Sampling not supported"}}),
    ("valid", '{"jsonrpc":"2.0","id":"r11","method":"roots/list"}', "r11", {"result": ROOTS}),
]  # fmt: skip


def counting_provider() -> tuple[RootsProvider, list[int]]:
    calls: list[int] = []

    def handler(ctx: ClientRequestContext) -> list[str]:
        calls.append(1)
        return ["/work/a"]

    return RootsProvider(handler=handler), calls


async def test_legacy_malformed_roots_list_requests() -> None:
    provider, calls = counting_provider()
    answers: dict[str, dict[str, Any] | None] = {}

    async def on_call(server: HostileServer, call: dict[str, Any]) -> None:
        if call["params"]["name"] == "probe":
            for case, line, request_id, expected in LEGACY_REQUESTS:
                answers[case] = await server.ask(line, request_id, wait=0.2 if expected is None else 5)
        await server.reply(call, {"content": [{"type": "text", "text": "done"}]})

    server = HostileServer(on_call, modern=False)
    with anyio.fail_after(20):
        async with Client(server.transport(), mode="legacy", **provider.client_kwargs()) as client:
            assert (await client.call_tool("probe", {})).content[0].text == "done"  # type: ignore[union-attr]
            assert (await client.call_tool("again", {})).content[0].text == "done"  # type: ignore[union-attr]
    for case, _, request_id, expected in LEGACY_REQUESTS:
        got = answers[case]
        want = None if expected is None else {"jsonrpc": "2.0", "id": request_id, **expected}
        assert got == want, case
    assert len(calls) == 2  # the provider saw only the two well-formed requests
    client_answers = [m for m in server.received if "method" not in m]
    assert MARK not in json.dumps(client_answers)  # nothing of the hostile input is echoed back
    assert all(set(m) <= {"jsonrpc", "id", "result", "error"} for m in client_answers)


MODERN_INPUT_REQUESTS: list[tuple[str, Any]] = [
    ("method not roots/list", {"roots": {"method": "roots/" + MARK}}),
    ("params not an object", {"roots": {"method": "roots/list", "params": MARK}}),
    ("params._meta not an object", {"roots": {"method": "roots/list", "params": {"_meta": MARK}}}),
    ("inputRequests a string", MARK),
    ("inputRequests an array", [{"method": "roots/list"}]),
    ("entry a string", {"roots": MARK}),
    ("neither inputRequests nor requestState", None),
]


async def test_modern_malformed_input_requests() -> None:
    provider, calls = counting_provider()
    retries: list[str] = []
    forever: list[int] = []

    async def on_call(server: HostileServer, call: dict[str, Any]) -> None:
        params = call["params"]
        name = params["name"]
        if name == "asks forever":
            forever.append(1)
            result = {"resultType": "input_required", "inputRequests": {"roots": {"method": "roots/list"}}}
            await server.send({"jsonrpc": "2.0", "id": call["id"], "result": result})
            return
        if "inputResponses" in params:
            retries.append(name)
            await server.reply(call, {"content": [{"type": "text", "text": json.dumps(params["inputResponses"])}]})
            return
        if name == "legacy request":  # a JSON-RPC roots/list on a 2026-07-28 connection (servers MUST NOT)
            answer = await server.ask('{"jsonrpc":"2.0","id":"L1","method":"roots/list"}', "L1")
            await server.reply(call, {"content": [{"type": "text", "text": json.dumps(answer)}]})
            return
        requests = dict(MODERN_INPUT_REQUESTS).get(name, {"roots": {"method": "roots/list"}})
        if name == "id and jsonrpc members (tolerated)":
            requests = {"roots": {"jsonrpc": "2.0", "id": 7, "method": "roots/list"}}
        elif name == "sampling, never declared":
            requests = {"s": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}}}
        elif name == "unknown resultType":
            await server.send({"jsonrpc": "2.0", "id": call["id"], "result": {"resultType": MARK}})
            return
        interim: dict[str, Any] = {"resultType": "input_required"}
        if requests is not None:
            interim["inputRequests"] = requests
        await server.send({"jsonrpc": "2.0", "id": call["id"], "result": interim})

    server = HostileServer(on_call, modern=True)
    with anyio.fail_after(30):
        async with Client(server.transport(), mode="2026-07-28", **provider.client_kwargs()) as client:
            for name, _ in MODERN_INPUT_REQUESTS:
                with pytest.raises(ValidationError):
                    await client.call_tool(name, {})
            with pytest.raises(ValidationError):
                await client.call_tool("unknown resultType", {})
            with pytest.raises(MCPError) as info:
                await client.call_tool("sampling, never declared", {})
            assert (info.value.code, info.value.message) == (-32600, "Sampling not supported")
            assert calls == [] and retries == []  # nothing malformed reached the provider, and no retry was sent

            result = await client.call_tool("id and jsonrpc members (tolerated)", {})
            assert json.loads(result.content[0].text) == {"roots": ROOTS}  # type: ignore[union-attr]
            result = await client.call_tool("legacy request", {})
            answer = json.loads(result.content[0].text)  # type: ignore[union-attr]
            assert answer["error"] == {"code": -32601, "message": "Method not found", "data": "roots/list"}
            assert len(calls) == 1  # no roots for a JSON-RPC request on a modern connection
            with pytest.raises(InputRequiredRoundsExceededError):
                await client.call_tool("asks forever", {})
            assert (len(forever), len(calls)) == (11, 11)  # the first call + 10 answered retries, then the cap
            result = await client.call_tool("ok", {})
            assert json.loads(result.content[0].text) == {"roots": ROOTS}  # type: ignore[union-attr]
