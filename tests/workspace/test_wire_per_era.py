"""Every answer of ``rootbound serve`` in its era's wire form, as raw JSON over real Streamable HTTP (issue 35 #5).

* An unknown tool is the JSON-RPC error ``-32602`` the spec names, in both eras and on both transports, with a
  message that says how to fix the call and never the name the caller sent.
* ``resultType: "complete"`` is on every 2026-07-28 ``tools/call`` result and on none of the handshake era's, on
  every path that answers one: a tool's result, a tool's error, the argument check's refusal (a middleware
  short-circuit the SDK's shaping never sees), a denial of the roots service's middleware (``tool_failure``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from rootbound.core.errors import InvalidRootsAnswer
from rootbound.mcp._bridges import tool_failure
from rootbound.workspace.tools.registry import UNKNOWN_TOOL
from tests.helpers.serve_process import http_serve, serve

pytestmark = pytest.mark.anyio
ACCEPT = "application/json, text/event-stream"
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
MARKER = "evil_tool_7c41"
"""The unknown tool's name: it must never come back."""

_ids = itertools.count(1)


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("wire")
    (work / "notes.md").write_text("hello\n")
    with http_serve(["--roots-timeout", "1", str(work)]) as served:
        yield served


def _body(response: httpx2.Response) -> dict[str, Any]:
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    answer: dict[str, Any] = json.loads(text)
    return answer


async def _post(http: httpx2.AsyncClient, url: str, headers: dict[str, str], method: str, params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
    return _body(await http.post(url, json=body, headers=headers))


async def _handshake_session(
    http: httpx2.AsyncClient, url: str, capabilities: dict[str, Any] | None = None
) -> dict[str, str]:
    headers = {"accept": ACCEPT, "content-type": "application/json"}
    init = {
        "protocolVersion": HANDSHAKE,
        "capabilities": capabilities or {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": "initialize", "params": init}
    response = await http.post(url, json=body, headers=headers)
    assert _body(response)["result"]["protocolVersion"] == HANDSHAKE
    headers["mcp-protocol-version"] = HANDSHAKE
    if "mcp-session-id" in response.headers:
        headers["mcp-session-id"] = response.headers["mcp-session-id"]
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


def _modern(tool: str, capabilities: dict[str, Any] | None = None) -> tuple[dict[str, str], dict[str, Any]]:
    headers = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    return headers, meta


CALLS = [
    ("a result", "read_file", {"path": "notes.md"}, False),
    ("a tool error", "read_file", {"path": "missing.md"}, True),
    ("the argument check", "read_file", {"pathx": "notes.md"}, True),
    ("the argument check, a list", "read_multiple_files", {"paths": "notes.md"}, True),
]


async def test_handshake_results_never_carry_result_type(url: str) -> None:
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=30) as http:
            headers = await _handshake_session(http, url)
            for what, tool, arguments, is_error in CALLS:
                answer = await _post(http, url, headers, "tools/call", {"name": tool, "arguments": arguments})
                result = answer["result"]
                assert result["isError"] is is_error, what
                assert "resultType" not in result, what
                assert "_meta" not in result, what  # nor the 2026-07-28 serverInfo stamp
            listed = await _post(http, url, headers, "tools/list", {})
            assert "resultType" not in listed["result"]
            # The roots service's own denial (its middleware's tool_failure): a client that declares roots and
            # never answers roots/list (the server runs with --roots-timeout 1).
            headers = await _handshake_session(http, url, {"roots": {}})
            params = {"name": "read_file", "arguments": {"path": "notes.md"}}
            denied = (await _post(http, url, headers, "tools/call", params))["result"]
    assert denied["isError"] is True and "roots" in denied["content"][0]["text"]
    assert "resultType" not in denied and "hello" not in json.dumps(denied)


async def test_modern_results_always_carry_result_type(url: str) -> None:
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=30) as http:
            for what, tool, arguments, is_error in CALLS:
                headers, meta = _modern(tool)
                params = {"name": tool, "arguments": arguments, "_meta": meta}
                result = (await _post(http, url, headers, "tools/call", params))["result"]
                assert result["isError"] is is_error, what
                assert result["resultType"] == "complete", what
                assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "rootbound-workspace", what


def test_the_middlewares_denial_has_its_eras_form() -> None:
    """``tool_failure`` (the roots service's middleware and mcp 1.x's wrapper) shapes the result per era."""
    assert "resultType" not in tool_failure(InvalidRootsAnswer(), HANDSHAKE)
    assert tool_failure(InvalidRootsAnswer(), MODERN)["resultType"] == "complete"


@pytest.mark.parametrize("era", [HANDSHAKE, MODERN])
async def test_unknown_tool_is_a_json_rpc_error_over_http(url: str, era: str) -> None:
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=30) as http:
            params: dict[str, Any] = {"name": MARKER, "arguments": {}}
            if era == HANDSHAKE:
                headers = await _handshake_session(http, url)
            else:
                headers, meta = _modern(MARKER)
                params["_meta"] = meta
            answer = await _post(http, url, headers, "tools/call", params)
    assert "result" not in answer
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"] == UNKNOWN_TOOL
    assert MARKER not in json.dumps(answer)


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_unknown_tool_is_a_json_rpc_error_over_stdio(tmp_path: Path, mode: str) -> None:
    with anyio.fail_after(60):
        async with serve("stdio", [str(tmp_path)], mode=mode, provider=None) as client:
            with pytest.raises(MCPError) as unknown:
                await client.call_tool(MARKER, {})
    assert unknown.value.code == -32602
    assert unknown.value.message == UNKNOWN_TOOL
    assert MARKER not in repr(unknown.value.error)
