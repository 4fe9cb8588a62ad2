"""The converter matrix (issue 35): every tool of ``rootbound serve`` through every common MCP schema converter.

An agent framework turns each MCP tool into what its model sees (a function declaration, a pydantic model, a
kernel function); a converter that trips on a schema drops the tool, or the whole server. Here the ``tools/list``
answer of this checkout's server (read-only and ``--writable``) is dumped once to JSON and fed to
``drive_converters.py`` in each converter venv (``.deps/converters-mcp1``, ``.deps/converters-mcp2``:
``scripts/setup-converters.sh``, pinned by ``requirements/``), one run per venv. Every converter must accept every
tool and offer exactly its arguments; each is listed with its version (the pinned one). No model, no network.
``docs/interop.md`` has the matrix.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp import Client
from rootbound.workspace.server import WorkspaceConfig, build_workspace_server
from tests.helpers.processes import report as print_report

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DRIVER = HERE / "drive_converters.py"

VENVS: dict[str, tuple[str, ...]] = {
    "converters-mcp1": (
        "semantic-kernel",
        "autogen-ext mcp_server_tools",
        "google-genai mcp_to_gemini_tool",
        "langchain-mcp-adapters + convert_to_openai_tool",
    ),
    "converters-mcp2": (
        "dspy Tool.from_mcp_tool",
        "google-genai mcp_to_gemini_tool",
        "openai-agents strict",
        "openai-agents",
        "pydantic-ai OpenAI strict",
        "pydantic-ai Google",
        "google-adk McpTool",
    ),
}


async def _listed(dirs: Path, writable: bool) -> list[dict[str, Any]]:
    server, _ = build_workspace_server(WorkspaceConfig(dirs=(dirs,), writable=writable))
    with anyio.fail_after(30):
        async with Client(server, mode="legacy") as client:
            listed = await client.list_tools()
    return [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in listed.tools]


@pytest.fixture(scope="module")
def tools_json(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    base = tmp_path_factory.mktemp("converters")
    writable = anyio.run(_listed, base, True)
    read_only = anyio.run(_listed, base, False)
    # The read-only server lists a subset of the writable one's tools, each exactly the same: converting the
    # writable list checks both modes.
    assert read_only and all(tool in writable for tool in read_only)
    assert len(writable) > len(read_only)
    path = base / "tools.json"
    path.write_text(json.dumps(writable))
    return path, writable


def _pins(venv: str) -> dict[str, str]:
    pins = (HERE / "requirements" / f"{venv.removeprefix('converters-')}.txt").read_text().splitlines()
    return {
        name.lower(): version
        for name, _, version in (line.partition("==") for line in pins if "==" in line and not line.startswith("#"))
    }


@pytest.mark.parametrize("venv", sorted(VENVS))
def test_every_converter_takes_every_tool(
    venv: str, tools_json: tuple[Path, list[dict[str, Any]]], pytestconfig: pytest.Config
) -> None:
    path, tools = tools_json
    python = ROOT / ".deps" / venv / "bin" / "python"
    assert python.exists(), f"{python} is missing: run scripts/setup-converters.sh (make test-deps)"
    done = subprocess.run(
        [str(python), str(DRIVER), str(path), *VENVS[venv]],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": ""},
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"the driver failed (exit {done.returncode}):\n{done.stderr[-4000:]}"
    found: dict[str, Any] = json.loads(lines[-1])
    assert sorted(found) == sorted(VENVS[venv])
    pins = _pins(venv)
    expected = {tool["name"]: sorted(tool["inputSchema"].get("properties", {})) for tool in tools}
    rows, failures = [], []
    for converter, result in found.items():
        assert result["version"] == pins[result["package"]], converter  # the pinned version, nothing floats
        assert result["mcp"] == pins["mcp"], converter
        assert sorted(result["tools"]) == sorted(expected), converter
        for name, outcome in result["tools"].items():
            if "error" in outcome:
                failures.append(f"{converter}: {name}: {outcome['error']}")
            elif outcome["arguments"] != expected[name]:
                failures.append(f"{converter}: {name}: offers {outcome['arguments']}, not {expected[name]}")
            elif outcome.get("strict") is False:
                # openai-agents falls back silently: it refuses an object without properties unless it says
                # additionalProperties: false, which google-genai cannot take (every tool here has an argument)
                failures.append(f"{converter}: {name}: no strict schema could be made")
        accepted = sum("error" not in outcome for outcome in result["tools"].values())
        rows.append(
            f"{converter:<48} {result['package']} {result['version']:<9} mcp {result['mcp']:<7} "
            f"{accepted}/{len(expected)} tools"
        )
    print_report(pytestconfig, f"converter matrix ({venv})", rows)
    assert not failures, "\n".join(failures)
