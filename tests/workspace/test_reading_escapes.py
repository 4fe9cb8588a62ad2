"""Escape and race tests for the reading side's file operations, with both resolvers (``openat2`` and ``walk``).

Every new way in (line windows, several files, media, trees, listings with details, ignore-aware walks and the
``.gitignore`` files they read) is tried against symlinks out of the root, ``..``, absolute paths, a planted
``.gitignore`` that is a link to a file outside, and a directory swapped for a symlink while a walk runs.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from rootbound import Boundary, RootedFS
from rootbound.confine import syscalls as o2
from rootbound.workspace.tools import Limits, ToolError, call_tool

RESOLVERS = [
    pytest.param("openat2", marks=pytest.mark.skipif(not o2.available(), reason="openat2 unavailable")),
    "walk",
]
SECRET = "SECRET-7f3a"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = tmp_path.resolve()
    outside, root = base / "outside", base / "root"
    (outside / "dir").mkdir(parents=True)
    (outside / "dir" / "s.txt").write_text(f"{SECRET}\n")
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (outside / "ignore").write_text("*.txt\n")  # would hide every .txt if a linked .gitignore were followed
    (outside / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + SECRET.encode())
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "ok.txt").write_text("inside\n")
    (root / "file-link.txt").symlink_to(outside / "secret.txt")
    (root / "dir-link").symlink_to(outside / "dir")
    (root / "img-link.png").symlink_to(outside / "img.png")
    (root / "sub" / ".gitignore").symlink_to(outside / "ignore")
    (root / "abs-link").symlink_to("/")
    return root


def fs_for(root: Path, resolver: str) -> RootedFS:
    return RootedFS(Boundary([root]), resolver=resolver)  # type: ignore[arg-type]


ATTEMPTS = [
    ("read_file", {"path": "file-link.txt"}),
    ("read_file", {"path": "file-link.txt", "tail": 1}),
    ("read_file", {"path": "file-link.txt", "start_line": 1, "end_line": 1}),
    ("read_file", {"path": "dir-link/s.txt", "head": 1}),
    ("read_file", {"path": "../outside/secret.txt", "offset": 0, "length": 5}),
    ("read_file", {"path": "abs-link/etc/hostname"}),
    ("read_media_file", {"path": "img-link.png"}),
    ("read_media_file", {"path": "../outside/img.png"}),
    ("directory_tree", {"path": "dir-link"}),
    ("directory_tree", {"path": ".."}),
    ("list_directory", {"path": "dir-link", "details": True}),
    ("list_directory", {"path": "abs-link", "details": True}),
    ("grep", {"pattern": SECRET, "path": "dir-link"}),
    ("grep", {"pattern": SECRET, "path": "file-link.txt"}),
    ("search_files", {"pattern": "*.txt", "path": "dir-link"}),
]


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize(("tool", "args"), ATTEMPTS)
def test_escapes_are_denied(tree: Path, resolver: str, tool: str, args: dict[str, object]) -> None:
    fs = fs_for(tree, resolver)
    with pytest.raises(ToolError) as info:
        call_tool(tool, fs, args, Limits())
    message = str(info.value)
    assert message.endswith(("(symlink escapes root)", "(outside roots)", "(not a directory)", "(symlink loop)")), (
        message
    )
    assert SECRET not in message and str(tree.parent) not in message


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_several_files_deny_each_escape_inline(tree: Path, resolver: str) -> None:
    fs = fs_for(tree, resolver)
    paths = ["sub/ok.txt", "file-link.txt", "dir-link/s.txt", "/etc/hostname"]
    out = call_tool("read_multiple_files", fs, {"paths": paths}, Limits())
    assert SECRET not in out.text
    sections = out.text.split("\n\n==> ")
    assert sections[0] == f"==> {tree / 'sub' / 'ok.txt'} <==\ninside\n"
    assert sections[1] == (
        "paths[1] <==\nerror: a symlink leads outside the allowed roots: the link's target is outside the roots; "
        "list_roots shows what may be read (symlink escapes root)"
    )
    assert sections[2].endswith("(symlink escapes root)")
    assert sections[3].endswith("(outside roots)")


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_walks_report_links_but_never_follow_them(tree: Path, resolver: str) -> None:
    fs = fs_for(tree, resolver)
    limits = Limits()
    grep = call_tool("grep", fs, {"pattern": SECRET, "include_ignored": True}, limits)
    assert grep.text.startswith("(no matches in ")
    assert "symlinks (not followed; grep its target's path)]" in grep.text  # said, not only counted (issue 27)
    assert grep.structured is not None and grep.structured["files_skipped"] >= 2  # the file links
    # The linked .gitignore is not read: sub/ok.txt stays visible. Links match by name (find -name), unfollowed.
    found = call_tool("search_files", fs, {"pattern": "*.txt"}, limits)
    expected = [str(tree / "file-link.txt"), str(tree / "sub" / "ok.txt")]
    assert found.structured == {"matches": expected, "truncated": False}
    shown = call_tool("directory_tree", fs, {"path": ".", "max_depth": 5}, limits)
    assert shown.text.splitlines()[1:] == [
        "abs-link@",
        "dir-link@",
        "file-link.txt@",
        "img-link.png@",
        "sub/",
        "  .gitignore@",
        "  ok.txt",
    ]
    listing = call_tool("list_directory", fs, {"path": ".", "details": True}, limits)
    assert listing.structured is not None
    assert {e["name"]: e["type"] for e in listing.structured["entries"]}["dir-link"] == "symlink"


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_directory_swapped_for_a_link_during_walks(tree: Path, resolver: str) -> None:
    """A directory flips between a real directory and a link to the outside while walks run: nothing outside is
    ever listed or read (each step opens one name beneath an fd it holds, with O_NOFOLLOW)."""
    fs = fs_for(tree, resolver)
    swap = tree / "swap"
    real = tree / "swap-real"
    real.mkdir()
    (real / "in.txt").write_text("inside swap\n")
    outside_dir = tree.parent / "outside" / "dir"
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            try:
                os.rename(real, swap)
                os.rename(swap, real)
                swap.symlink_to(outside_dir)
                swap.unlink()
            except OSError:
                pass

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        for _ in range(150):
            walks: list[tuple[str, dict[str, Any]]] = [
                ("grep", {"pattern": SECRET, "include_ignored": True}),
                ("search_files", {"pattern": "s.txt"}),
                ("directory_tree", {"path": ".", "max_depth": 4}),
            ]
            for tool, args in walks:
                try:
                    out = call_tool(tool, fs, args, Limits())
                except ToolError:
                    continue
                assert SECRET not in out.text
                assert "s.txt" not in out.text
    finally:
        stop.set()
        flipper.join()


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_line_reads_of_special_files_are_refused(tree: Path, resolver: str) -> None:
    os.mkfifo(tree / "fifo")
    fs = fs_for(tree, resolver)
    for args in ({"path": "fifo"}, {"path": "fifo", "tail": 3}, {"path": "sub"}):
        with pytest.raises(ToolError):
            call_tool("read_file", fs, args, Limits())
    with pytest.raises(ToolError):
        call_tool("read_media_file", fs, {"path": "fifo"}, Limits())


def test_search_files_escapes_a_control_character_in_a_name(tmp_path: Path) -> None:
    """A name is attacker-chosen: one with a newline (or ESC) is one escaped line, not a forged second path; the
    structured answer keeps the exact names. Checked with many plain names beside it (the whole list is tested for
    controls at once)."""
    for n in range(50):
        (tmp_path / f"plain{n:02d}.txt").write_text("")
    (tmp_path / "forged\nINJECTED.txt").write_text("")
    (tmp_path / "esc\x1b[31m.txt").write_text("")
    with Boundary([tmp_path]) as boundary:
        found = call_tool("search_files", RootedFS(boundary), {"pattern": "*.txt"}, Limits())
        plain = call_tool("search_files", RootedFS(boundary), {"pattern": "plain*"}, Limits())
    lines = found.text.splitlines()
    assert len(lines) == 52 and not any(line.startswith("INJECTED") for line in lines)
    assert f"{tmp_path}/forged\\x0aINJECTED.txt" in lines and f"{tmp_path}/esc\\x1b[31m.txt" in lines
    assert found.structured is not None and str(tmp_path / "forged\nINJECTED.txt") in found.structured["matches"]
    assert plain.text.splitlines() == [f"{tmp_path}/plain{n:02d}.txt" for n in range(50)]
