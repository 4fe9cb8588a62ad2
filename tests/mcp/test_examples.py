"""The README's examples run as written."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from rootbound.mcp import RootsProvider
from tests.helpers.mcp_server import load_example

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_readme_server_reads_inside_and_denies_outside(tmp_path: Path, mode: str) -> None:
    base = tmp_path.resolve()
    (base / "ws").mkdir()
    (base / "ws" / "a.txt").write_text("inside")
    (base / "secret.txt").write_text("outside")
    module = load_example("readme_server")
    provider = RootsProvider([base / "ws"])
    async with Client(module.app, mode=mode, **provider.client_kwargs()) as client:
        ok = await client.call_tool("read", {"path": "a.txt"})
        denied = await client.call_tool("read", {"path": str(base / "secret.txt")})
    assert isinstance(ok.content[0], types.TextContent)
    assert (ok.is_error, ok.content[0].text) == (False, "inside")
    assert isinstance(denied.content[0], types.TextContent)
    assert denied.is_error
    assert "outside roots" in denied.content[0].text
    assert "secret" not in denied.content[0].text


async def test_readme_client_against_rootbound_serve(tmp_path: Path) -> None:
    base = tmp_path.resolve()
    project, docs = base / "project", base / "docs"
    project.mkdir()
    docs.mkdir()
    module = load_example("readme_client")
    target = StdioServerParameters(command=sys.executable, args=["-m", "rootbound", "serve", str(base)])
    with anyio.fail_after(60):
        seen = await module.main(target, project, docs)
    assert project.as_uri() in seen[0]
    assert docs.as_uri() not in seen[0]
    assert docs.as_uri() in seen[1]
    assert project.as_uri() not in seen[1]
