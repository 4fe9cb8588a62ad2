"""The bare-``ClientSession`` example for docs/client.md, the same code on mcp 1.x and 2.x (issue 28), run against a
stdio server (the raw peer of tests/mcp/both/client_harness.py, which records what it received)."""

from __future__ import annotations

import inspect
import os
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from mcp.client.stdio import stdio_client

from mcp import ClientSession, StdioServerParameters
from rootbound import path_to_uri
from rootbound.mcp import RootsProvider
from tests.mcp.both import client_harness
from tests.mcp.both.client_harness import LIST_CHANGED, count, fetch_roots, remote_records, wait_until

pytestmark = pytest.mark.anyio


async def example(server: StdioServerParameters, project: Path, other: Path) -> tuple[object, object, int]:
    # --- the docs example, verbatim from here ---
    provider = RootsProvider([project])  # initialize declares roots: {"listChanged": true}
    kwargs = provider.session_kwargs()  # list_roots_callback=provider.list_roots
    async with stdio_client(server) as (read, write), ClientSession(read, write, **kwargs) as session:
        await session.initialize()
        before = await fetch_roots(session)  # the server's roots/list is answered [project]
        await provider.set_roots([other])  # one notifications/roots/list_changed
        await provider.flush()
        # --- to here ---
        after = await fetch_roots(session)

        async def notified() -> bool:
            return count((await remote_records(session))["received"], LIST_CHANGED) == 1

        await wait_until(notified)
        return before, after, provider.notifications_sent(session)


async def test_the_docs_example_runs_on_this_major(tmp_path: Path) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=[str(Path(client_harness.__file__).resolve())], env=dict(os.environ)
    )
    with anyio.fail_after(30):
        before, after, sent = await example(server, tmp_path / "project", tmp_path / "other")
    assert before == {"roots": [{"uri": path_to_uri(tmp_path / "project")}]}
    assert after == {"roots": [{"uri": path_to_uri(tmp_path / "other")}]}
    assert sent == 1


def test_docs_client_md_shows_the_example_verbatim() -> None:
    """The block of docs/client.md's "On mcp 1.x" is :func:`example` between its markers, dedented."""
    source = inspect.getsource(example)
    region = source.split("# --- the docs example, verbatim from here ---\n", 1)[1].split("# --- to here ---", 1)[0]
    region = textwrap.dedent(region).rstrip() + "\n"
    page = (Path(__file__).parents[3] / "docs" / "client.md").read_text()
    block = page.split("## On mcp 1.x", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert block == region
