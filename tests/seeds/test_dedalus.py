"""Dedalus MCP's documented roots examples, on rootbound, over a real stdio subprocess, in both eras.

``list_roots``, ``safe_read``, ``find_projects`` by marker files, a scoped search that reports progress through
the SDK's logging notifications (``ctx.info`` / ``ctx.debug``), and Dedalus's ``snapshot`` / ``refresh`` /
debounced update after ``list_changed`` (``docs/coming-from.md`` maps each call).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from rootbound import Root
from rootbound.mcp import RootsProvider
from tests.seeds.conftest import ERAS, stdio_client, tool_error, tool_text

pytestmark = pytest.mark.anyio

SERVER = "dedalus_server.py"


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    work, other, secret = tmp_path / "work", tmp_path / "other", tmp_path / "secret"
    for directory in (work / "proj_a" / "src", work / "nested" / "proj_b", other / "proj_c", secret):
        directory.mkdir(parents=True)
    for project in (work / "proj_a", work / "nested" / "proj_b", other / "proj_c"):
        (project / "pyproject.toml").write_text("[project]\n")
    (work / "proj_a" / "src" / "notes.txt").write_text("hello from a\n")
    (other / "meeting_notes.md").write_text("# notes\n")
    (secret / "key.txt").write_text("TOP-SECRET\n")
    os.symlink(secret, work / "escape")
    return {"work": work, "other": other, "secret": secret}


def provider_for(tree: dict[str, Path]) -> RootsProvider:
    return RootsProvider([Root.from_path(tree["work"], "Work"), Root.from_path(tree["other"], "Other")])


@pytest.mark.parametrize("mode", ERAS)
async def test_list_roots(tree: dict[str, Path], mode: str) -> None:
    async with stdio_client(SERVER, provider_for(tree), mode) as client:
        listed = [json.loads(line) for line in (await tool_text(client, "list_roots")).splitlines()]
    assert listed == [
        {"uri": tree["work"].as_uri(), "name": "Work"},
        {"uri": tree["other"].as_uri(), "name": "Other"},
    ]


@pytest.mark.parametrize("mode", ERAS)
async def test_safe_read_inside_and_refused_outside(tree: dict[str, Path], mode: str) -> None:
    async with stdio_client(SERVER, provider_for(tree), mode) as client:
        notes = tree["work"] / "proj_a" / "src" / "notes.txt"
        assert await tool_text(client, "safe_read", {"path": str(notes)}) == "hello from a\n"
        for attempt in (
            tree["secret"] / "key.txt",  # plainly outside
            tree["work"] / ".." / "secret" / "key.txt",  # lexically inside a root's parent
            tree["work"] / "escape" / "key.txt",  # a symlink inside a root that leads out
        ):
            message = await tool_error(client, "safe_read", {"path": str(attempt)})
            assert "TOP-SECRET" not in message and "secret" not in message  # denied, and nothing echoed
            assert "outside" in message or "symlink" in message


@pytest.mark.parametrize("mode", ERAS)
async def test_find_projects_by_marker_file(tree: dict[str, Path], mode: str) -> None:
    async with stdio_client(SERVER, provider_for(tree), mode) as client:
        found = (await tool_text(client, "find_projects")).splitlines()
        assert found == sorted(
            str(path)
            for path in (tree["work"] / "proj_a", tree["work"] / "nested" / "proj_b", tree["other"] / "proj_c")
        )
        assert await tool_text(client, "find_projects", {"marker": "Cargo.toml"}) == ""


@pytest.mark.parametrize("mode", ERAS)
async def test_scoped_search_reports_progress_through_logging(tree: dict[str, Path], mode: str) -> None:
    logs: list[tuple[str, str]] = []

    async def on_log(params: Any) -> None:
        logs.append((params.level, str(params.data)))

    async with stdio_client(SERVER, provider_for(tree), mode, logging_callback=on_log, log_level="debug") as client:
        found = (await tool_text(client, "search", {"query": "notes"})).splitlines()
    assert found == sorted(
        [str(tree["work"] / "proj_a" / "src" / "notes.txt"), str(tree["other"] / "meeting_notes.md")]
    )
    # Every progress message arrived, in order, before the tool's result (roots are outside the search scope).
    assert [entry for entry in logs if "root" in entry[1]] == [
        ("info", "searching 2 roots"),
        ("debug", "root 1/2"),
        ("info", "root 1/2: 1 matches"),
        ("debug", "root 2/2"),
        ("info", "root 2/2: 1 matches"),
    ]


async def test_snapshot_refresh_and_the_debounced_update_after_list_changed(tree: dict[str, Path]) -> None:
    """Handshake era (the only one with a connection to cache for): Dedalus's snapshot/refresh semantics."""
    provider = provider_for(tree)
    async with stdio_client(SERVER, provider, "legacy") as client:
        assert json.loads(await tool_text(client, "snapshot_roots")) is None  # nothing fetched yet
        await tool_text(client, "list_roots")
        assert json.loads(await tool_text(client, "snapshot_roots")) == [tree["work"].as_uri(), tree["other"].as_uri()]
        await provider.remove(tree["other"])  # sends list_changed: the server's snapshot updates, debounced
        with anyio.fail_after(10):
            while json.loads(await tool_text(client, "snapshot_roots")) != [tree["work"].as_uri()]:
                await anyio.sleep(0.02)
        assert json.loads(await tool_text(client, "refresh_roots")) == [tree["work"].as_uri()]
