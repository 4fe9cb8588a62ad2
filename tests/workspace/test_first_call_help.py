"""A first call that works or says how (issue 35 #2, #3): real ``rootbound serve`` subprocesses, the real SDK client.

Started without DIRs, a client that declares no roots gets ``-32021`` naming the fix on one line (``rootbound serve
DIR``, and where it goes in a host's config), and ``list_roots`` answers with the same fix instead of failing. A
client whose ``roots/list`` answers with an error is refused with a message saying so and naming
``--ignore-client-roots``; with that flag it is served the DIRs, and only them. (fastmcp's view of the first
case: ``tests/judges/frameworks/test_first_call.py``.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from mcp import Client
from rootbound.workspace.effective_roots import NO_DIRS_FIX
from rootbound.workspace.server import WorkspaceConfig, build_workspace_server
from tests.helpers.client_roots import ClientRoots
from tests.helpers.serve_process import serve, serve_cli, text_of

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "2026-07-28"]
TOKEN = "FIRST-CALL-5b1e"


class FailingRoots:
    """A client that declares roots and answers every ``roots/list`` with an error (mcp-agent 0.2.6 does)."""

    def __init__(self) -> None:
        self.roots = ClientRoots()
        self.roots.fail = True

    def client_kwargs(self) -> dict[str, Any]:
        return {"list_roots_callback": self.roots.callback}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.md").write_text(f"{TOKEN}\n")
    (tmp_path / "outside.md").write_text("outside\n")
    return tmp_path / "ws"


def test_the_fix_is_one_line_naming_the_command_and_the_config_field() -> None:
    assert "\n" not in NO_DIRS_FIX
    assert "rootbound serve DIR" in NO_DIRS_FIX and '"args": ["serve", ' in NO_DIRS_FIX


@pytest.mark.parametrize("mode", ERAS)
async def test_no_dirs_no_roots_names_the_fix(work: Path, mode: str) -> None:
    with anyio.fail_after(60):
        async with serve("stdio", [], mode=mode, provider=None) as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("read_file", {"path": str(work / "notes.md")})
            error, roots = await text_of(client, "list_roots")
    assert refused.value.code == -32021
    assert refused.value.message.endswith(f"Fix: {NO_DIRS_FIX}")
    assert not error
    assert roots.splitlines()[0] == "(no roots: every path is denied)"
    assert f"Fix: {NO_DIRS_FIX} (the client declares no roots and the server was started without directories)" in roots


async def test_roots_list_error_is_refused_naming_the_flag(work: Path) -> None:
    with anyio.fail_after(60):
        async with serve("stdio", [str(work)], mode="legacy", provider=FailingRoots()) as client:  # type: ignore[arg-type]
            error, text = await text_of(client, "read_file", path=str(work / "notes.md"))
    assert error and TOKEN not in text
    assert text.startswith("the client failed to list its roots (its roots/list answered with an error)")
    assert "rootbound serve --ignore-client-roots DIR" in text


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_ignore_client_roots_serves_the_dirs_and_only_them(work: Path, transport: str) -> None:
    failing = FailingRoots()
    args = ["--ignore-client-roots", str(work)]
    with anyio.fail_after(60):
        async with serve(transport, args, mode="legacy", provider=failing) as client:  # type: ignore[arg-type]
            assert await text_of(client, "read_file", path=str(work / "notes.md")) == (False, f"{TOKEN}\n")
            error, outside = await text_of(client, "read_file", path=str(work.parent / "outside.md"))
            _, roots = await text_of(client, "list_roots")
    assert error and outside.endswith("(outside roots)"), outside
    assert roots.splitlines()[0] == f"{work.as_uri()} dir"
    assert "why: the server runs with --ignore-client-roots" in roots
    assert roots.splitlines()[-1] == "source: operator directories"
    assert failing.roots.calls == 0  # never asked


def test_ignore_client_roots_needs_dirs() -> None:
    done = serve_cli("--ignore-client-roots")
    assert done.returncode == 2
    assert "--ignore-client-roots serves the DIRs whatever the client's roots: give DIRs" in done.stderr


async def _in_process(work: Path, tool: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    server, _ = build_workspace_server(WorkspaceConfig(dirs=(work,)))
    with anyio.fail_after(30):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool(tool, arguments)
    assert not result.is_error
    return result.content[0].text, result.structured_content or {}  # type: ignore[union-attr]


async def test_list_roots_says_whether_a_path_is_served(work: Path) -> None:
    text, structured = await _in_process(work, "list_roots", {"path": "notes.md"})
    assert f"path: {work / 'notes.md'} is served, in root {work.as_uri()}" in text.splitlines()
    assert structured["located"] == {"served": True, "path": str(work / "notes.md"), "root": work.as_uri()}
    text, structured = await _in_process(work, "list_roots", {"path": str(work.parent / "outside.md")})
    assert "path: not served: path is outside the allowed roots (outside roots)" in text.splitlines()
    assert "outside.md" not in text  # the denial names the reason, not the input
    assert structured["located"]["served"] is False


async def test_find_projects_below_a_path(work: Path) -> None:
    for name in ("one", "two"):
        (work / name).mkdir()
        (work / name / "pyproject.toml").write_text("[project]\n")
    _, everywhere = await _in_process(work, "find_projects", {})
    _, below = await _in_process(work, "find_projects", {"path": str(work / "two")})
    assert [p["path"] for p in everywhere["projects"]] == [str(work / "one"), str(work / "two")]
    assert [p["path"] for p in below["projects"]] == [str(work / "two")]
