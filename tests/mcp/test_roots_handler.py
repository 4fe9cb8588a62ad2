"""``RootsProvider.roots_handler()``: a provider in fastmcp's ``Client(roots=...)`` (and so pydantic-ai's
``MCPToolset(roots=...)``) keeps the era-correct capability and ``list_changed`` (issue 26 #5).

fastmcp wraps whatever it is given in a callback of its own; rootbound finds the handler inside it
(``_sdk_client.hook_of``). Real fastmcp 4 client, the recording SDK server over Streamable HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.roots import create_roots_callback
from mcp.shared.exceptions import MCPDeprecationWarning

from rootbound.mcp import RootsProvider
from rootbound.mcp._sdk_client import hook_of
from tests.fixtures.recording_server import LIST_CHANGED, Recorder, declared_capabilities
from tests.helpers.mcp_client import http_server, wait_until

pytestmark = pytest.mark.anyio


def count(messages: list[dict[str, Any]], method: str) -> int:
    return sum(1 for message in messages if message["method"] == method)


async def _fetch(client: Any) -> Any:
    result = await client.call_tool("fetch_roots", {})
    return json.loads(result.content[0].text)


@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_fastmcp_client_with_a_provider(tmp_path: Path, mode: str, era: str) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    provider = RootsProvider([a], coalesce=0.05)
    recorder = Recorder()
    with anyio.fail_after(30), warnings.catch_warnings(), http_server(recorder, stateless=False) as url:
        warnings.simplefilter("error", MCPDeprecationWarning)
        async with FastMCPClient(url, roots=provider.roots_handler(), mode=mode) as client:
            session = client.session
            assert session.protocol_version == era
            assert await _fetch(client) == {"roots": [{"uri": a.as_uri()}]}
            await provider.set_roots([b])
            await provider.flush()
            if era != "2026-07-28":

                async def notified() -> bool:
                    return count(recorder.snapshot()["messages"], LIST_CHANGED) >= 1

                await wait_until(notified)
            assert await _fetch(client) == {"roots": [{"uri": b.as_uri()}]}
            sent = provider.notifications_sent(session)
    messages = recorder.snapshot()["messages"]
    expected = {"roots": {}} if era == "2026-07-28" else {"roots": {"listChanged": True}}
    declared = [caps for method, caps in declared_capabilities(messages) if method != "server/discover"]
    assert declared and all(caps == expected for caps in declared), declared  # not the SDK's listChanged-everywhere
    assert count(messages, LIST_CHANGED) == sent == (0 if era == "2026-07-28" else 1)


def test_fastmcp_wrapper_holds_the_handler() -> None:
    """Pin: fastmcp's ``create_roots_callback`` closes over the function it was given, which is how the
    capability hook finds the provider. If fastmcp changes that, this fails before any roots behaviour degrades."""
    provider = RootsProvider(["/srv"])
    handler = provider.roots_handler()

    class Session:
        _list_roots_callback = create_roots_callback(handler)

    assert hook_of(Session()) is handler  # type: ignore[arg-type]
