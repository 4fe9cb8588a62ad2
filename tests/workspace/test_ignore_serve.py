"""``rootbound serve`` over a real stdio subprocess, both protocol eras, with the real SDK client: ``search_files``,
``grep`` and ``directory_tree`` honour ``.ignore``, ``.rgignore`` and ``.git/info/exclude`` beside ``.gitignore``
(ripgrep's precedence), ``include_ignored`` turns all of them off, and ``directory_tree`` marks ``/…`` only on a
directory at ``max_depth`` with something to show.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp import Client
from rootbound.mcp import RootsProvider
from tests.helpers.serve_process import serve

pytestmark = pytest.mark.anyio

MODES = ("legacy", "2026-07-28")
FILES = {
    ".git/info/exclude": "*.bak\n",
    ".gitignore": "*.log\n!keep.bak\n",
    ".ignore": "*.tmp\n!keep.log\n",
    ".rgignore": "!b.tmp\n",
    "src/.gitignore": "!*.tmp\n",  # cannot re-include what the top .ignore ignores
    "src/main.py": "NEEDLE\n",
    "src/a.tmp": "NEEDLE\n",
    "src/old.bak": "NEEDLE\n",
    "a.log": "NEEDLE\n",
    "keep.log": "NEEDLE\n",
    "a.tmp": "NEEDLE\n",
    "b.tmp": "NEEDLE\n",
    "a.bak": "NEEDLE\n",
    "keep.bak": "NEEDLE\n",
    "tree/full/x.py": "NEEDLE\n",
    "tree/logs/x.log": "NEEDLE\n",
    "tree/full/deeper/y.py": "NEEDLE\n",
}
VISIBLE = ["b.tmp", "keep.bak", "keep.log", "src/main.py", "tree/full/deeper/y.py", "tree/full/x.py"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    proj = tmp_path_factory.mktemp("ignore").resolve() / "proj"
    for rel, content in FILES.items():
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text(content)
    (proj / "tree" / "empty").mkdir()
    return proj


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def check(client: Client, proj: Path) -> None:
    found = structured(await client.call_tool("search_files", {"pattern": "*.*"}))
    assert [str(Path(p).relative_to(proj)) for p in found["matches"]] == [
        ".gitignore", ".ignore", ".rgignore", *VISIBLE[:3], "src/.gitignore", *VISIBLE[3:]
    ]  # fmt: skip
    grep = structured(await client.call_tool("grep", {"pattern": "NEEDLE", "files_only": True}))
    assert [str(Path(p).relative_to(proj)) for p in grep["files"]] == VISIBLE
    below = structured(await client.call_tool("grep", {"pattern": "NEEDLE", "path": "src", "files_only": True}))
    assert below["files"] == [str(proj / "src" / "main.py")]  # info/exclude and .ignore above the start apply
    everything = structured(await client.call_tool("grep", {"pattern": "NEEDLE", "include_ignored": True}))
    assert len(everything["files"]) == len([rel for rel, content in FILES.items() if content == "NEEDLE\n"])
    result = await client.call_tool("directory_tree", {"path": "tree", "max_depth": 1})
    assert text(result).splitlines() == [f"{proj / 'tree'}/", "empty/", "full/…", "logs/"]
    assert structured(result)["depth_limited"] is True
    assert [entry.get("more", False) for entry in structured(result)["entries"]] == [False, True, False]
    result = await client.call_tool("directory_tree", {"path": "tree", "max_depth": 1, "include_ignored": True})
    assert text(result).splitlines()[1:] == ["empty/", "full/…", "logs/…"]
    result = await client.call_tool("directory_tree", {"path": "tree", "max_depth": 1, "exclude": ["full/"]})
    assert text(result).splitlines()[1:] == ["empty/", "logs/"]
    assert structured(result)["depth_limited"] is False


@pytest.mark.parametrize("mode", MODES)
async def test_ignore_files_over_stdio(project: Path, mode: str) -> None:
    with anyio.fail_after(60):
        async with serve("stdio", [str(project)], mode=mode, provider=RootsProvider([project])) as client:
            await check(client, project)
