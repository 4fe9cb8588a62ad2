"""``RootsService.snapshot``, ``refresh`` and ``on_change`` in 2026-07-28, over a real stdio subprocess
(``changes_server.py``) with the real SDK client and a counting ``RootsProvider``. The handshake-era cases run
on both SDK majors in ``tests/mcp/both/test_server_changes_handshake.py``."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from rootbound import RootSet
from rootbound.mcp import RootsProvider

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).parent / "changes_server.py"
DEBOUNCE = 0.1


class CountingRoots:
    """The client's roots, behind a provider whose handler counts every roots answer it gives."""

    def __init__(self, *uris: str) -> None:
        self.uris = list(uris)
        self.answers = 0
        self.delay = 0.0
        self.provider = RootsProvider(handler=self.answer, notify=False)

    async def answer(self, context: ClientRequestContext) -> RootSet:
        self.answers += 1
        if self.delay:
            await anyio.sleep(self.delay)
        return RootSet.of(self.uris)


@contextlib.asynccontextmanager
async def connect(roots: CountingRoots, mode: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER), str(DEBOUNCE)])
    with anyio.fail_after(60):
        async with Client(params, mode=mode, **roots.provider.client_kwargs()) as client:
            yield client


async def call(client: Client, tool: str) -> Any:
    result = await client.call_tool(tool, {})
    content = result.content[0]
    assert isinstance(content, types.TextContent), result
    assert not result.is_error, content.text
    return json.loads(content.text)


# ------------------------------------------------------------------------------------------------ 2026-07-28


async def test_2026_snapshot_is_what_this_request_was_given_and_never_asks() -> None:
    roots = CountingRoots("file:///srv/a")
    async with connect(roots, "2026-07-28") as client:
        assert await call(client, "snapshot") is None
        assert roots.answers == 0  # no input request was made for a snapshot
        # Round 1: nothing yet, roots() asks; round 2: the answer is in this request, so the snapshot sees it.
        assert await call(client, "snapshot_then_roots") == {"before": ["file:///srv/a"], "after": ["file:///srv/a"]}
        assert roots.answers == 1
        assert await call(client, "snapshot") is None  # nothing is kept across requests


async def test_2026_refresh_is_roots_and_on_change_never_fires() -> None:
    roots = CountingRoots("file:///srv/a")
    async with connect(roots, "2026-07-28") as client:
        assert await call(client, "refresh") == ["file:///srv/a"]
        roots.uris = ["file:///srv/b"]
        assert await call(client, "refresh") == ["file:///srv/b"]
        assert await call(client, "roots") == ["file:///srv/b"]
        assert roots.answers == 3  # every request asks: there is no cache in this era
        assert await call(client, "changes") == []
