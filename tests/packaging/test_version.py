"""The version is written once (``rootbound.__version__``): the package metadata, ``rootbound --version`` and the
``serverInfo`` a host sees all carry it (issue 38)."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path
from typing import Literal

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from rootbound import __version__
from rootbound.workspace import WorkspaceConfig, build_workspace_server

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.anyio


def test_the_version_is_written_once() -> None:
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(r"^version\s*=", pyproject.split("[project.urls]")[0], re.MULTILINE) is None
    assert 'dynamic = ["version"]' in pyproject
    assert 'version = { attr = "rootbound.__version__" }' in pyproject
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    # The installed metadata (this venv's editable install) was built from the same line.
    assert importlib.metadata.version("rootbound") == __version__


def test_rootbound_version_prints_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rootbound", "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, f"rootbound {__version__}")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_workspace_server_info_carries_it(tmp_path: Path, mode: Literal["legacy", "auto"]) -> None:
    """In-process, both eras: the handshake's ``serverInfo`` and the 2026-07-28 one."""
    server, _ = build_workspace_server(WorkspaceConfig(dirs=(tmp_path,)))
    with anyio.fail_after(60):
        async with Client(server, mode=mode) as client:
            await client.list_tools()
            info = client.server_info
    assert info is not None
    assert (info.name, info.version) == ("rootbound-workspace", __version__)


async def test_serve_reports_it_in_the_modern_era(tmp_path: Path) -> None:
    """``rootbound serve`` as a subprocess in 2026-07-28 (the handshake era's serverInfo is checked wherever a test
    starts the server as a user would: tests/docs/test_host_blocks.py, tests/packaging/test_bundle.py and
    test_installers.py)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "rootbound", "serve", str(tmp_path)])
    with anyio.fail_after(60):
        async with Client(params) as client:
            await client.list_tools()
            assert client.protocol_version == "2026-07-28"
            info = client.server_info
    assert info is not None and info.version == __version__
