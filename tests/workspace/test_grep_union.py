"""Issue 16 #3: with nested or aliased roots, ``grep``, ``search_files``, ``directory_tree`` and ``find_projects``
run over the union of the roots once: each file visited once, reported once.

Nesting is proven by identity through the boundary (the inner root's path, opened from the outer root, must land
on the directory held for it), never by a string prefix alone. Tool level on every resolver; then over a real
``rootbound serve`` (stdio and HTTP, both eras); a bind-mount alias in a private mount namespace.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from rootbound import Boundary, RootedFS
from rootbound.confine.boundary import Resolver
from rootbound.mcp import RootsProvider
from rootbound.workspace.tools import Limits, call_tool
from tests.helpers.processes import private_mount_namespace
from tests.helpers.serve_process import serve

RESOLVERS = ["openat2", "walk", "portable"]
MODES = ("legacy", "2026-07-28")


@pytest.fixture(params=RESOLVERS)
def resolver(request: pytest.FixtureRequest) -> Resolver:
    name: Resolver = request.param
    return name


def _tree(base: Path) -> Path:
    w = base.resolve() / "w"
    (w / "a" / "b").mkdir(parents=True)
    (w / "a" / "b" / "f.txt").write_text("needle\n")
    (w / "a" / "b" / "pyproject.toml").write_text("")
    (w / "top.txt").write_text("hay\n")
    return w


def _counts(fs: RootedFS, w: Path) -> dict[str, Any]:
    grep = call_tool("grep", fs, {"pattern": "needle"}, Limits()).structured
    search = call_tool("search_files", fs, {"pattern": "*.txt"}, Limits()).structured
    tree = call_tool("directory_tree", fs, {"path": str(w), "max_depth": 5}, Limits()).structured
    projects = call_tool("find_projects", fs, {}, Limits()).structured
    assert grep is not None and search is not None and tree is not None and projects is not None
    return {
        "grep": [match["path"] for match in grep["matches"]],
        "searched": grep["files_searched"],
        "search": search["matches"],
        "tree": [entry["path"] for entry in tree["entries"]],
        "projects": [project["path"] for project in projects["projects"]],
    }


def _expected(w: Path) -> dict[str, Any]:
    return {
        "grep": [f"{w}/a/b/f.txt"],
        "searched": 3,  # f.txt, pyproject.toml, top.txt: each once
        "search": [f"{w}/a/b/f.txt", f"{w}/top.txt"],
        "tree": ["a", "a/b", "a/b/f.txt", "a/b/pyproject.toml", "top.txt"],
        "projects": [f"{w}/a/b"],
    }


@pytest.mark.parametrize(
    "nested",
    [["w", "w/a/b"], ["w/a/b", "w"], ["w", "w/a", "w/a/b"], ["w/a/b", "w/a", "w"], ["w/a", "w", "w/a/b", "w/a"]],
)
def test_nested_roots_are_walked_once(tmp_path: Path, resolver: Resolver, nested: list[str]) -> None:
    w = _tree(tmp_path)
    roots = [str(w.parent / name) for name in nested]
    with Boundary(roots, resolver=resolver) as boundary:
        assert len(boundary) == len(set(nested))  # all held: the union is the tools' business
        assert _counts(RootedFS(boundary), w) == _expected(w)


def test_a_symlink_alias_of_a_root_is_walked_once(tmp_path: Path, resolver: Resolver) -> None:
    w = _tree(tmp_path)
    (tmp_path / "alias").symlink_to(w)
    (tmp_path / "inner").symlink_to(w / "a")
    with Boundary([str(w), str(tmp_path / "alias"), str(tmp_path / "inner")], resolver=resolver) as boundary:
        assert _counts(RootedFS(boundary), w) == _expected(w)


def test_separate_roots_with_the_same_file_names_are_all_walked(tmp_path: Path, resolver: Resolver) -> None:
    """Not nested (siblings, and a prefix that is no parent: ``w`` and ``w2``): each walked."""
    w = _tree(tmp_path)
    twin = tmp_path / "w2"
    shutil.copytree(w, twin)
    with Boundary([str(w), str(twin), str(w / "a")], resolver=resolver) as boundary:
        grep = call_tool("grep", RootedFS(boundary), {"pattern": "needle"}, Limits()).structured
    assert grep is not None
    assert [m["path"] for m in grep["matches"]] == [f"{w}/a/b/f.txt", f"{twin.resolve()}/a/b/f.txt"]
    assert grep["files_searched"] == 6


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_nested_client_roots_are_searched_once_over_the_wire(tmp_path: Path, transport: str, mode: str) -> None:
    w = _tree(tmp_path)
    provider = RootsProvider([w, w / "a" / "b", w / "a"])
    with anyio.fail_after(60):
        async with serve(transport, [str(tmp_path.resolve())], mode=mode, provider=provider) as client:
            result = await client.call_tool("grep", {"pattern": "needle"})
            assert not result.is_error
            structured = result.structured_content
            assert structured is not None
            assert [m["path"] for m in structured["matches"]] == [f"{w}/a/b/f.txt"]
            assert structured["files_searched"] == 3
            found = await client.call_tool("search_files", {"pattern": "f.txt"})
            assert found.structured_content is not None
            assert found.structured_content["matches"] == [f"{w}/a/b/f.txt"]


# -- bind mounts: a private mount namespace, so nothing leaks into the host's mount table ---------------------------

_BIND_SCRIPT = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from rootbound import Boundary, RootedFS
    from rootbound.workspace.tools import Limits, call_tool

    tmp = sys.argv[1]
    w, alias = os.path.join(tmp, "w"), os.path.join(tmp, "alias")
    for d in (os.path.join(w, "a"), alias):
        os.makedirs(d)
    with open(os.path.join(w, "a", "f.txt"), "w") as f:
        f.write("needle\\n")
    subprocess.run(["mount", "--bind", w, alias], check=True)  # /alias: the same directory as /w, another name
    out = {}
    for resolver in ("openat2", "walk", "portable"):
        for name, roots in (("alias", [w, alias]), ("alias-first", [alias, w]), ("nested", [alias, w + "/a", w])):
            with Boundary(roots, resolver=resolver) as boundary:
                got = call_tool("grep", RootedFS(boundary), {"pattern": "needle"}, Limits()).structured
            out[f"{resolver}/{name}"] = [[m["path"] for m in got["matches"]], got["files_searched"]]
    print(json.dumps(out))
    """
)


def test_a_bind_mount_alias_of_a_root_is_walked_once(tmp_path: Path) -> None:
    args = private_mount_namespace()
    base = tmp_path.resolve()
    done = subprocess.run(
        [*args, sys.executable, "-c", _BIND_SCRIPT, str(base)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    w = f"{base}/w"
    for resolver in RESOLVERS:
        assert results[f"{resolver}/alias"] == [[f"{w}/a/f.txt"], 1]
        assert results[f"{resolver}/alias-first"] == [[f"{base}/alias/a/f.txt"], 1]
        assert results[f"{resolver}/nested"] == [[f"{base}/alias/a/f.txt"], 1]  # /w/a: beneath /w, the alias
