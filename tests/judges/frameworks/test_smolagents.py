"""smolagents (through mcpadapt, on mcp 1.x) calls ``rootbound serve``'s read-only tools with the string spellings
its signatures ask for (issue 50).

mcpadapt turns every optional parameter spelled ``anyOf: [{T}, {"type": "null"}]`` into ``type: string`` in the
Tool's ``inputs`` (it keeps no ``anyOf``), so a ``CodeAgent``'s model, following the signature, writes
``max_per_file="2"``, ``ignore_case="true"`` and ``exclude='["skip.txt"]'``. The server takes those spellings
leniently; this checks it through smolagents' own Tool objects, over stdio. No LLM exists here: the driver
(``drivers/drive_smolagents.py``, run in ``.deps/frameworks/smolagents``) calls the Tool objects the agent would be
handed, each call twice, once with the JSON types the schema publishes and once with every option as the string
smolagents shows, and both answers must be the same, successful one. The server runs with ``--no-index`` so that no
index status line tells two otherwise equal answers apart. ``docs/interop.md`` has the row this backs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from rootbound.workspace.tools.specs import TOOLS
from tests.helpers.processes import report as print_report

ROOT = Path(__file__).resolve().parents[3]
PYTHON = ROOT / ".deps" / "frameworks" / "smolagents" / "bin" / "python"
DRIVER = Path(__file__).with_name("drivers") / "drive_smolagents.py"
TOKEN = "SMOL-TOKEN-5e2a"


def _tree(ws: Path) -> None:
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text(f"one\ntwo {TOKEN}\nthree\nfour\n")
    (ws / "b.txt").write_text(f"beta {TOKEN.lower()}\n")
    (ws / "skip.txt").write_text(f"skipped {TOKEN}\n")
    (ws / "sub" / "c.md").write_text("gamma\n")


def _calls(ws: Path) -> list[tuple[str, dict[str, Any], list[str], list[str]]]:
    """(tool, correctly typed arguments, texts the answer shows, texts it must not show)."""
    a = str(ws / "a.txt")
    return [
        ("list_directory", {"path": str(ws), "details": True, "reverse": True, "max_entries": 10}, ["a.txt"], []),
        (
            "directory_tree",
            {"path": str(ws), "max_depth": 2, "max_entries": 50, "exclude": ["*.md"], "include_ignored": False},
            ["a.txt", "sub"],
            ["c.md"],
        ),
        ("read_file", {"path": a, "start_line": 2, "end_line": 3}, [f"two {TOKEN}\nthree"], ["one", "four"]),
        ("read_file", {"path": a, "head": 1}, ["one"], ["two"]),
        ("read_file", {"path": a, "tail": 1}, ["four"], ["three"]),
        ("read_file", {"path": a, "offset": 4, "length": 3}, ["two"], ["one", "three"]),
        (
            "search_files",
            {"pattern": "*.txt", "path": str(ws), "exclude": ["skip.txt"], "include_ignored": True},
            ["a.txt", "b.txt"],
            ["skip.txt"],
        ),
        (
            "grep",
            {
                "pattern": TOKEN.lower(),
                "path": str(ws),
                "regex": False,
                "ignore_case": True,
                "context": 1,
                "files_only": False,
                "max_per_file": 2,
                "include": ["*.txt"],
                "exclude": ["skip.txt"],
                "include_ignored": False,
            },
            [f"two {TOKEN}", "three", f"beta {TOKEN.lower()}"],
            ["skipped"],
        ),
        ("grep", {"pattern": "SMOL-T.KEN", "path": str(ws), "regex": True, "files_only": True}, ["a.txt"], ["two"]),
    ]


def _as_string(value: Any) -> str:
    """The spelling a model writes for a parameter smolagents shows as ``string``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)


def _stringified() -> dict[str, set[str]]:
    """Per tool, the optional parameters whose published type is not a string: the ones mcpadapt shows as one."""
    shown: dict[str, set[str]] = {}
    for spec in TOOLS:
        for name, schema in spec.input_schema["properties"].items():
            types = {branch.get("type") for branch in schema.get("anyOf", [])} - {"null"}
            if name not in spec.input_schema.get("required", []) and types and types != {"string"}:
                shown.setdefault(spec.name, set()).add(name)
    return shown


def test_smolagents_tools_take_the_string_spellings_their_signatures_show(request: Any, tmp_path: Path) -> None:
    assert PYTHON.exists(), f"{PYTHON} is missing: run scripts/setup-test-deps.sh (make test-deps)"
    ws = tmp_path / "ws"
    _tree(ws)
    calls = _calls(ws)
    plan = []
    for tool, typed, _shows, _hides in calls:
        plan.append([tool, typed])
        plan.append(
            [tool, {key: value if key in ("path", "pattern") else _as_string(value) for key, value in typed.items()}]
        )
    cfg = {
        "command": [sys.executable, "-m", "rootbound", "serve", "--no-index", str(ws)],
        "pythonpath": os.environ.get("PYTHONPATH", ""),  # the server runs the rootbound this test imports
        "calls": plan,
    }
    config = tmp_path / "config.json"
    config.write_text(json.dumps(cfg))
    done = subprocess.run(
        [str(PYTHON), str(DRIVER), str(config)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": ""},
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"smolagents driver printed nothing (exit {done.returncode}):\n{done.stderr[-4000:]}"
    report: dict[str, Any] = json.loads(lines[-1])
    assert "crashed" not in report, f"{report['crashed']}\n--- stderr:\n{done.stderr[-3000:]}"

    # What smolagents shows: every optional integer, boolean and list parameter as a string (23 at this writing).
    stringified = _stringified()
    shown = {
        tool: {name for name, spec in inputs.items() if spec["type"] == "string"} & stringified.get(tool, set())
        for tool, inputs in report["inputs"].items()
    }
    assert {tool: names for tool, names in shown.items() if names} == stringified
    # The plan gives every one of them as a string at least once.
    given = {(tool, key) for tool, typed, _shows, _hides in calls for key in typed}
    missing = {(tool, name) for tool, names in stringified.items() for name in names} - given
    assert not missing, f"the plan gives these no string spelling: {sorted(missing)}"
    print_report(
        request.config,
        "smolagents string spellings",
        [f"{sum(map(len, stringified.values()))} optional parameters shown as string; {len(plan)} calls"],
    )
    for (tool, _typed, shows, hides), typed_call, string_call in zip(
        calls, report["calls"][::2], report["calls"][1::2], strict=True
    ):
        assert not typed_call["is_error"], typed_call
        assert not string_call["is_error"], string_call  # the old server: "must be an integer" and the like
        assert string_call["text"] == typed_call["text"], (tool, string_call, typed_call)
        for text in shows:
            assert text in typed_call["text"], (tool, text, typed_call)
        for text in hides:
            assert text not in typed_call["text"], (tool, text, typed_call)
