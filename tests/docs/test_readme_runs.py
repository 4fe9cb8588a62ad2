"""Every code block in README.md runs as written (issue 27), against a temporary ``rootbound serve``; every block in
docs/ that no test runs is marked as such.

A block is run by its kind: a Python block as a program (the server one as a stdio MCP server that a client
drives, the client one against ``rootbound serve --http``), a JSON ``mcpServers`` entry by connecting the way a
host would, a ``rootbound serve`` command line by starting it. Two substitutions make a block runnable on any
machine, and only these: the example directory ``/home/me/projects`` becomes a temporary directory, and the
example port ``8765`` a free one. A block not meant to run is preceded by ``<!-- not run: why -->``; a block that
is neither marked nor of a kind this module runs fails the test, so no block can drift unrun.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from rootbound.mcp import RootsProvider

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
EXAMPLE_DIR = "/home/me/projects"
EXAMPLE_PORT = "8765"
NOT_RUN = re.compile(r"<!-- not run: [^>]+ -->")

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class Block:
    lang: str
    text: str
    line: int
    skipped: bool


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, each with whether a ``not run`` marker precedes it."""
    found: list[Block] = []
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        fence = re.match(r"^```(\S*)\s*$", lines[index])
        if fence is None:
            index += 1
            continue
        end = lines.index("```", index + 1)
        before = next((line for line in reversed(lines[:index]) if line.strip()), "")
        found.append(
            Block(fence.group(1), "\n".join(lines[index + 1 : end]) + "\n", index + 1, bool(NOT_RUN.search(before)))
        )
        index = end + 1
    return found


def _normal(text: str) -> list[str]:
    """Non-blank lines with runs of spaces collapsed (ruff formats the example files; the README aligns)."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _rootbound() -> str:
    """The ``rootbound`` command of the interpreter running the tests (a host's config names ``rootbound``)."""
    return str(Path(sys.executable).with_name("rootbound"))


def _runnable(text: str, workspace: Path, port: int) -> str:
    return text.replace(EXAMPLE_DIR, str(workspace)).replace(EXAMPLE_PORT, str(port))


README_BLOCKS = blocks(README)


def _kind(block: Block) -> str:
    if block.skipped:
        return "not run"
    if block.lang == "python" and "MCPServer(" in block.text:
        return "python server"
    if block.lang == "python" and "Client(" in block.text:
        return "python client"
    if block.lang == "json" and '"command"' in block.text:
        return "stdio config"
    if block.lang == "json" and '"url"' in block.text:
        return "http config"
    if block.lang == "console" and block.text.startswith("rootbound serve ") and "--http" in block.text:
        return "http serve"
    return "unknown"


def test_every_readme_block_is_run_or_marked() -> None:
    kinds = [(block.line, _kind(block)) for block in README_BLOCKS]
    assert [line for line, kind in kinds if kind == "unknown"] == [], "mark it <!-- not run: why --> or run it"
    assert {kind for _, kind in kinds} == {
        "not run",
        "python server",
        "python client",
        "stdio config",
        "http config",
        "http serve",
    }


def _only(kind: str) -> Block:
    (block,) = [block for block in README_BLOCKS if _kind(block) == kind]
    return block


def _roots(result: types.CallToolResult) -> list[str]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return [root["uri"] for root in result.structured_content["roots"]]


async def test_stdio_config_runs_as_a_host_would(tmp_path: Path) -> None:
    workspace = tmp_path.resolve()
    config = json.loads(_runnable(_only("stdio config").text, workspace, 0))
    (entry,) = config["mcpServers"].values()
    assert entry["command"] == "rootbound"
    params = StdioServerParameters(
        command=_rootbound(), args=entry["args"], env={**os.environ, "PYTHONWARNINGS": "ignore"}
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            assert _roots(await client.call_tool("list_roots", {})) == [workspace.as_uri()]


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """The README's ``rootbound serve ... --http 127.0.0.1:8765`` line, started as written (DIR and port swapped)."""
    workspace = tmp_path.resolve()
    port = _free_port()
    line = _runnable(_only("http serve").text.strip(), workspace, port)
    assert "\n" not in line
    process = subprocess.Popen([_rootbound(), *line.split()[1:]], stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        for _ in range(20):
            said = process.stderr.readline()
            if f"127.0.0.1:{port}/mcp" in said or not said:
                break
        assert f"127.0.0.1:{port}/mcp" in said, said
        yield workspace, port
    finally:
        process.terminate()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


async def test_http_config_reaches_the_http_server(http_server: tuple[Path, int]) -> None:
    workspace, port = http_server
    config = json.loads(_runnable(_only("http config").text, workspace, port))
    (entry,) = config["mcpServers"].values()
    assert entry["type"] == "http"
    with anyio.fail_after(60):
        async with Client(entry["url"]) as client:
            assert _roots(await client.call_tool("list_roots", {})) == [workspace.as_uri()]


async def test_server_block_runs_as_a_stdio_server(tmp_path: Path) -> None:
    block = _only("python server")
    assert set(_normal(block.text)) <= set(_normal((REPO / "examples" / "readme_server.py").read_text()))
    script = tmp_path / "server.py"
    script.write_text(block.text)
    base = tmp_path.resolve()
    (base / "ws").mkdir()
    (base / "ws" / "a.txt").write_text("inside")
    (base / "secret.txt").write_text("outside")
    provider = RootsProvider([base / "ws"])
    params = StdioServerParameters(
        command=sys.executable, args=[str(script)], env={**os.environ, "PYTHONWARNINGS": "ignore"}
    )
    with anyio.fail_after(60):
        async with Client(params, **provider.client_kwargs()) as client:
            ok = await client.call_tool("read", {"path": "a.txt"})
            denied = await client.call_tool("read", {"path": str(base / "secret.txt")})
    assert isinstance(ok.content[0], types.TextContent)
    assert (ok.is_error, ok.content[0].text) == (False, "inside")
    assert isinstance(denied.content[0], types.TextContent)
    assert denied.is_error
    assert "outside" in denied.content[0].text


@pytest.mark.parametrize("mode", ["as written", "legacy"])
def test_client_block_runs_against_rootbound_serve(http_server: tuple[Path, int], mode: str) -> None:
    """The client program against the README's HTTP server: the roots change between its two calls. ``legacy``
    runs it against the handshake era (``mode="legacy"``), where the change travels as ``list_changed`` and the
    comment on ``flush()`` is what makes the second call see it."""
    block = _only("python client")
    assert set(_normal(block.text)) <= set(_normal((REPO / "examples" / "readme_client.py").read_text()))
    workspace, port = http_server
    project, docs = workspace / "project", workspace / "docs"
    project.mkdir()
    docs.mkdir()
    text = block.text
    if mode == "legacy":
        assert "Client(server, " in text
        text = text.replace("Client(server, ", 'Client(server, mode="legacy", ')
    script = workspace.parent / "client.py"
    script.write_text(text)
    url = f"http://127.0.0.1:{port}/mcp"
    done = subprocess.run(
        [sys.executable, str(script), url, str(project), str(docs)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    before, after = done.stdout.splitlines()
    assert project.as_uri() in before and docs.as_uri() not in before
    assert docs.as_uri() in after and project.as_uri() not in after


def test_make_demo_session_runs() -> None:
    """``make demo`` (marked not run: ``make`` would install into the checkout) is this session."""
    done = subprocess.run(
        [sys.executable, "-m", "rootbound.demo"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "done in" in done.stdout


@pytest.mark.parametrize("page", sorted(path.name for path in (REPO / "docs").glob("*.md")))
def test_every_docs_block_is_marked(page: str) -> None:
    """A block in docs/ that no test runs says so, and why (a fragment, a diagram, recorded output)."""
    unmarked = [block.line for block in blocks(REPO / "docs" / page) if not block.skipped]
    assert unmarked == [], f"docs/{page}: mark these blocks <!-- not run: why --> or run them in a test"


def test_readme_names_every_system_package_make_test_installs() -> None:
    """``make test`` installs Debian packages itself (scripts/setup-test-deps.sh); the README says which."""
    script = (REPO / "scripts" / "setup-test-deps.sh").read_text()
    packages = set(re.findall(r"apt-get install [^\n]*?--no-install-recommends ([\w.+-]+)", script))
    assert packages >= {"nginx", "ripgrep"}
    section = README.read_text().split("## Two commands", 1)[1].split("\n## ", 1)[0]
    assert sorted(name for name in packages if f"`{name}`" not in section) == []
    assert "`npm`" in section
