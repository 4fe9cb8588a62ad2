"""The smaller edges a new user meets (issue 50 item 8): a mistyped flag, a bare port, a FILE given as DIR, a
server started in a terminal, an unknown tool argument, a list of types in an output schema, and the --writable
texts of server.json and the bundle's manifest."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rootbound.cli import build_parser
from rootbound.workspace.tools import tool_specs
from tests.helpers.serve_process import serve, serve_cli

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("typo", "meant"), [("--max-raed", "--max-read"), ("--writeable", "--writable"), ("--no-indx", "--no-index")]
)
def test_a_mistyped_flag_is_two_lines_with_the_flag_meant(tmp_path: Path, typo: str, meant: str) -> None:
    done = serve_cli(typo, str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"rootbound serve: error: unrecognized arguments: {typo} (did you mean {meant}?)",
        "rootbound serve --help lists every flag",
    ]


def test_a_bad_flag_value_is_two_lines_not_the_usage_block(tmp_path: Path) -> None:
    done = serve_cli("--tool-timeout", "soon", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "rootbound serve: error: argument --tool-timeout: expected a number of seconds > 0",
        "rootbound serve --help lists every flag",
    ]


def test_a_bare_port_serves_on_the_loopback_address() -> None:
    assert build_parser().parse_args(["serve", "--http", "8765"]).http == ("127.0.0.1", 8765)
    assert build_parser().parse_args(["serve", "--http", "0.0.0.0:8765"]).http == ("0.0.0.0", 8765)


def test_a_bare_port_starts_a_real_server(tmp_path: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "rootbound", "serve", "--http", "0", str(tmp_path)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()  # the policy line, once listening: it names the URL
        assert "Streamable HTTP on http://127.0.0.1:" in line and "/mcp" in line, line
    finally:
        server.terminate()
        server.wait(60)


def test_the_help_says_what_a_file_given_as_dir_does() -> None:
    done = serve_cli("--help")
    assert "a file instead serves that one file" in " ".join(done.stdout.split())


def test_in_a_terminal_the_server_says_what_it_waits_for(tmp_path: Path) -> None:
    controller, terminal = pty.openpty()
    server = subprocess.Popen(
        [sys.executable, "-m", "rootbound", "serve", str(tmp_path)],
        stdin=terminal,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    os.close(terminal)
    try:
        assert server.stderr is not None
        said = b""
        deadline = time.monotonic() + 120
        while said.count(b"\n") < 2 and time.monotonic() < deadline:
            if select.select([server.stderr], [], [], 1)[0]:
                chunk = os.read(server.stderr.fileno(), 65536)
                if not chunk:
                    break
                said += chunk
        lines = said.decode().splitlines()
        assert lines[0].startswith("rootbound serve: stdio;"), lines
        assert lines[1].startswith("rootbound serve: waiting for an MCP client on stdin."), lines
    finally:
        server.terminate()
        server.wait(60)
        os.close(controller)


@pytest.mark.anyio
async def test_an_unknown_argument_gets_the_nearest_declared_name_never_its_own(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    async with serve("stdio", [str(tmp_path)], mode="legacy", provider=None) as client:
        result = await client.call_tool("grep", {"pattern": "needle", "max_per_fle": 3})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error
    assert "unexpected argument in arguments (did you mean 'max_per_file'?); the accepted ones are: " in text
    assert "max_per_fle" not in text


def _type_lists(schema: Any, where: str) -> list[str]:
    if isinstance(schema, dict):
        found = [where] if isinstance(schema.get("type"), list) else []
        return found + [f for key, value in schema.items() for f in _type_lists(value, f"{where}.{key}")]
    if isinstance(schema, list):
        return [f for n, value in enumerate(schema) for f in _type_lists(value, f"{where}[{n}]")]
    return []


def test_no_schema_has_a_list_of_types() -> None:
    found = [
        hit
        for spec in tool_specs(writable=True)
        for hit in _type_lists(spec.input_schema, spec.name) + _type_lists(spec.output_schema, f"{spec.name}.out")
    ]
    assert found == []


def test_the_writable_texts_name_every_writing_tool() -> None:
    writing = [spec.name for spec in tool_specs(writable=True) if spec.writes]
    server = json.loads((REPO / "server.json").read_text())
    flag = next(
        argument["description"]
        for package in server["packages"]
        for argument in package.get("packageArguments", [])
        if argument.get("name") == "--writable"
    )
    bundle = json.loads((REPO / "packaging" / "mcpb" / "manifest.json").read_text())["user_config"]["writable"]
    for text in (flag, bundle["description"]):
        assert [name for name in writing if name not in text] == [], text
