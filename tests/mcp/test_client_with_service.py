"""RootsProvider against rootbound's own RootsService (the colleague's server fixture), in-memory, every mode.

The server caches roots per handshake connection, so these tests show the point of ``list_changed``: with
``notify=True`` a mid-session ``set_roots`` reaches the next tool call; with ``notify=False`` the server keeps
its cached snapshot (there was no promise to notify). On 2026-07-28 nothing is cached and the change shows at once.
"""

from __future__ import annotations

import anyio
import pytest
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp import Client, MCPError
from rootbound.mcp import RootsService
from rootbound.mcp.client import RootsProvider
from tests.fixtures.roots_server import build_server

pytestmark = pytest.mark.anyio


async def _roots(client: Client) -> list[str]:
    result = await client.call_tool("roots", {})
    assert not result.is_error
    content = result.content[0]
    assert content.type == "text"
    return content.text.split("\n") if content.text else []


@pytest.mark.parametrize("mode", ["auto", "legacy", "2026-07-28"])
@pytest.mark.parametrize("notify", [True, False])
async def test_set_roots_reaches_the_service(mode: str, notify: bool) -> None:
    provider = RootsProvider(["/srv/a"], notify=notify, coalesce=0.01)
    service = RootsService(debounce=0.01, warn_deprecated=False)
    with anyio.fail_after(10):
        async with Client(build_server(service), mode=mode, **provider.client_kwargs()) as client:
            in_2026 = client.protocol_version in MODERN_PROTOCOL_VERSIONS
            assert await _roots(client) == ["file:///srv/a"]
            await provider.set_roots(["/srv/b", "file://localhost/srv/c/"])
            await provider.flush()
            await anyio.sleep(0.1)  # the service's debounce window
            expected = ["file:///srv/b", "file:///srv/c"] if (notify or in_2026) else ["file:///srv/a"]
            assert await _roots(client) == expected


@pytest.mark.parametrize("mode", ["auto", "legacy", "2026-07-28"])
async def test_no_source_meets_the_capability_gate(mode: str) -> None:
    """No roots source means no capability, so the service answers -32021 in both eras."""
    service = RootsService(warn_deprecated=False)
    with anyio.fail_after(10):
        async with Client(build_server(service), mode=mode, **RootsProvider().client_kwargs()) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("roots", {})
    assert caught.value.code == -32021
