# mypy: ignore-errors
# Runs in a framework's own venv (.deps/frameworks/NAME), against that framework's SDK: not type-checked here.
"""The plan every framework driver runs (stdlib only: it is imported in each framework's own venv).

A driver adapts one framework to :class:`Adapter` (list tools, call a tool with arguments the framework built,
change the declared roots) and calls :func:`run`; it prints one JSON report on its last stdout line, which the
pytest side (``test_frameworks.py``) judges. Nothing here decides pass or fail.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

READ_TOOLS = (
    "list_roots",
    "list_directory",
    "directory_tree",
    "read_file",
    "read_multiple_files",
    "read_media_file",
    "stat",
    "search_files",
    "grep",
    "find_projects",
)
WRITE_TOOLS = ("write_file", "edit_file", "apply_patch", "create_directory", "move_file", "delete_file")


@dataclass
class Outcome:
    """One tool call as the framework handed it back: whether it failed, and its text (cut)."""

    is_error: bool
    text: str

    def as_json(self) -> dict[str, Any]:
        return {"is_error": self.is_error, "text": self.text[:4000]}


@dataclass
class Adapter:
    """What a driver gives the plan. ``set_roots`` is ``None`` where the framework cannot declare roots."""

    tools: Callable[[], Awaitable[dict[str, dict[str, Any]]]]
    call: Callable[[str, dict[str, Any]], Awaitable[Outcome]]
    set_roots: Callable[[list[str]], Awaitable[None]] | None = None
    notes: list[str] = field(default_factory=list)


def config() -> dict[str, Any]:
    with open(sys.argv[1], encoding="utf-8") as handle:
        loaded: dict[str, Any] = json.load(handle)
    return loaded


def uri(path: str) -> str:
    return "file://" + path


def _patch(path: str) -> str:
    """A Codex-format patch that changes the edited line again."""
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n-edited text\n+patched text\n*** End Patch\n"


def main_calls(cfg: dict[str, Any], root: str) -> list[tuple[str, dict[str, Any]]]:
    """Each tool's main use, inside ``root`` (the declared root, or the DIR)."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_roots", {}),
        ("list_directory", {"path": root}),
        ("directory_tree", {"path": root}),
        ("read_file", {"path": f"{root}/a.txt"}),
        ("read_multiple_files", {"paths": [f"{root}/a.txt"]}),
        ("read_media_file", {"path": f"{root}/pixel.png"}),
        ("stat", {"path": f"{root}/a.txt"}),
        ("search_files", {"pattern": "*.txt", "path": root}),
        ("grep", {"pattern": cfg["token_a"], "path": root}),
        ("find_projects", {}),
    ]
    if cfg["writable"]:
        calls += [
            ("write_file", {"path": f"{root}/new.txt", "content": "fresh text\n"}),
            ("edit_file", {"path": f"{root}/new.txt", "edits": [{"old_text": "fresh", "new_text": "edited"}]}),
            ("apply_patch", {"patch": _patch(f"{root}/new.txt")}),
            ("create_directory", {"path": f"{root}/made"}),
            ("move_file", {"source": f"{root}/new.txt", "destination": f"{root}/made/moved.txt"}),
            ("delete_file", {"path": f"{root}/made/moved.txt"}),
        ]
    return calls


async def _call(adapter: Adapter, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One call; a framework that raises is recorded (``raised``), so the other calls still run."""
    try:
        return (await adapter.call(name, arguments)).as_json()
    except Exception as error:  # the judge decides: a raise where a result was due fails the cell
        return {"is_error": True, "raised": True, "text": f"{type(error).__name__}: {error}"[:4000]}


async def _plan(cfg: dict[str, Any], adapter: Adapter) -> dict[str, Any]:
    report: dict[str, Any] = {"calls": {}, "notes": adapter.notes}
    schemas = await adapter.tools()
    report["tools"] = sorted(schemas)
    declares = adapter.set_roots is not None and cfg.get("declare_roots", True)
    if declares:
        assert adapter.set_roots is not None
        # Roots declared, none listed yet: a client without a workspace is served the DIR (stateless
        # 2026-07-28 HTTP excepted: nothing there can tell it from a withdrawal).
        report["empty_first_roots"] = await _call(adapter, "list_roots", {})
        report["empty_first_read"] = await _call(adapter, "read_file", {"path": f"{cfg['a']}/a.txt"})
        await adapter.set_roots([cfg["a"]])
    for name, arguments in main_calls(cfg, cfg["a"]):
        report["calls"][name] = await _call(adapter, name, arguments)
    if declares:
        assert adapter.set_roots is not None
        # Inside the DIR, outside the declared root: refused.
        report["outside_root"] = await _call(adapter, "read_file", {"path": f"{cfg['b']}/b.txt"})
        await adapter.set_roots([cfg["b"]])
        report["after_change_new"] = await _call(adapter, "read_file", {"path": f"{cfg['b']}/b.txt"})
        report["after_change_old"] = await _call(adapter, "read_file", {"path": f"{cfg['a']}/a.txt"})
        report["after_change_roots"] = await _call(adapter, "list_roots", {})
        # Every root withdrawn: nothing is served, not even the DIR.
        await adapter.set_roots([])
        report["withdrawn_read"] = await _call(adapter, "read_file", {"path": f"{cfg['b']}/b.txt"})
        report["withdrawn_roots"] = await _call(adapter, "list_roots", {})
    report["declared_roots"] = declares
    # Outside the DIR altogether: refused whatever the roots.
    report["outside_dir"] = await _call(adapter, "read_file", {"path": cfg["outside"]})
    return report


def run(build: Callable[[dict[str, Any]], Any]) -> None:
    """``build(cfg)`` is an async context manager yielding an :class:`Adapter`; prints the JSON report."""
    cfg = config()

    async def go() -> dict[str, Any]:
        async with build(cfg) as adapter:
            return await asyncio.wait_for(_plan(cfg, adapter), cfg.get("timeout", 120))

    try:
        report = asyncio.run(go())
    except BaseException:  # the report carries the failure: the test prints it
        report = {"crashed": traceback.format_exc()[-6000:]}
    print(json.dumps(report), flush=True)
