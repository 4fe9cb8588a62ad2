"""The FastMCP 1.x server example of the docs (``docs_server_example.py``) over a real stdio subprocess, with the
client side's docs example (a ``ClientSession`` with ``RootsProvider.session_kwargs()``): a file inside the
declared root is read, one outside is refused with the fixed text, and a narrowed root applies at once."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from rootbound.mcp import RootsProvider
from tests.mcp.both.server_harness import Conn

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).with_name("docs_server_example.py")


async def test_the_fastmcp_1_docs_example_reads_inside_and_refuses_outside(tmp_path: Path) -> None:
    project, other = tmp_path / "project", tmp_path / "other"
    for directory in (project, other):
        directory.mkdir()
        (directory / "notes.txt").write_text(f"in {directory.name}\n")
    (tmp_path / "secret.txt").write_text("not shared\n")
    provider = RootsProvider([project, other])
    server = StdioServerParameters(
        command=sys.executable, args=[str(EXAMPLE)], env={**os.environ, "ROOTBOUND_SILENCE_SEP2577": "1"}
    )
    with anyio.fail_after(60):
        async with (
            stdio_client(server) as (read, write),
            ClientSession(read, write, **provider.session_kwargs()) as session,
        ):
            await session.initialize()
            client = Conn(session)
            assert await client.text("read_file", path=str(other / "notes.txt")) == "in other\n"
            outside = await client.call("read_file", path=str(tmp_path / "secret.txt"))
            assert outside == (True, "path is outside the allowed roots (outside roots)")
            await provider.set_roots([project])  # one list_changed: the next call already sees the narrowed set
            await provider.flush()
            narrowed = await client.call("read_file", path=str(other / "notes.txt"))
            assert narrowed == (True, "path is outside the allowed roots (outside roots)")
            assert await client.text("read_file", path=str(project / "notes.txt")) == "in project\n"


def test_docs_server_md_shows_the_example_verbatim() -> None:
    """The 1.x block of docs/server.md is this file below its marker, so the page shows what runs here."""
    example = EXAMPLE.read_text().split("# --- the docs example, verbatim from here ---\n", 1)[1]
    page = (Path(__file__).parents[3] / "docs" / "server.md").read_text()
    section = page.split("## On mcp 1.x", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert block == example
