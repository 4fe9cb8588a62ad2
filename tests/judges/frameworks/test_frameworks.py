"""The agent frameworks people use, driving ``rootbound serve`` as their users would (issue 26).

Each framework runs in its own venv under ``.deps/frameworks/NAME`` (``scripts/setup-test-deps.sh``); those pinned
to ``mcp<2`` (langchain-mcp-adapters, mcp-use) get rootbound installed by pip from this checkout (issue 28: it
resolves beside them) and use its ``RootsProvider`` on mcp 1.x. Every driver starts ``rootbound serve`` from this
venv (mcp 2.x) as a subprocess. A driver (``drivers/drive_NAME.py``, run with that venv's Python) connects over
stdio or Streamable HTTP on 127.0.0.1, lists the tools, calls every one with arguments the framework builds from our
schemas, and, where the framework can declare roots, checks confinement: a read inside the DIR but outside the
declared root, a roots change, a client that declares roots but has listed none, and one that withdrew them all. It
prints a JSON report; the judging is here. No LLM: pydantic-ai runs a ``FunctionModel``, the others are invoked
directly.

stdio runs are ``--writable`` (every tool, the writing ones included); HTTP runs are read-only (the writing tools
must not be offered). ``docs/interop.md`` has the matrix this file backs.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rootbound.workspace.tools.specs import TOOLS
from rootbound.workspace.tools.writing import WRITE_TOOLS as WRITING_TOOLS
from tests.helpers.processes import report as print_report
from tests.helpers.serve_process import http_serve

ROOT = Path(__file__).resolve().parents[3]
DRIVERS = Path(__file__).with_name("drivers")
VENVS = ROOT / ".deps" / "frameworks"
# Every tool the server offers (its own specs), so a tool added to the server and missing from the drivers' plan
# fails here.
READ_TOOLS = {spec.name for spec in TOOLS}
WRITE_TOOLS = {spec.name for spec in WRITING_TOOLS}
TOKEN_A, TOKEN_B, TOKEN_OUT = "TOKEN-A-4f1c", "TOKEN-B-9d2e", "TOKEN-OUT-77aa"
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@dataclass(frozen=True)
class Cell:
    """One cell of the matrix: a framework, a transport, the era it negotiates."""

    framework: str
    transport: str
    era: str  # "2026-07-28" or "2025-11-25" (the handshake era)
    roots: bool  # the framework can declare roots
    mode: str = "auto"  # fastmcp's Client(mode=...)

    @property
    def id(self) -> str:
        return f"{self.framework}-{self.transport}-{self.era}"


CELLS = [
    Cell("pydantic-ai", "stdio", "2026-07-28", True),
    Cell("pydantic-ai", "http", "2026-07-28", True),
    Cell("fastmcp", "stdio", "2026-07-28", True),
    Cell("fastmcp", "http", "2026-07-28", True),
    Cell("fastmcp", "stdio", "2025-11-25", True, mode="legacy"),
    Cell("fastmcp", "http", "2025-11-25", True, mode="legacy"),
    Cell("openai-agents", "stdio", "2026-07-28", False),
    Cell("openai-agents", "http", "2026-07-28", False),
    Cell("langchain-mcp-adapters", "stdio", "2025-11-25", True),
    Cell("langchain-mcp-adapters", "http", "2025-11-25", True),
    Cell("mcp-use", "stdio", "2025-11-25", True),
    Cell("mcp-use", "http", "2025-11-25", True),
]


def _tree(base: Path) -> dict[str, Any]:
    ws = base / "ws"
    (ws / "a").mkdir(parents=True)
    (ws / "b").mkdir()
    (ws / "a" / "a.txt").write_text(f"alpha {TOKEN_A}\n")
    (ws / "a" / "pyproject.toml").write_text("[project]\nname = 'a'\n")
    (ws / "a" / "pixel.png").write_bytes(PIXEL)
    (ws / "b" / "b.txt").write_text(f"beta {TOKEN_B}\n")
    (base / "outside.txt").write_text(f"secret {TOKEN_OUT}\n")
    return {
        "dir": str(ws),
        "a": str(ws / "a"),
        "b": str(ws / "b"),
        "outside": str(base / "outside.txt"),
        "token_a": TOKEN_A,
        "token_b": TOKEN_B,
    }


def _drive(cell: Cell, cfg: dict[str, Any], base: Path) -> dict[str, Any]:
    python = VENVS / cell.framework / "bin" / "python"
    assert python.exists(), f"{python} is missing: run scripts/setup-test-deps.sh (make test-deps)"
    config = base / "config.json"
    config.write_text(json.dumps(cfg))
    driver = DRIVERS / f"drive_{cell.framework.replace('-', '_')}.py"
    done = subprocess.run(
        [str(python), str(driver), str(config)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": ""},
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"{cell.framework} driver printed nothing (exit {done.returncode}):\n{done.stderr[-4000:]}"
    report: dict[str, Any] = json.loads(lines[-1])
    assert "crashed" not in report, f"{report['crashed']}\n--- stderr:\n{done.stderr[-3000:]}"
    return report


EXPECTED = {  # tool -> what its main use must show (text, or structured content as JSON)
    "list_directory": "a.txt",
    "directory_tree": "a.txt",
    "read_file": TOKEN_A,
    "read_multiple_files": TOKEN_A,
    "read_media_file": "image/png",
    "stat": "a.txt",
    "search_files": "a.txt",
    "grep": TOKEN_A,
    "find_projects": "pyproject.toml",
    "edit_file": "edited",
    "apply_patch": "new.txt",
}


def _refused(outcome: dict[str, Any], *secrets: str) -> None:
    """A confinement refusal: a tool error that says so and shows nothing of what it guards."""
    assert outcome["is_error"] and not outcome.get("raised"), outcome
    assert "outside" in outcome["text"], outcome  # denied for where it is, not for how it was asked
    for secret in secrets:
        assert secret not in outcome["text"]


def _judge(cell: Cell, cfg: dict[str, Any], report: dict[str, Any], writable: bool) -> None:
    assert set(report["tools"]) == (READ_TOOLS | WRITE_TOOLS if writable else READ_TOOLS)
    expected_calls = READ_TOOLS | (WRITE_TOOLS if writable else set())
    assert set(report["calls"]) == expected_calls
    for name, outcome in report["calls"].items():
        assert not outcome["is_error"], (name, outcome)
        if name in EXPECTED:
            assert EXPECTED[name] in outcome["text"], (name, outcome)
    assert (cfg["a"] if cell.roots else cfg["dir"]) in report["calls"]["list_roots"]["text"]
    _refused(report["outside_dir"], TOKEN_OUT)
    assert report["declared_roots"] is cell.roots
    if not cell.roots:
        return
    _refused(report["outside_root"], TOKEN_B)
    assert TOKEN_B in report["after_change_new"]["text"] and not report["after_change_new"]["is_error"]
    _refused(report["after_change_old"], TOKEN_A)
    assert cfg["b"] in report["after_change_roots"]["text"] and cfg["a"] not in report["after_change_roots"]["text"]
    if cell.transport == "http" and cell.era == "2026-07-28":
        # Nothing in a stateless request tells "no workspace" from "withdrawn": an empty list is served the DIR
        # (issue 35: roots narrow, the DIR is the wall), and list_roots says which rule applied.
        assert TOKEN_B in report["withdrawn_read"]["text"], report["withdrawn_read"]
        assert "stateless HTTP" in report["withdrawn_roots"]["text"]
        assert TOKEN_A in report["empty_first_read"]["text"], report["empty_first_read"]
        assert "stateless HTTP" in report["empty_first_roots"]["text"]
        assert "operator directories" in report["empty_first_roots"]["text"]
    else:
        _refused(report["withdrawn_read"], TOKEN_B)
        assert "withdrew every root" in report["withdrawn_roots"]["text"]
        assert TOKEN_A in report["empty_first_read"]["text"], report["empty_first_read"]
        assert "operator directories" in report["empty_first_roots"]["text"]
        assert "has listed none" in report["empty_first_roots"]["text"]


MCP1_FRAMEWORKS = ("langchain-mcp-adapters", "mcp-use")


@pytest.mark.parametrize("framework", MCP1_FRAMEWORKS)
def test_rootbound_installs_beside_a_framework_on_mcp_1(framework: str) -> None:
    """pip resolved rootbound's own requirement with the framework's ``mcp<2`` pin (``pip check``), and both import
    there: the framework, and ``rootbound.mcp`` from this checkout, on mcp 1.x."""
    python = VENVS / framework / "bin" / "python"
    assert python.exists(), f"{python} is missing: run scripts/setup-test-deps.sh (make test-deps)"
    module = framework.replace("-", "_")
    probe = (
        f"import json, importlib.metadata as m, {module}, rootbound, rootbound.mcp\n"
        "from rootbound.mcp import RootsProvider\n"
        "RootsProvider([])\n"
        "print(json.dumps([m.version('mcp'), m.version('rootbound'), rootbound.__file__]))"
    )
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": ""}
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    mcp_version, _rootbound_version, location = json.loads(done.stdout.strip().splitlines()[-1])
    assert mcp_version.startswith("1."), mcp_version
    assert Path(location).resolve().is_relative_to(ROOT / "src"), location  # this checkout, not a PyPI release
    check = subprocess.run(
        [str(python), "-m", "pip", "check", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("cell", CELLS, ids=lambda cell: cell.id)
def test_framework(request: pytest.FixtureRequest, tmp_path: Path, cell: Cell) -> None:
    cfg = _tree(tmp_path)
    writable = cell.transport == "stdio"
    args = [*(["--writable"] if writable else []), cfg["dir"]]
    cfg.update(transport=cell.transport, mode=cell.mode, writable=writable)
    started = time.monotonic()
    if cell.transport == "stdio":
        cfg["command"] = [sys.executable, "-m", "rootbound", "serve", *args]
        report = _drive(cell, cfg, tmp_path)
    else:
        with http_serve(args) as url:
            cfg["url"] = url
            report = _drive(cell, cfg, tmp_path)
    took = time.monotonic() - started
    print_report(request.config, f"framework {cell.id}", [f"{took:.1f}s; notes: {report.get('notes')}"])
    _judge(cell, cfg, report, writable)
    notes = report["notes"]
    if cell.framework == "fastmcp":
        assert f"protocol {cell.era}" in notes
        sent = next(note for note in notes if note.startswith("list_changed sent"))
        # handshake era: the provider's list_changed reached the server; 2026-07-28 has none to send
        assert (sent != "list_changed sent 0") is (cell.era == "2025-11-25"), notes
    if cell.framework == "mcp-use":
        assert "sent null" in notes  # its LangChain adapter fills unused options with null: accepted as absent
    if cell.framework in MCP1_FRAMEWORKS:
        # rootbound's RootsProvider on mcp 1.x: it built the session's ad (the listChanged it promised, as it went
        # on the wire), tracks the live session, and sent one list_changed per roots change of the plan (three).
        assert any(note.startswith("mcp 1.") for note in notes), notes
        assert 'declared roots [{"listChanged": true}]' in notes, notes
        assert "provider sessions 1" in notes, notes
        assert "list_changed sent 3" in notes, notes
    if cell.framework == "openai-agents":
        assert not any(note.startswith("not strict") for note in notes), notes  # every schema converted
    if writable:
        ws = Path(cfg["a"])
        assert (ws / "made").is_dir() and not (ws / "new.txt").exists() and not (ws / "made" / "moved.txt").exists()
