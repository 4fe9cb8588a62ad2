"""RootsProvider on mcp 1.x against the 1.x SDK's own lowlevel ``Server`` (in memory): what an SDK server sees of
the client's capability (``client_params``), the roots its ``session.list_roots()`` parses, and the
``list_changed`` notifications its handler receives. The raw-peer tests (tests/mcp/both) judge the wire; this one
judges that a real 1.x server understands it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_client_server_memory_streams

from mcp import types
from rootbound import Root, path_to_uri
from rootbound.mcp.client import RootsProvider
from tests.mcp.both.client_harness import wait_until

pytestmark = pytest.mark.anyio


def _server(changed: list[int]) -> Server[Any, Any]:
    server: Server[Any, Any] = Server("sdk1-roots")

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return [types.Tool(name="fetch_roots", inputSchema={"type": "object"})]

    @server.call_tool()  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        session = server.request_context.session
        params = session.client_params
        assert params is not None
        roots = await session.list_roots()
        declared = params.capabilities.roots
        text = json.dumps(
            {
                "declared": None if declared is None else declared.model_dump(by_alias=True, exclude_none=True),
                "roots": [{"uri": str(root.uri), "name": root.name} for root in roots.roots],
            }
        )
        return [types.TextContent(type="text", text=text)]

    async def on_list_changed(notification: types.RootsListChangedNotification) -> None:
        changed.append(1)

    server.notification_handlers[types.RootsListChangedNotification] = on_list_changed
    return server


async def _fetch(session: ClientSession) -> Any:
    result = await session.call_tool("fetch_roots", {})
    assert not result.isError, result
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return json.loads(content.text)


@pytest.mark.parametrize("notify", [True, False])
async def test_a_1x_sdk_server_sees_the_providers_roots(tmp_path: Path, notify: bool) -> None:
    changed: list[int] = []
    server = _server(changed)
    provider = RootsProvider([Root.from_path(tmp_path / "a", "A")], notify=notify, coalesce=0.3)
    with anyio.fail_after(15):
        async with create_client_server_memory_streams() as (client, served), anyio.create_task_group() as tg:
            tg.start_soon(server.run, *served, server.create_initialization_options())
            async with ClientSession(*client, **provider.session_kwargs()) as session:
                await session.initialize()
                first = await _fetch(session)
                for name in ("b", "c", "d"):
                    await provider.add(tmp_path / name)
                await provider.flush()
                if notify:
                    await wait_until(lambda: len(changed) == 1)
                second = await _fetch(session)
                sent = provider.notifications_sent(session)
            tg.cancel_scope.cancel()
    assert first == {"declared": {"listChanged": notify}, "roots": [{"uri": path_to_uri(tmp_path / "a"), "name": "A"}]}
    assert [root["uri"] for root in second["roots"]] == [path_to_uri(tmp_path / n) for n in ("a", "b", "c", "d")]
    assert len(changed) == sent == int(notify)
