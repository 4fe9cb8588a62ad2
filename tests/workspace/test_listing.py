"""``list_directory`` pages and their cursor (issue 16 #5), and ``stat``'s single open, with both resolvers.

In-process on a real :class:`RootedFS` (the tool functions, no transport): every order pages through every entry
exactly once; a forged, foreign, stale or oversized cursor is a fixed tool error that never echoes it; entries
added or removed between pages behave as documented; memory is bounded by the page, not the directory; a cursor
cannot lead out of the root. Over real ``rootbound serve`` subprocesses (stdio and Streamable HTTP, both eras):
a client pages through a few thousand entries by ``nextCursor``.
"""

from __future__ import annotations

import os
import re
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import pytest

from rootbound import Boundary, RootedFS
from rootbound.confine import syscalls as o2
from rootbound.mcp import RootsProvider
from rootbound.workspace.tools import Limits, ToolError, call_tool
from rootbound.workspace.tools import directory_pages as _listing
from rootbound.workspace.tools.directory_pages import BAD_CURSOR, FOREIGN_CURSOR, ORDER_CURSOR, Order, list_page
from tests.helpers.serve_process import serve

RESOLVERS = [
    pytest.param("openat2", marks=pytest.mark.skipif(not o2.available(), reason="openat2 unavailable")),
    "walk",
]
MODES = ("legacy", "2026-07-28")
SECRET = "SECRET-b41d"


def fs_for(root: Path, resolver: str = "walk") -> RootedFS:
    return RootedFS(Boundary([root]), resolver=resolver)  # type: ignore[arg-type]


def page_through(fs: RootedFS, args: dict[str, Any], limits: Limits) -> tuple[list[str], int]:
    """Every name of a listing, by following ``nextCursor``; and the number of pages."""
    names: list[str] = []
    cursor = None
    pages = 0
    while True:
        out = call_tool("list_directory", fs, {**args, **({"cursor": cursor} if cursor else {})}, limits)
        assert out.structured is not None
        pages += 1
        names += [entry["name"] for entry in out.structured["entries"]]
        cursor = out.structured.get("nextCursor")
        assert out.structured["truncated"] is (cursor is not None)
        if cursor is None:
            return names, pages
        assert pages < 1000


@pytest.fixture
def wide(tmp_path: Path) -> Path:
    """1,234 entries: files of 0-9 bytes (many equal sizes: ties are broken by name), directories, symlinks."""
    root = tmp_path.resolve() / "wide"
    root.mkdir()
    for i in range(1200):
        (root / f"f{i:04}").write_bytes(b"x" * (i % 10))
    for i in range(30):
        (root / f"d{i:02}").mkdir()
    for i in range(4):
        (root / f"l{i}").symlink_to(f"f{i:04}")
    return root


def expected(root: Path, sort_by: str, reverse: bool) -> list[str]:
    names = os.listdir(root)
    if sort_by == "name":
        return sorted(names, reverse=reverse)
    field = "st_size" if sort_by == "size" else "st_mtime_ns"
    return sorted(names, key=lambda n: (getattr(os.lstat(root / n), field), n), reverse=reverse)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize(
    ("sort_by", "reverse"), [("name", False), ("name", True), ("size", False), ("size", True), ("modified", False)]
)
def test_pages_cover_every_entry_once_in_order(wide: Path, resolver: str, sort_by: str, reverse: bool) -> None:
    fs = fs_for(wide, resolver)
    args = {"path": ".", "sort_by": sort_by, "reverse": reverse, "max_entries": 100}
    names, pages = page_through(fs, args, Limits())
    assert names == expected(wide, sort_by, reverse)
    assert pages == 13


def test_text_marks_each_page_with_its_place_and_cursor(wide: Path) -> None:
    fs = fs_for(wide)
    first = call_tool("list_directory", fs, {"path": ".", "max_entries": 500}, Limits())
    assert first.structured is not None
    cursor = first.structured["nextCursor"]
    assert first.text.splitlines()[0] == "d00/"
    assert first.text.splitlines()[-1] == f'[entries 1-500 of 1234; more: call again with cursor="{cursor}"]'
    second = call_tool("list_directory", fs, {"path": ".", "max_entries": 500, "cursor": cursor}, Limits())
    assert second.structured is not None
    assert second.text.splitlines()[-1].startswith("[entries 501-1000 of 1234; more: call again with cursor=")
    last = call_tool(
        "list_directory", fs, {"path": ".", "max_entries": 500, "cursor": second.structured["nextCursor"]}, Limits()
    )
    assert last.text.splitlines()[-2:] == ["l3@", "[entries 1001-1234 of 1234: the end]"]
    assert last.structured is not None and "nextCursor" not in last.structured
    assert last.structured["total"] == 1234 and last.structured["truncated"] is False


def test_default_page_is_the_result_limit_and_details_do_not_change_the_order(wide: Path) -> None:
    fs = fs_for(wide)
    out = call_tool("list_directory", fs, {"path": ".", "details": True}, Limits(max_results=7))
    assert out.structured is not None
    assert [e["name"] for e in out.structured["entries"]] == expected(wide, "name", False)[:7]
    assert set(out.structured["entries"][0]) == {"name", "type", "size", "modified"}
    names, _ = page_through(fs, {"path": ".", "details": True}, Limits(max_results=300))
    assert names == expected(wide, "name", False)


def test_entries_match_the_item_shape_the_output_schema_declares(wide: Path) -> None:
    """The output schema declares each entry's shape (``items``, inline: a ``$ref`` costs a validating client a
    resolution per entry), and every entry the server builds conforms to it, with and without details."""
    from jsonschema import Draft202012Validator

    from rootbound.workspace.tools.specs import TOOLS

    schema = next(tool for tool in TOOLS if tool.name == "list_directory").output_schema
    assert schema is not None
    items = schema["properties"]["entries"]["items"]
    assert items["required"] == ["name", "type"]
    assert items["properties"]["type"]["enum"] == ["file", "dir", "symlink", "other"]
    whole = Draft202012Validator(schema)
    entry = Draft202012Validator({**items, "additionalProperties": False})
    fs = fs_for(wide)
    for details in (False, True):
        out = call_tool("list_directory", fs, {"path": ".", "details": details, "max_entries": 40}, Limits())
        assert out.structured is not None
        whole.validate(out.structured)
        for item in out.structured["entries"]:
            entry.validate(item)
        assert ("size" in out.structured["entries"][0]) is details
        assert not whole.is_valid({**out.structured, "entries": [{"name": "x"}]})  # the item shape is enforced
        assert not whole.is_valid({**out.structured, "entries": [{"name": "x", "type": "pipe"}]})


def test_a_full_text_ends_the_page_early_and_the_cursor_continues_from_the_last_line(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    for i in range(40):
        (root / (f"{i:02}" + "\x1b" * 200)).touch()  # each line escapes to ~800 characters
    fs = fs_for(root)
    limits = Limits(max_output=8000)
    out = call_tool("list_directory", fs, {"path": "."}, limits)
    assert out.structured is not None
    shown = len(out.structured["entries"])
    assert 1 <= shown < 40 and len(out.text) <= 8000
    names, _ = page_through(fs, {"path": "."}, limits)
    assert names == sorted(os.listdir(root))


# -- the cursor is untrusted input ------------------------------------------------------------------------------------


def _flip(token: str, at: int) -> str:
    return token[:at] + ("A" if token[at] != "A" else "B") + token[at + 1 :]


def test_a_forged_foreign_or_oversized_cursor_is_a_fixed_error(wide: Path) -> None:
    fs = fs_for(wide)
    (wide.parent / "other").mkdir()
    (wide.parent / "other" / "x").touch()
    out = call_tool("list_directory", fs, {"path": ".", "max_entries": 10}, Limits())
    assert out.structured is not None
    good: str = out.structured["nextCursor"]
    other_fs = fs_for(wide.parent)
    other = call_tool("list_directory", other_fs, {"path": "wide", "max_entries": 10}, Limits())
    assert other.structured is not None
    cases: list[tuple[str, Any, str]] = [
        ("a flipped byte", _flip(good, len(good) // 2), BAD_CURSOR),
        ("a flipped MAC byte", _flip(good, len(good) - 3), BAD_CURSOR),
        ("truncated", good[:-4], BAD_CURSOR),
        ("not base64url", good[:-1] + "/", BAD_CURSOR),
        ("too short", "AAAA", BAD_CURSOR),
        ("oversized", "A" * 5000, BAD_CURSOR),
        ("not a string", 12345, BAD_CURSOR),
        ("with a NUL", good + "\x00", BAD_CURSOR),
        (SECRET, SECRET * 10, BAD_CURSOR),
    ]
    for label, cursor, message in cases:
        with pytest.raises(ToolError) as info:
            call_tool("list_directory", fs, {"path": ".", "cursor": cursor}, Limits())
        assert str(info.value) == message, label
        assert SECRET not in str(info.value)
    # Authentic, but for another directory (through another path), or another order.
    with pytest.raises(ToolError, match="^" + re.escape(FOREIGN_CURSOR) + "$"):
        call_tool("list_directory", other_fs, {"path": "other", "cursor": good}, Limits())
    with pytest.raises(ToolError, match="^" + re.escape(ORDER_CURSOR) + "$"):
        call_tool("list_directory", fs, {"path": ".", "sort_by": "size", "cursor": good}, Limits())
    with pytest.raises(ToolError, match="^" + re.escape(ORDER_CURSOR) + "$"):
        call_tool("list_directory", fs, {"path": ".", "reverse": True, "cursor": good}, Limits())
    # The same directory reached from another root's path: the cursor belongs to the directory, not the spelling.
    again = call_tool("list_directory", other_fs, {"path": "wide", "cursor": good, "max_entries": 10}, Limits())
    assert again.structured is not None
    assert again.structured["entries"][0]["name"] == expected(wide, "name", False)[10]


def test_a_cursor_from_another_server_process_is_refused(wide: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key is made when the process starts: a cursor signed with another key (a restart) is refused."""
    fs = fs_for(wide)
    monkeypatch.setattr(_listing, "_SECRET", os.urandom(32))
    out = call_tool("list_directory", fs, {"path": ".", "max_entries": 10}, Limits())
    assert out.structured is not None
    monkeypatch.undo()
    with pytest.raises(ToolError, match="^" + re.escape(BAD_CURSOR) + "$"):
        call_tool("list_directory", fs, {"path": ".", "cursor": out.structured["nextCursor"]}, Limits())


def test_entries_added_or_removed_between_pages(tmp_path: Path) -> None:
    """Documented behaviour: the cursor is the last name returned. An entry added after it is listed on a later
    page, one added before it is not; a removed entry is simply absent; nothing present throughout is repeated or
    skipped, even when the cursor's own entry is removed."""
    root = tmp_path.resolve()
    for i in range(30):
        (root / f"e{i:02}").touch()
    fs = fs_for(root)
    first = call_tool("list_directory", fs, {"path": ".", "max_entries": 10}, Limits())
    assert first.structured is not None
    seen = [e["name"] for e in first.structured["entries"]]
    assert seen == [f"e{i:02}" for i in range(10)]
    (root / "a-new").touch()  # before the cursor: not listed any more
    (root / "e095").touch()  # just after the cursor (e09)
    (root / "z-new").touch()
    (root / "e09").unlink()  # the cursor's own entry
    (root / "e15").unlink()
    rest, _ = page_through_from(fs, first.structured["nextCursor"])
    assert rest == ["e095", *(f"e{i:02}" for i in range(10, 30) if i != 15), "z-new"]
    assert len(set(seen + rest)) == len(seen + rest)


def page_through_from(fs: RootedFS, cursor: str) -> tuple[list[str], int]:
    names: list[str] = []
    pages = 0
    next_cursor: str | None = cursor
    while next_cursor is not None:
        out = call_tool("list_directory", fs, {"path": ".", "max_entries": 10, "cursor": next_cursor}, Limits())
        assert out.structured is not None
        names += [e["name"] for e in out.structured["entries"]]
        next_cursor = out.structured.get("nextCursor")
        pages += 1
    return names, pages


def test_cursors_carry_any_mtime_and_the_longest_names(tmp_path: Path) -> None:
    """mtimes past 2262 (more than 64 bits of ns) or before 1970, and 255-byte names, page like any other."""
    root = tmp_path.resolve()
    times = [-5 * 10**18, 0, 10**18, 14 * 10**18]
    for i, ns in enumerate(times):
        name = f"{i}" + "é" * 127  # 255 bytes of UTF-8
        (root / name).touch()
        os.utime(root / name, ns=(ns, ns))
    fs = fs_for(root)
    for reverse in (False, True):
        names, pages = page_through(
            fs, {"path": ".", "sort_by": "modified", "reverse": reverse, "max_entries": 1}, Limits()
        )
        assert names == expected(root, "modified", reverse) and pages == 4


def test_a_cursor_past_every_entry_says_so(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    for name in ("a", "b", "c"):
        (root / name).touch()
    fs = fs_for(root)
    out = call_tool("list_directory", fs, {"path": ".", "max_entries": 2}, Limits())
    assert out.structured is not None
    (root / "c").unlink()
    last = call_tool("list_directory", fs, {"path": ".", "cursor": out.structured["nextCursor"]}, Limits())
    assert last.text == "[no entries after the cursor: the end]"
    assert last.structured is not None and last.structured["entries"] == []


def test_memory_is_bounded_by_the_page_not_the_directory(tmp_path: Path) -> None:
    """10,000 entries, a page of 50: the pass keeps ~50 entries (sorting them all would hold ~2.4 MB)."""
    root = tmp_path.resolve()
    for i in range(10_000):
        (root / f"entry-{i:07}").touch()
    fs = fs_for(root)
    for order in (Order(), Order("size", True)):
        tracemalloc.start()
        try:
            page = list_page(fs, ".", order, cap=50, cursor=None, details=True, check=lambda n: None)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert len(page.entries) == 50 and page.more and page.total == 10_000
        assert peak < 150_000, peak


def test_a_deadline_stops_a_pass(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    for i in range(3000):
        (root / f"{i}").touch()
    fs = fs_for(root)
    calls: list[int] = []

    def check(n: int) -> None:
        calls.append(n)
        if len(calls) == 2:
            raise ToolError("stopped")

    with pytest.raises(ToolError, match="stopped"):
        list_page(fs, ".", Order(), cap=10, cursor=None, details=False, check=check)
    assert calls == [1024, 1024]


# -- escapes and races: a cursor leads nowhere the path could not -----------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = tmp_path.resolve()
    outside, root = base / "outside", base / "root"
    (outside / "dir").mkdir(parents=True)
    for i in range(20):
        (outside / "dir" / f"{SECRET}-{i:02}").write_text(SECRET)
    (root / "dir").mkdir(parents=True)
    for i in range(20):
        (root / "dir" / f"in-{i:02}").touch()
    (root / "dir-link").symlink_to(outside / "dir")
    (root / "file-link").symlink_to(outside / "dir" / f"{SECRET}-00")
    return root


def _denied(fs: RootedFS, args: dict[str, Any]) -> str:
    with pytest.raises(ToolError) as info:
        call_tool("list_directory", fs, args, Limits())
    message = str(info.value)
    assert SECRET not in message and str(args.get("cursor")) not in message
    assert "/" not in args["path"] or args["path"] not in message
    return message


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_a_cursor_cannot_open_what_the_path_cannot(tree: Path, resolver: str) -> None:
    fs = fs_for(tree, resolver)
    out = call_tool("list_directory", fs, {"path": "dir", "max_entries": 5}, Limits())
    assert out.structured is not None
    cursor = out.structured["nextCursor"]
    for path in ("dir-link", "../outside/dir", str(tree.parent / "outside" / "dir"), "file-link", "dir/../.."):
        message = _denied(fs, {"path": path, "cursor": cursor})
        assert message.endswith(("(symlink escapes root)", "(outside roots)", "(not a directory)")), (path, message)


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_a_directory_swapped_between_pages(tree: Path, resolver: str) -> None:
    """Page 1 of dir; then dir becomes a symlink to the outside: page 2 is denied (the path is opened again through
    the boundary). Then another directory is renamed into its place: the cursor is refused as foreign. Moved within
    the root, the same directory continues under its new name."""
    fs = fs_for(tree, resolver)
    out = call_tool("list_directory", fs, {"path": "dir", "max_entries": 5}, Limits())
    assert out.structured is not None
    cursor = out.structured["nextCursor"]
    os.rename(tree / "dir", tree / "moved")
    (tree / "dir").symlink_to(tree.parent / "outside" / "dir")
    assert _denied(fs, {"path": "dir", "cursor": cursor}).endswith("(symlink escapes root)")
    (tree / "dir").unlink()
    (tree / "dir").mkdir()
    (tree / "dir" / "in-99").touch()
    assert _denied(fs, {"path": "dir", "cursor": cursor}) == FOREIGN_CURSOR
    moved = call_tool("list_directory", fs, {"path": "moved", "cursor": cursor, "max_entries": 5}, Limits())
    assert moved.structured is not None
    assert [e["name"] for e in moved.structured["entries"]] == [f"in-{i:02}" for i in range(5, 10)]


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_a_page_reports_links_without_following_them(tree: Path, resolver: str) -> None:
    fs = fs_for(tree, resolver)
    names, _ = page_through(fs, {"path": ".", "details": True, "max_entries": 1}, Limits())
    assert names == ["dir", "dir-link", "file-link"]
    out = call_tool("list_directory", fs, {"path": ".", "details": True, "sort_by": "size"}, Limits())
    assert out.structured is not None
    kinds = {e["name"]: (e["type"], e["size"]) for e in out.structured["entries"]}
    assert kinds["dir-link"] == ("symlink", len(str(tree.parent / "outside" / "dir")))  # the link's own size
    assert SECRET not in out.text


# -- stat: one open, the object itself ---------------------------------------------------------------------------------


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_stat_opens_once_and_never_follows_out(tree: Path, resolver: str) -> None:
    fs = fs_for(tree, resolver)
    (tree / "dir" / "text.txt").write_text("hello\n")
    info = call_tool("stat", fs, {"path": "dir/text.txt"}, Limits()).structured
    assert info is not None
    assert (info["path"], info["type"], info["size"], info["mime"]) == (
        str(tree / "dir" / "text.txt"),
        "file",
        6,
        "text/plain",
    )
    link = call_tool("stat", fs, {"path": "file-link"}, Limits())
    assert link.structured is not None
    assert (link.structured["path"], link.structured["type"]) == (str(tree / "file-link"), "symlink")
    assert "mime" not in link.structured and SECRET not in link.text
    root = call_tool("stat", fs, {"path": "."}, Limits()).structured
    assert root is not None and (root["path"], root["type"]) == (str(tree), "directory")
    for path in ("dir-link/x", f"dir-link/{SECRET}-00", "../outside/dir", "/etc/hostname"):
        with pytest.raises(ToolError) as info_error:
            call_tool("stat", fs, {"path": path}, Limits())
        message = str(info_error.value)
        assert message.endswith(("(symlink escapes root)", "(outside roots)", "(not found)")), (path, message)
        assert SECRET not in message


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_stat_of_a_hard_linked_file_follows_the_policy(tree: Path, resolver: str) -> None:
    (tree / "dir" / "one").write_text("x")
    os.link(tree / "dir" / "one", tree / "dir" / "two")
    fs = RootedFS(Boundary([tree]), resolver=resolver, hardlinks="refuse")  # type: ignore[arg-type]
    info = call_tool("stat", fs, {"path": "dir/one"}, Limits()).structured
    assert info is not None and info["links"] == 2 and "mime" not in info  # not opened for reading
    info = call_tool("stat", fs_for(tree, resolver), {"path": "dir/one"}, Limits()).structured
    assert info is not None and info["mime"] == "text/plain"


# -- over real servers -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("listing").resolve()
    (root / "many").mkdir()
    for i in range(3000):
        (root / "many" / f"n{(i * 7919) % 3000:05}").touch()  # created out of order
    return root


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_client_pages_through_a_served_directory(many: Path, transport: str, mode: str) -> None:
    provider = RootsProvider([many])
    wanted = [f"n{i:05}" for i in range(3000)]
    with anyio.fail_after(120):
        async with serve(transport, [str(many)], mode=mode, provider=provider) as client:
            names: list[str] = []
            cursor: str | None = None
            pages = 0
            while True:
                arguments: dict[str, Any] = {"path": "many", "max_entries": 700}
                if cursor is not None:
                    arguments["cursor"] = cursor
                result = await client.call_tool("list_directory", arguments)
                assert not result.is_error, result
                data = result.structured_content
                assert isinstance(data, dict)
                names += [entry["name"] for entry in data["entries"]]
                text = result.content[0]
                assert getattr(text, "text", "").splitlines()[: len(data["entries"])] == [
                    e["name"] for e in data["entries"]
                ]
                cursor = data.get("nextCursor")
                pages += 1
                if cursor is None:
                    break
                assert f'cursor="{cursor}"' in getattr(text, "text", "")
            assert names == wanted and pages == 5
            forged = await client.call_tool("list_directory", {"path": "many", "cursor": "A" * 60})
            assert forged.is_error
            assert getattr(forged.content[0], "text", "") == BAD_CURSOR
            oversized = await client.call_tool("list_directory", {"path": "many", "cursor": "A" * 3000})
            assert oversized.is_error
            assert getattr(oversized.content[0], "text", "") == (
                "invalid arguments: argument 'cursor' is longer than 2048 characters"
            )
            too_many = await client.call_tool("list_directory", {"path": "many", "max_entries": 5001})
            assert too_many.is_error
