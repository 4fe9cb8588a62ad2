"""The shared escape table (:mod:`rootbound.core.escape_table`) against every resources method, on every resolver:
0 reads, 0 listings and 0 existence answers outside the roots. For each spelling, an outside name that exists and
one that does not must get the same answer (SEP-2164's not-found), and no answer may carry the secret or the name
of an outside entry. Then a separate process swapping a paged directory for a link out: 0 outside entries."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from rootbound import Boundary, RootedFS
from rootbound.confine.resolvers import Resolver
from rootbound.core.escape_table import SPELLINGS, Spelling
from rootbound.core.uri import path_to_uri
from rootbound.workspace.resources import listings
from rootbound.workspace.resources.contents import ReadRequest, read_resource
from rootbound.workspace.resources.listings import Listing, complete_path, directory_page
from tests.helpers.swap import OUTSIDE, DirSwapperProcess, SwapArena
from tests.workspace.test_escape_table_wire import ENTRY, SECRET, plant

RESOLVERS: list[Resolver] = ["openat2", "walk", "portable"]
MISSING = "no-such-entry-2b7e"


def as_uri(spelling: Spelling, text: str) -> str:
    """The spelling as a resource URI: a URI stays one; a path becomes the ``file:`` URI a sloppy server builds
    by gluing (absolute: ``file://`` + path; relative: ``file:`` + path, which only a sloppy join takes)."""
    if spelling.style == "uri" or text.startswith("file:"):
        return text
    return ("file://" if text.startswith("/") else "file:") + text


def answer(fs: RootedFS, method: str, uri: str) -> tuple[str, object]:
    """What the client learns: the result, or the error's code and message (``data`` is the URI it sent)."""
    try:
        if method == "directory":
            return "result", directory_page(fs, Listing(uri))
        return "result", read_resource(fs, ReadRequest(uri, 1 << 20, 1 << 22, method == "read-ignored-shown"))
    except MCPError as error:
        return "error", (error.error.code, error.error.message)


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_no_resources_method_reads_lists_or_tells_existence_outside(tmp_path: Path, resolver: Resolver) -> None:
    root, layout = plant(tmp_path.resolve())
    with Boundary([root], resolver=resolver) as boundary:
        fs = RootedFS(boundary, read_only=True)
        inside = read_resource(fs, ReadRequest(path_to_uri(root / "inside.txt"), 1 << 20, 1 << 22))
        assert inside["contents"][0]["text"] == "inside\n"  # the fixture serves what it should
        checked = 0
        for spelling in SPELLINGS:
            where = spelling.render(layout)
            secret = as_uri(spelling, where + spelling.joiner + "secret")
            missing = as_uri(spelling, where + spelling.joiner + MISSING)
            pairs = [("read", secret, missing), ("directory", as_uri(spelling, where), missing)]
            pairs.append(("read-ignored-shown", secret, missing))
            for method, existing, absent in pairs:
                got, expected = answer(fs, method, existing), answer(fs, method, absent)
                assert SECRET not in repr(got) and ENTRY not in repr(got), (spelling, got)
                assert got == expected == ("error", (-32602, "Resource not found")), (spelling, got, expected)
                checked += 1
            if spelling.style != "relative":
                value = where.removeprefix("file://").lstrip("/") + spelling.joiner
                completed = complete_path(fs, Listing(value))
                assert ENTRY not in repr(completed) and "secret" not in repr(completed), (spelling, completed)
        assert checked == 3 * len(SPELLINGS)


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_a_directory_swapped_for_a_link_out_while_it_is_paged_lists_nothing_outside(
    tmp_path: Path, resolver: Resolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    arena = SwapArena.create(tmp_path)
    for n in range(40):
        (arena.dir / f"in-{n:02}").write_bytes(b"x")
        (arena.outside / f"OUT-{n:02}").write_bytes(OUTSIDE)
    monkeypatch.setattr(listings, "PAGE", 7)
    served = arena.dir.parent  # the DIR; arena.dir is a directory in it, arena.link a link in it to outside
    outside_entries = pages = refused = 0
    swapper = DirSwapperProcess(arena)
    with Boundary([served], resolver=resolver) as boundary:
        fs = RootedFS(boundary, read_only=True)
        before = directory_page(fs, Listing(path_to_uri(arena.dir)))  # unswapped: the directory's own first page
        assert [r["name"] for r in before["resources"]] == [f"in-{n:02}" for n in range(7)]
        swapper.start()
        try:
            for _ in range(1000):
                cursor = None
                for _ in range(10):
                    try:
                        page = directory_page(fs, Listing(path_to_uri(arena.dir), cursor))
                    except MCPError as error:
                        assert error.error.message == "Resource not found"
                        refused += 1
                        break
                    pages += 1
                    for resource in page["resources"]:
                        name, uri = resource["name"], resource["uri"]
                        outside_entries += name.startswith("OUT-") or name == "secret"
                        outside_entries += not uri.startswith(path_to_uri(served) + "/")
                    cursor = page.get("nextCursor")
                    if cursor is None:
                        break
        finally:
            swapper.stop()
    assert swapper.swaps > 0 and pages + refused > 0  # pages may all be refused: a walk resolver sees the race
    assert outside_entries == 0, f"{outside_entries} entries from outside the roots over {pages} pages"
    assert os.path.isdir(arena.dir) and not os.path.islink(arena.dir)
