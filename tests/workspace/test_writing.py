"""``rootbound serve --writable`` over the wire: every writing tool through a real stdio subprocess and real
Streamable HTTP on 127.0.0.1, in both eras, including the refusals (outside the roots, through a symlinked
parent, onto a root, onto a FIFO). After each session the outside tree is compared byte for byte."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp import Client, MCPError
from rootbound import Root
from rootbound.mcp import RootsProvider
from tests.helpers.serve_process import serve

pytestmark = pytest.mark.anyio

MODES = ("legacy", "2026-07-28")
WRITE_TOOLS = {"edit_file", "write_file", "create_directory", "move_file", "delete_file"}
# (destructiveHint, idempotentHint) per tool: what a host may rely on.
HINTS = {
    "edit_file": (True, False),
    "write_file": (True, True),
    "create_directory": (False, True),
    "move_file": (True, False),
    "delete_file": (True, True),
}


def snapshot(path: Path) -> dict[str, object]:
    found: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            st = full.lstat()
            key = str(full.relative_to(path))
            if stat.S_ISREG(st.st_mode):
                found[key] = ("file", full.read_bytes(), st.st_mode, st.st_mtime_ns)
            elif stat.S_ISLNK(st.st_mode):
                found[key] = ("link", os.readlink(full))
            else:
                found[key] = ("other", st.st_mode, st.st_mtime_ns)
    return found


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = Path(os.path.realpath(tmp_path))
    work = base / "work"
    (work / "app" / "src").mkdir(parents=True)
    (work / "other").mkdir()
    (work / "app" / "src" / "main.py").write_text("def main():\n    # TODO\n    return 1\n")
    (work / "app" / "win.txt").write_bytes(b"alpha\r\nbeta\r\n")
    (base / "outside" / "dir").mkdir(parents=True)
    (base / "outside" / "secret.txt").write_text("SECRET\n")
    (base / "outside" / "dir" / "f.txt").write_text("outside file\n")
    (work / "app" / "linkdir").symlink_to(base / "outside" / "dir")  # a parent directory leading outside
    (work / "app" / "leak.txt").symlink_to(base / "outside" / "secret.txt")
    os.mkfifo(work / "app" / "pipe")
    return base


async def call(client: Client, tool: str, **arguments: Any) -> tuple[bool, str, dict[str, Any] | None]:
    result = await client.call_tool(tool, arguments)
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return bool(result.is_error), content.text, result.structured_content


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_writing_tools_over_the_wire(tree: Path, transport: str, mode: str) -> None:
    work, outside = tree / "work", tree / "outside"
    app = work / "app"
    before = snapshot(outside)
    provider = RootsProvider([Root.from_path(app, "App"), work / "other"])
    with anyio.fail_after(90):
        async with serve(transport, ["--writable", str(work)], mode=mode, provider=provider) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(listed) >= WRITE_TOOLS
            for name, (destructive, idempotent) in HINTS.items():
                hints = listed[name].annotations
                assert hints is not None
                assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
                    False,
                    destructive,
                    idempotent,
                ), name

            # edit_file: the dry run shows the diff and writes nothing; the edit writes exactly that diff.
            main = app / "src" / "main.py"
            original = main.read_bytes()
            edits = [{"old_text": "    # TODO\n", "new_text": "    print('hi')\n"}]
            error, text, data = await call(client, "edit_file", path="src/main.py", edits=edits, dry_run=True)
            assert not error, text
            assert main.read_bytes() == original
            assert data is not None and (data["written"], data["dry_run"]) == (False, True)
            assert "-    # TODO\n+    print('hi')\n" in data["diff"]
            assert text.startswith("dry run: ")
            error, text, data = await call(
                client, "edit_file", path="src/main.py", edits=edits, expected_sha256=data["sha256"]
            )
            assert not error, text
            assert main.read_text() == "def main():\n    print('hi')\n    return 1\n"
            assert data is not None and data["written"] and data["edits"] == [{"lines": [2], "tolerances": []}]
            # A stale precondition, an ambiguous edit and a missing text are typed refusals; nothing changes.
            stale = await call(client, "edit_file", path="src/main.py", edits=edits, expected_sha256="0" * 64)
            assert stale[0] and "changed since it was read" in stale[1]
            twice = await call(client, "edit_file", path="src/main.py", edits=[{"old_text": "i", "new_text": "I"}])
            assert twice[0] and twice[1].startswith("edits[0]: old text matched") and "lines 1, 2" in twice[1]
            # Tolerant: an LF edit of a CRLF file keeps CRLF and says so.
            error, text, data = await call(
                client, "edit_file", path="win.txt", edits=[{"old_text": "alpha\nbeta\n", "new_text": "a\nb\n"}]
            )
            assert not error, text
            assert (app / "win.txt").read_bytes() == b"a\r\nb\r\n"
            assert "matched tolerantly (line-endings)" in text

            # write_file, create_directory, move_file (across two roots), delete_file.
            error, text, data = await call(
                client, "write_file", path="pkg/sub/mod.py", content="x = 1\n", create_parents=True
            )
            assert not error, text
            assert (app / "pkg" / "sub" / "mod.py").read_text() == "x = 1\n"
            assert data == {
                "path": str(app / "pkg" / "sub" / "mod.py"),
                "bytes": 6,
                "sha256": data["sha256"] if data else None,
            }
            exists = await call(client, "write_file", path="pkg/sub/mod.py", content="y", overwrite=False)
            assert exists[0] and exists[1].endswith("(exists)")
            assert (await call(client, "create_directory", path="a/b/c"))[0] is False
            assert (app / "a" / "b" / "c").is_dir()
            error, text, data = await call(
                client, "move_file", source="pkg/sub/mod.py", destination=str(work / "other" / "mod.py")
            )
            assert not error, text
            assert data == {"destination": str(work / "other" / "mod.py")}
            assert (work / "other" / "mod.py").read_text() == "x = 1\n"
            error, text, _ = await call(client, "delete_file", path=str(work / "other" / "mod.py"))
            assert not error and not (work / "other" / "mod.py").exists()

            # Refusals: outside the roots, through a symlinked parent, onto a root, onto a FIFO. No echo.
            refusals: list[tuple[str, dict[str, Any], str]] = [
                ("write_file", {"path": str(outside / "new.txt"), "content": "x"}, "(outside roots)"),
                ("write_file", {"path": "linkdir/new.txt", "content": "x"}, "(symlink escapes root)"),
                ("write_file", {"path": "linkdir/f.txt", "content": "x"}, "(symlink escapes root)"),
                ("write_file", {"path": "leak.txt", "content": "x"}, "(symlink escapes root)"),
                ("write_file", {"path": "pipe", "content": "x"}, "(not a regular file)"),
                ("write_file", {"path": "linkdir/deep/x", "content": "x", "create_parents": True}, "escapes root)"),
                ("edit_file", {"path": "linkdir/f.txt", "edits": [{"old_text": "o", "new_text": "0"}]}, "root)"),
                ("edit_file", {"path": "pipe", "edits": [{"old_text": "o", "new_text": "0"}]}, "regular file)"),
                ("edit_file", {"path": "leak.txt", "edits": [{"old_text": "S", "new_text": "s"}]}, "root)"),
                ("create_directory", {"path": "linkdir/made"}, "(symlink escapes root)"),
                ("create_directory", {"path": str(outside / "made")}, "(outside roots)"),
                ("move_file", {"source": "src/main.py", "destination": str(outside / "m.py")}, "(outside roots)"),
                ("move_file", {"source": "src/main.py", "destination": "linkdir/m.py"}, "(symlink escapes root)"),
                ("move_file", {"source": "linkdir/f.txt", "destination": "stolen.txt"}, "(symlink escapes root)"),
                ("move_file", {"source": "src/main.py", "destination": str(app)}, "a root cannot be moved"),
                ("move_file", {"source": str(work / "other"), "destination": "x"}, "a root cannot be moved"),
                ("move_file", {"source": "src", "destination": "src/inside"}, "into itself"),
                ("move_file", {"source": "src/main.py", "destination": "pipe", "overwrite": True}, "regular file)"),
                ("move_file", {"source": "src/main.py", "destination": "pipe"}, "(exists)"),
                ("delete_file", {"path": "linkdir/f.txt"}, "(symlink escapes root)"),
                ("delete_file", {"path": str(outside / "secret.txt")}, "(outside roots)"),
                ("delete_file", {"path": "src"}, "(is a directory)"),
            ]
            for tool, arguments, reason in refusals:
                error, text, _ = await call(client, tool, **arguments)
                assert error, (tool, arguments, text)
                assert reason in text, (tool, arguments, text)
                assert "SECRET" not in text and "outside file" not in text, text
            assert stat.S_ISFIFO(os.lstat(app / "pipe").st_mode)
            assert main.read_text() == "def main():\n    print('hi')\n    return 1\n"
    assert snapshot(outside) == before


@pytest.mark.parametrize("mode", MODES)
async def test_no_writing_tool_without_writable(tree: Path, mode: str) -> None:
    work = tree / "work"
    provider = RootsProvider([work / "app"])
    with anyio.fail_after(60):
        async with serve("stdio", [str(work)], mode=mode, provider=provider) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert not names & WRITE_TOOLS
            for tool in sorted(WRITE_TOOLS):
                with pytest.raises(MCPError) as unknown:  # not offered: an unknown tool, naming the flag
                    await call(client, tool, path="x", source="x", destination="y", content="")
                assert unknown.value.code == -32602
                assert (
                    unknown.value.message
                    == f"{tool} is a writing tool and this server is read-only: the operator starts it with "
                    "rootbound serve --writable to offer the writing tools"
                )
    assert (work / "app" / "src" / "main.py").read_text() == "def main():\n    # TODO\n    return 1\n"
