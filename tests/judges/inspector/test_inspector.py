"""The MCP Inspector CLI (``@modelcontextprotocol/inspector`` 2.12.0, ``--cli``) reads a file from ``rootbound serve``
over Streamable HTTP in both eras (issue 35 #4).

The Inspector is what people debug servers with. It declares roots and lists none, so over stateless 2026-07-28
HTTP it is served the DIRs (the empty-roots rule). ``--protocol-era legacy`` negotiates 2025-11-25 by
``initialize``; ``--protocol-era modern`` speaks 2026-07-28, which the result shows by its ``serverInfo`` stamp in
``_meta`` (a handshake-era result has none). Installed into ``.deps/inspector`` by ``scripts/setup-test-deps.sh``,
pinned by ``package-lock.json`` here, with the Node 22 it needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.processes import DEPS, require
from tests.helpers.serve_process import http_serve

TOKEN = "INSPECTOR-READ-3f9a"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    node = require(DEPS / "inspector" / "node_modules" / ".bin" / "node", "Node 22 (npm package node@22)")
    launcher = DEPS / "inspector" / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher"
    return [str(node), str(require(launcher / "build" / "index.js", "the MCP Inspector")), "--cli"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    work = tmp_path_factory.mktemp("inspector")
    (work / "notes.md").write_text(f"{TOKEN}\n")
    with http_serve([str(work)]) as url:
        yield url, work


@pytest.mark.timeout(120)
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_cli_reads_a_file(inspector: list[str], served: tuple[str, Path], era: str, tmp_path: Path) -> None:
    url, work = served
    argv = [*inspector, url, "--protocol-era", era, "--method", "tools/call", "--tool-name", "read_file"]
    done = subprocess.run(
        [*argv, "--tool-arg", f"path={work / 'notes.md'}"],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "HOME": str(tmp_path)},  # its catalog (~/.mcp-inspector) stays in the test's folder
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["isError"] is False
    assert result["content"] == [{"type": "text", "text": f"{TOKEN}\n"}]
    stamped = SERVER_INFO in result.get("_meta", {})
    assert stamped is (era == "modern")  # 2026-07-28 results carry the serverInfo stamp, handshake ones never


@pytest.mark.timeout(240)
@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_inspector_cli_lists_templates_and_reads_a_resource(
    inspector: list[str], served: tuple[str, Path], era: str, transport: str, tmp_path: Path
) -> None:
    """Issue 49: the workspace as resources, through the Inspector's own ``--method resources/*``, over HTTP (both
    eras) and over stdio (the server started by the Inspector, as a host starts it)."""
    url, work = served
    env = {**os.environ, "HOME": str(tmp_path)}
    if transport == "http":
        target = [url, "--protocol-era", era]
    else:
        env_args = ["-e", f"PYTHONPATH={os.environ['PYTHONPATH']}"] if os.environ.get("PYTHONPATH") else []
        target = [*env_args, sys.executable, "-m", "rootbound", "serve", "--no-index", str(work)]
        target += ["--protocol-era", era]
    answers = []
    for extra in (
        ["--method", "resources/templates/list"],
        ["--method", "resources/read", "--uri", (work / "notes.md").as_uri()],
    ):
        done = subprocess.run(
            [*inspector, *target, *extra],
            capture_output=True,
            text=True,
            timeout=90,
            env=env,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        answers.append(json.loads(done.stdout[done.stdout.index("{") :]))  # stdio: the start-up line may come first
    templates, read = answers
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == ["file:///{+path}"]
    (content,) = read["contents"]
    assert content["text"] == f"{TOKEN}\n" and content["mimeType"] == "text/markdown"
    assert content["_meta"]["io.github.rootbound/resources"]["size"] == len(TOKEN) + 1
