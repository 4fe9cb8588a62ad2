"""An older MCP Inspector CLI (``@modelcontextprotocol/inspector`` 0.15.0, ``--cli``), which sends every
``--tool-arg`` as a string, calls ``grep`` and ``read_file`` with integer, boolean and list options over stdio
(issue 50).

0.15 is still in many npx caches; ``--tool-arg context=1`` reaches the server as ``"context": "1"``,
``ignore_case=true`` as ``"true"``, ``include=["*.txt"]`` as the JSON text. The server takes those spellings
leniently. Each call is made twice over stdio, by 0.15 and by the pinned 2.12 (``.deps/inspector``), which parses the
values into their JSON types: both must succeed with the same answer. The server runs with ``--no-index`` so that no
index status line tells two equal answers apart. 0.15 is installed into ``.deps/inspector-0.15`` by
``scripts/setup-test-deps.sh``, pinned by ``tests/judges/inspector-0.15/package-lock.json``; it runs on the
system's Node (>= 20).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.processes import DEPS, require

TOKEN = "INSPECTOR-STR-8c1d"
CALLS = {  # id -> (tool, --tool-arg values as typed on the command line, texts the answer shows, texts it must not)
    "grep-options": (
        "grep",
        {
            "pattern": TOKEN.lower(),
            "regex": "false",
            "ignore_case": "true",
            "context": "1",
            "files_only": "false",
            "max_per_file": "2",
            "include": '["*.txt"]',
            "exclude": '["skip.txt"]',
            "include_ignored": "false",
        },
        [f"two {TOKEN}", "three"],
        ["skipped", "gamma"],
    ),
    "grep-regex-files-only": (
        "grep",
        {"pattern": "INSPECTOR-S.R", "regex": "true", "files_only": "true"},
        ["a.txt"],
        ["two"],
    ),
    "read_file-lines": ("read_file", {"start_line": "2", "end_line": "3"}, [f"two {TOKEN}\nthree"], ["one", "four"]),
    "read_file-head": ("read_file", {"head": "1"}, ["one"], ["two"]),
    "read_file-tail": ("read_file", {"tail": "1"}, ["four"], ["three"]),
    "read_file-bytes": ("read_file", {"offset": "4", "length": "3"}, ["two"], ["one", "three"]),
}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("inspector015")
    (ws / "a.txt").write_text(f"one\ntwo {TOKEN}\nthree\nfour\n")
    (ws / "skip.txt").write_text(f"skipped {TOKEN}\n")
    (ws / "c.md").write_text(f"gamma {TOKEN}\n")
    return ws


def _inspectors() -> dict[str, list[str]]:
    old = DEPS / "inspector-0.15" / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli" / "build" / "cli.js"
    node22 = DEPS / "inspector" / "node_modules" / ".bin" / "node"
    launcher = DEPS / "inspector" / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher"
    return {
        "0.15": ["node", str(require(old, "the MCP Inspector 0.15"))],
        "2.12": [
            str(require(node22, "Node 22 (npm package node@22)")),
            str(require(launcher / "build" / "index.js", "the MCP Inspector")),
        ],
    }


def _call(inspector: list[str], workspace: Path, tool: str, args: dict[str, str], home: Path) -> dict[str, Any]:
    path = workspace if tool == "grep" else workspace / "a.txt"
    env_args = ["-e", f"PYTHONPATH={os.environ['PYTHONPATH']}"] if os.environ.get("PYTHONPATH") else []
    server = [sys.executable, "-m", "rootbound", "serve", "--no-index", str(workspace)]
    tool_args = [f"--tool-arg={key}={value}" for key, value in {"path": str(path), **args}.items()]
    done = subprocess.run(
        [*inspector, "--cli", *env_args, *server, "--method", "tools/call", "--tool-name", tool, *tool_args],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "HOME": str(home)},  # its catalog (~/.mcp-inspector) stays in the test's folder
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    start = done.stdout.index("{")  # 2.12 passes the server's start-up line through before the result
    result: dict[str, Any] = json.loads(done.stdout[start:])
    return result


@pytest.mark.timeout(240)
@pytest.mark.parametrize("call", CALLS)
def test_inspector_015_string_options_answer_as_typed_ones(workspace: Path, call: str, tmp_path: Path) -> None:
    tool, args, shows, hides = CALLS[call]
    inspectors = _inspectors()
    as_strings = _call(inspectors["0.15"], workspace, tool, args, tmp_path)
    typed = _call(inspectors["2.12"], workspace, tool, args, tmp_path)
    assert typed["isError"] is False, typed
    assert as_strings["isError"] is False, as_strings  # the old server: "must be of type boolean or null"
    assert as_strings["content"] == typed["content"]
    assert as_strings.get("structuredContent") == typed.get("structuredContent")
    text = typed["content"][0]["text"]
    for part in shows:
        assert part in text, (part, text)
    for part in hides:
        assert part not in text, (part, text)
