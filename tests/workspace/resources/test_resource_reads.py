"""``resources/read``, ``resources/list``, ``resources/directory/read`` and path completion on a RootedFS, with
every resolver: the shapes (SEP-2640's directory page, content identity), the windows and their caps, the ignore
files, and the one not-found error."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from rootbound import Boundary, RootedFS
from rootbound.core.uri import path_to_uri
from rootbound.workspace.resources import listings
from rootbound.workspace.resources.addresses import EXTENSION
from rootbound.workspace.resources.contents import ReadRequest, read_resource
from rootbound.workspace.resources.listings import Listing, complete_path, directory_page, list_page

RESOLVERS = ["openat2", "walk", "portable"]


@pytest.fixture(params=RESOLVERS)
def fs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RootedFS]:
    root = tmp_path.resolve() / "work"
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    (root / "sub" / "b.py").write_text("x = 1\n")
    (root / ".gitignore").write_text("hidden.env\nbuild/\n")
    (root / "hidden.env").write_text("TOKEN=1\n")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_bytes(b"\0\1")
    (root / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(40)))
    with Boundary([root], resolver=request.param) as boundary:
        yield RootedFS(boundary, read_only=True)


def uri(fs: RootedFS, rel: str = "") -> str:
    base = next(iter(fs.boundary)).path
    return path_to_uri(base / rel if rel else base)


def read(fs: RootedFS, target: str, *, show: bool = False, max_read: int = 1 << 20) -> dict[str, Any]:
    return read_resource(fs, ReadRequest(target, max_read, 4 << 20, show))


def not_found(call: Any) -> MCPError:
    with pytest.raises(MCPError) as caught:
        call()
    assert caught.value.error.code == -32602
    assert caught.value.error.message == "Resource not found"
    return caught.value


def test_text_read_carries_its_digest_and_size(fs: RootedFS) -> None:
    (item,) = read(fs, uri(fs, "a.txt"))["contents"]
    assert item["text"] == "one\ntwo\nthree\n" and item["mimeType"] == "text/plain"
    identity = item["_meta"][EXTENSION]
    assert identity == {"size": 14, "digest": "sha256:" + hashlib.sha256(b"one\ntwo\nthree\n").hexdigest()}


def test_windows_read_lines_or_bytes_and_keep_the_whole_files_digest(fs: RootedFS) -> None:
    (lines,) = read(fs, uri(fs, "a.txt") + "?start_line=2&end_line=2")["contents"]
    assert lines["text"] == "two\n"
    assert lines["_meta"][EXTENSION]["range"]["startLine"] == 2
    assert lines["_meta"][EXTENSION]["digest"] == "sha256:" + hashlib.sha256(b"one\ntwo\nthree\n").hexdigest()
    (piece,) = read(fs, uri(fs, "a.txt") + "?offset=4&length=3")["contents"]
    assert piece["text"] == "two"


def test_a_read_over_the_cap_is_refused_with_the_way_to_read_it_in_parts(fs: RootedFS) -> None:
    with pytest.raises(MCPError) as caught:
        read(fs, uri(fs, "a.txt"), max_read=5)
    assert caught.value.error.code == -32602 and "?offset=N&length=M" in caught.value.error.message
    (piece,) = read(fs, uri(fs, "a.txt") + "?offset=0&length=100", max_read=5)["contents"]
    assert len(piece["text"]) <= 5


@pytest.mark.parametrize(
    "query", ["?start_line=0", "?offset=1&start_line=2", "?length=x", "?evil=1", "?offset=1&offset=2"]
)
def test_a_bad_window_is_a_fixed_error_that_says_the_fix(fs: RootedFS, query: str) -> None:
    with pytest.raises(MCPError) as caught:
        read(fs, uri(fs, "a.txt") + query)
    assert caught.value.error.code == -32602 and "evil" not in caught.value.error.message


def test_binary_is_a_blob(fs: RootedFS) -> None:
    (item,) = read(fs, uri(fs, "pic.png"))["contents"]
    assert item["mimeType"] == "image/png"
    assert base64.b64decode(item["blob"]).startswith(b"\x89PNG")


def test_missing_ignored_and_outside_answer_the_same_error(fs: RootedFS, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("SECRET\n")
    errors = [
        not_found(lambda: read(fs, uri(fs, "nope.txt"))),
        not_found(lambda: read(fs, uri(fs, "hidden.env"))),
        not_found(lambda: read(fs, path_to_uri(tmp_path.resolve() / "outside.txt"))),
        not_found(lambda: read(fs, "https://example.com/a.txt")),
    ]
    assert len({(e.error.code, e.error.message) for e in errors}) == 1
    assert read(fs, uri(fs, "hidden.env"), show=True)["contents"][0]["text"] == "TOKEN=1\n"


def test_directory_read_is_one_level_metadata_only_and_pages(fs: RootedFS, monkeypatch: pytest.MonkeyPatch) -> None:
    page = directory_page(fs, Listing(uri(fs)))
    names = [r["name"] for r in page["resources"]]
    assert names == [".gitignore", "a.txt", "pic.png", "sub"]  # hidden.env and build/ are ignored
    sub = next(r for r in page["resources"] if r["name"] == "sub")
    assert sub["mimeType"] == "inode/directory" and sub["uri"] == uri(fs, "sub")
    assert all("text" not in r and "blob" not in r for r in page["resources"])
    assert next(r for r in page["resources"] if r["name"] == "a.txt")["size"] == 14
    shown = directory_page(fs, Listing(uri(fs), None, show_ignored=True))
    assert {"build", "hidden.env"} <= {r["name"] for r in shown["resources"]}
    monkeypatch.setattr(listings, "PAGE", 3)
    first = directory_page(fs, Listing(uri(fs)))
    second = directory_page(fs, Listing(uri(fs), first["nextCursor"]))
    assert [r["name"] for r in first["resources"] + second["resources"]] == names
    assert "nextCursor" not in second


def test_directory_read_of_a_file_is_invalid_params_not_not_found(fs: RootedFS) -> None:
    with pytest.raises(MCPError) as caught:
        directory_page(fs, Listing(uri(fs, "a.txt")))
    assert caught.value.error.code == -32602 and caught.value.error.message != "Resource not found"
    not_found(lambda: directory_page(fs, Listing(uri(fs, "build"))))


def test_resources_list_is_the_roots_top_level_never_deeper(fs: RootedFS, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = list_page(fs, Listing(None))["resources"]
    assert [r["name"] for r in whole] == ["work", ".gitignore", "a.txt", "pic.png", "sub"]
    monkeypatch.setattr(listings, "PAGE", 2)
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = list_page(fs, Listing(None, cursor))
        seen += [r["name"] for r in page["resources"]]
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert seen == [r["name"] for r in whole]


def test_a_bad_cursor_is_a_clear_error(fs: RootedFS) -> None:
    for cursor in ("!!", "x" * 5000, base64.urlsafe_b64encode(b"a\0b\0c").decode()):
        with pytest.raises(MCPError) as caught:
            list_page(fs, Listing(None, cursor))
        assert "cursor" in caught.value.error.message


def test_completion_lists_one_level_and_nothing_outside(fs: RootedFS, tmp_path: Path) -> None:
    root = str(next(iter(fs.boundary)).path).lstrip("/")
    got = complete_path(fs, Listing(root + "/s"))
    assert got["values"] == [root + "/sub/"] and not got["hasMore"]
    assert complete_path(fs, Listing(root + "/hid"))["values"] == []  # ignored
    (tmp_path / "far").mkdir()
    (tmp_path / "far" / "secret-name").write_text("x")
    assert complete_path(fs, Listing(str(tmp_path.resolve() / "far").lstrip("/") + "/s"))["values"] == []
    assert complete_path(fs, Listing(root[:-2]))["values"] == [root + "/"]  # the roots themselves
