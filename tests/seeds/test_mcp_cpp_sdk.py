"""mcp-cpp-sdk's documented roots flows, on rootbound, over a real stdio subprocess (``cpp_server.py``).

Client: ``set_roots(roots, notify)`` before connect advertises the capability; ``notify=true`` sends
``list_changed`` only where ``listChanged`` was advertised; a dynamic ``on_roots_list`` handler. Server:
``request_roots()`` from the tool context, and the example tool that summarises the roots as text.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from rootbound import Root, RootSet
from rootbound.mcp import RootsProvider
from tests.seeds.conftest import ERAS, needs_2026, stdio_client, tool_text

pytestmark = pytest.mark.anyio

SERVER = "cpp_server.py"


async def declared(client: Any) -> object:
    return json.loads(await tool_text(client, "declared_roots_capability"))


async def settle(provider: RootsProvider, client: Any) -> int:
    """Let every coalesced notification go out and reach the server; how many it counted."""
    await provider.flush()
    await anyio.sleep(0.2)
    return int(await tool_text(client, "list_changed_count"))


@pytest.mark.parametrize("mode", ERAS)
async def test_set_roots_before_connect_advertises_the_capability(mode: str) -> None:
    provider = RootsProvider()  # no source yet: nothing to advertise
    async with stdio_client(SERVER, provider, mode) as client:
        assert await declared(client) is None
    await provider.set_roots(["/srv/project"])  # mcp-cpp-sdk: client.set_roots(roots) before connect
    async with stdio_client(SERVER, provider, mode) as client:
        assert await declared(client) == ({"listChanged": True} if mode == "legacy" else {})
        assert await tool_text(client, "roots_summary") == "1 root(s):\n- file:///srv/project"


async def test_set_roots_notify_without_advertised_list_changed_sends_nothing() -> None:
    quiet = RootsProvider(["/srv/a"], notify=False)  # listChanged: false is what initialize promised
    async with stdio_client(SERVER, quiet, "legacy") as client:
        assert await declared(client) == {"listChanged": False}
        await quiet.set_roots(["/srv/b"])
        assert await settle(quiet, client) == 0
        assert quiet.notifications_sent(client.session) == 0
    loud = RootsProvider(["/srv/a"], notify=True)  # the same change where listChanged was advertised
    async with stdio_client(SERVER, loud, "legacy") as client:
        await tool_text(client, "roots_summary")
        await loud.set_roots(["/srv/b"])
        assert await settle(loud, client) == 1
        assert await tool_text(client, "roots_summary") == "1 root(s):\n- file:///srv/b"


@needs_2026
async def test_set_roots_never_notifies_a_2026_connection() -> None:
    provider = RootsProvider(["/srv/a"], notify=True)
    async with stdio_client(SERVER, provider, "2026-07-28") as client:
        await provider.set_roots(["/srv/b"])
        assert await settle(provider, client) == 0  # no list_changed in 2026-07-28: each request asks
        assert await tool_text(client, "roots_summary") == "1 root(s):\n- file:///srv/b"


@pytest.mark.parametrize("mode", ERAS)
async def test_dynamic_roots_handler(mode: str) -> None:
    current = [Root.from_path("/srv/one", "One")]
    asked: list[object] = []

    def on_roots_list(context: Any) -> RootSet:  # mcp-cpp-sdk: client.on_roots_list(...)
        asked.append(context.request_id)
        return RootSet(tuple(current))

    provider = RootsProvider(handler=on_roots_list)
    async with stdio_client(SERVER, provider, mode) as client:
        assert await tool_text(client, "roots_summary") == "1 root(s):\n- One (file:///srv/one)"
        current.append(Root.from_path("/srv/two"))
        await provider.roots_changed()  # the handler's answer changed: tell handshake-era servers
        with anyio.fail_after(10):
            while (summary := await tool_text(client, "roots_summary")).startswith("1 root"):
                await anyio.sleep(0.02)
        assert summary == "2 root(s):\n- One (file:///srv/one)\n- file:///srv/two"
    assert asked  # the handler answered every roots request the server made


@pytest.mark.parametrize("mode", ERAS)
async def test_server_example_tool_summarises_the_roots(mode: str) -> None:
    provider = RootsProvider([Root.from_path("/home/me/app", "App"), "/srv/data"])
    async with stdio_client(SERVER, provider, mode) as client:
        summary = await tool_text(client, "roots_summary")
    assert summary == "2 root(s):\n- App (file:///home/me/app)\n- file:///srv/data"
