"""Fixture client for the official conformance runner (`conformance client`), built on ``RootsProvider``.

The runner starts ``python tests/judges/conformance/client.py <url>`` (the URL is the last argument) with
``MCP_CONFORMANCE_SCENARIO`` and ``MCP_CONFORMANCE_PROTOCOL_VERSION`` in the environment. The client is an
``mcp.Client`` whose roots come from a :class:`~rootbound.mcp.client.RootsProvider`, so every request carries the
era-correct ``roots`` capability (``{"roots": {}}`` in each 2026-07-28 ``_meta``; ``{"roots": {"listChanged":
true}}`` once in a handshake-era ``initialize``).

Scenarios: ``request-metadata``, ``sep-2322-client-request-state`` and ``tools_call`` (both eras); any other
scenario lists the tools and calls each one without arguments.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext

from mcp import Client
from rootbound import Root
from rootbound.mcp.client import RootsProvider

HANDSHAKE_ERA = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
ROOT = Root("file:///tmp/rootbound-conformance", "Conformance workspace")
TIMEOUT = 25.0  # the runner gives a client scenario 30 s


async def accept_elicitation(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    """Accept every form elicitation, filling booleans with ``true`` and everything else with a placeholder."""
    content: dict[str, Any] = {}
    if isinstance(params, types.ElicitRequestFormParams):
        for name, schema in (params.requested_schema.get("properties") or {}).items():
            kind = schema.get("type") if isinstance(schema, dict) else None
            content[name] = True if kind == "boolean" else 0 if kind in ("number", "integer") else "conformance"
    return types.ElicitResult(action="accept", content=content)


def mode_for(version: str | None) -> str:
    """The SDK connect mode for the runner's protocol version: ``initialize`` up to 2025-11-25, else auto."""
    return "legacy" if version in HANDSHAKE_ERA else "auto"


async def run(url: str, scenario: str, version: str | None) -> None:
    provider = RootsProvider([ROOT])
    async with Client(
        url, mode=mode_for(version), elicitation_callback=accept_elicitation, **provider.client_kwargs()
    ) as client:
        print(f"{scenario}: negotiated {client.protocol_version}", file=sys.stderr)
        tools = (await client.list_tools()).tools
        names = [tool.name for tool in tools]
        if scenario == "tools_call":
            result = await client.call_tool("add_numbers", {"a": 2, "b": 3})
            print(f"add_numbers: {result.content}", file=sys.stderr)
        elif scenario == "sep-2322-client-request-state":
            # The rounds of each MRTR call are driven by the SDK client; the unrelated call in between must not
            # carry another call's inputResponses or requestState. test_mrtr_no_result_type is not called: mcp
            # 2.3.0 rejects a result without resultType instead of reading it as complete (expected-failures.yml).
            for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state"):
                result = await client.call_tool(name, {})
                print(f"{name}: {result.content}", file=sys.stderr)
        else:
            for name in names or ["conformance_probe"]:
                result = await client.call_tool(name, {})
                print(f"{name}: {result.content}", file=sys.stderr)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: client.py <server-url>", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")

    async def bounded() -> None:
        with anyio.fail_after(TIMEOUT):
            await run(argv[-1], scenario, version)

    anyio.run(bounded)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
