"""Answers sized for the host (issue 50 item 4): every tool, called with its caps at their largest on a tree built
to fill them, answers within the characters it declares (``_meta["anthropic/maxResultSizeChars"]``), as text and
as its structured content's JSON (what Claude Code shows the model when a tool has an output schema). A tool that
does not declare a size answers a few lines. A cut says so and how to ask for the rest. Through a real stdio
server and the SDK client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from rootbound.workspace.cli import ANSWER_CHARS
from rootbound.workspace.tools.answer_fit import (
    DEFAULT_ANSWER_CHARS,
    LARGE_ANSWERS,
    MAX_ANSWER_CHARS,
    MIN_ANSWER_CHARS,
    RESULT_SIZE_META,
)
from tests.helpers.serve_process import serve, serve_cli

pytestmark = pytest.mark.anyio

SMALL: int = 10_000
"""Claude Code warns past 10,000 tokens; a tool that declares no size stays under this many characters."""
LONG_LINE = "needle " * 100  # 700 characters: grep shows 500 of it
DEEP = ('D"' * 100, 'E"' * 100, 'F"' * 100)  # quotes: two characters each in JSON


def _tree(root: Path) -> dict[str, Any]:
    """A tree that fills every cap: long paths, 620 files in one directory with names that escape (a control
    character: four characters in text, six in JSON), 520 projects, big files."""
    deep = root.joinpath(*DEEP)
    deep.mkdir(parents=True)
    for n in range(600):
        (deep / f"n\x02{'x' * 230}{n:04d}.txt").write_text("needle\n")
    big = []
    for n in range(20):
        path = deep / f"big{n:02d}.txt"
        path.write_text(f"{LONG_LINE}\n" * 200)
        big.append(str(path))
    (root / "huge.txt").write_text("y" * 1_200_000 + "\n")
    projects = root / "p"
    projects.mkdir()
    for n in range(520):
        project = projects / f"{'q' * 200}{n:04d}"
        project.mkdir()
        (project / "go.mod").write_text("module x\n")
    return {"deep": str(deep), "big": big}


def _calls(made: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    deep, big = made["deep"], made["big"]
    return [
        ("list_roots", {"path": deep}),
        ("list_directory", {"path": deep, "details": True, "max_entries": 5000}),
        ("list_directory", {"path": deep, "max_entries": 5000, "sort_by": "size", "reverse": True}),
        ("directory_tree", {"path": ".", "max_depth": 10, "max_entries": 5000}),
        ("read_file", {"path": "huge.txt", "offset": 0, "length": 1_000_000}),
        ("read_file", {"path": "huge.txt"}),
        ("read_file", {"path": big[0], "start_line": 1, "end_line": 200}),
        ("read_multiple_files", {"paths": big}),
        ("read_media_file", {"path": big[0]}),
        ("stat", {"path": big[0]}),
        ("search_files", {"pattern": "*", "path": "."}),
        ("grep", {"pattern": "needle", "max_per_file": 200}),
        ("grep", {"pattern": "needle", "max_per_file": 200, "context": 10}),
        ("grep", {"pattern": "needle", "files_only": True}),
        ("find_projects", {}),
        ("edit_file", {"path": big[0], "old_string": "needle", "new_string": "haystack!", "replace_all": True,
                       "dry_run": True}),
    ]  # fmt: skip


def _sizes(result: types.CallToolResult) -> tuple[str, int]:
    """The answer's text, and the larger of its text and its structured content as compact JSON."""
    text = "".join(block.text for block in result.content if isinstance(block, types.TextContent))
    size = len(text)
    if result.structured_content is not None:
        size = max(size, len(json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))))
    return text, size


@pytest.mark.parametrize("cap", [None, 20_000])
async def test_every_answer_fits_the_size_its_tool_declares(tmp_path: Path, cap: int | None) -> None:
    made = _tree(tmp_path)
    flags = ["--writable"] if cap is None else ["--writable", "--max-answer-chars", str(cap)]
    async with serve("stdio", [*flags, str(tmp_path)], mode="legacy", provider=None) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        declared = {name: (tool.meta or {}).get(RESULT_SIZE_META) for name, tool in listed.items()}
        assert {name for name, size in declared.items() if size is not None} == LARGE_ANSWERS & set(listed)
        assert set(declared.values()) == {None, cap or DEFAULT_ANSWER_CHARS}
        cut = 0
        for tool, arguments in _calls(made):
            result = await client.call_tool(tool, arguments)
            text, size = _sizes(result)
            limit = declared[tool] or SMALL
            assert size <= limit, (tool, arguments, size, limit, text[-300:])
            assert not result.is_error or tool == "read_media_file", (tool, text[:300])
            if size > limit // 2:  # near the bound: a cut, which says how to go on
                cut += 1
                assert any(word in text for word in ("truncated", "cut", "not read", "more: call again")), tool
                assert any(word in text for word in ("cursor=", "offset=", "start_line=", "narrow", "read_file")), tool
        assert cut >= 8  # the tree did fill the caps: most large tools were cut


def test_the_default_fits_claude_code_s_default_cap() -> None:
    # 25,000 tokens (MAX_MCP_OUTPUT_TOKENS default) at 2.7 characters a token; code and prose run 3-4.
    assert DEFAULT_ANSWER_CHARS <= 25_000 * 2.7
    assert ANSWER_CHARS == (MIN_ANSWER_CHARS, DEFAULT_ANSWER_CHARS, MAX_ANSWER_CHARS)


@pytest.mark.parametrize("value", ["100", "500001", "many"])
def test_an_answer_size_out_of_range_is_refused_in_one_line(value: str) -> None:
    done = serve_cli("--max-answer-chars", value, ".")
    assert done.returncode == 2
    assert "--max-answer-chars" in done.stderr and "from 8192 to 500000" in done.stderr
    assert "Traceback" not in done.stderr and value not in done.stderr.replace("500000", "")
