"""The README's server example, in process in both eras (the README's blocks themselves, and the client example,
run as written in ``tests/docs/test_readme_runs.py``)."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest

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
