"""On mcp 1.x the parts built on the 2.x SDK say so in one line and exit 64: never a traceback (issue 28)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rootbound.mcp._sdk_major import MCP_V2, MCP_VERSION


def test_this_venv_has_mcp_1() -> None:
    assert not MCP_V2
    assert MCP_VERSION.startswith("1.")


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["-m", "rootbound", "serve", "/tmp"], "rootbound serve"),
        (["-m", "rootbound", "serve", "--http", "127.0.0.1:0", "/tmp"], "rootbound serve"),
        (["-m", "rootbound", "audit", "--", "true"], "rootbound audit"),
        (["-m", "rootbound.demo"], "the rootbound demo"),
    ],
)
def test_serve_audit_and_the_demo_exit_64_naming_the_mcp_they_need(argv: list[str], what: str) -> None:
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 64, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr  # one line, no traceback
    assert lines[0].startswith(f"rootbound: {what} needs the mcp SDK 2.3 or later")
    assert f"mcp {MCP_VERSION}" in lines[0] and "mcp>=2.3,<3" in lines[0]
    assert done.stdout == ""


def test_help_and_docs_still_work_on_mcp_1() -> None:
    for argv in (["--version"], ["docs"]):
        done = subprocess.run(
            [sys.executable, "-m", "rootbound", *argv], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip()
