"""An index, once ready, records the walks a new session's first grep makes (issue 51): from the DIR's top, with
and without the ignore files, under the keys the ``grep`` tool's own arguments build, so the first query opens its
candidates and walks nothing. A query that meets such a walk under way waits for it (it is the walk it would make)
instead of scanning."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rootbound.confine.boundary import Boundary
from rootbound.search.ignore_rules import PathFilter, filter_key
from rootbound.search.ignore_walk import WalkLimits
from rootbound.search.index.registry import IndexRegistry
from rootbound.search.index.tree_index import TreeIndex
from rootbound.search.rooted_fs import RootedFS
from rootbound.workspace.tools import Budget, Limits
from rootbound.workspace.tools.calls import grep_request


def _tree(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("def getaddrinfo(): pass\n")
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "b.py").write_text("getaddrinfo in a build\n")


def _ready_index(registry: IndexRegistry, root: Path) -> TreeIndex:
    top = str(root.resolve()) + "/"
    for _ in range(600):
        index, _, _ = registry.find(top)
        if index is not None and index.state == "ready" and not index.ahead and len(index.views) >= 2:
            return index
        time.sleep(0.05)
    raise AssertionError("the index did not become ready with its walks ahead in 30 s")


def test_the_first_grep_s_walks_are_recorded_under_the_grep_tool_s_keys(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _tree(root)
    registry = IndexRegistry([root.resolve()], at_start=True)
    try:
        index = _ready_index(registry, root)
        for arguments in ({"pattern": "getaddrinfo"}, {"pattern": "getaddrinfo", "include_ignored": True}):
            query = grep_request(arguments, Limits(), Budget(30.0)).query
            key = ("", query.where_key, WalkLimits(), False)
            assert key in index.views, (arguments, list(index.views))
        with_rules = index.views[("", filter_key((), (), True), WalkLimits(), False)]
        assert not any(rel.startswith("build") for rel, _, _ in with_rules.entries)  # the ignore file applied
    finally:
        registry.close()


def test_a_query_waits_for_a_walk_ahead_and_scans_past_another_query(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _tree(root)
    registry = IndexRegistry([root.resolve()], at_start=True)
    try:
        index = _ready_index(registry, root)
        with Boundary([root]) as boundary:
            fs = RootedFS(boundary)
            where, key = PathFilter(gitignore=True), filter_key((), (), True)

            def plan() -> object:
                return index.plan(fs, str(root), "", where, key, WalkLimits(), None)

            got: list[object] = []
            with index.lock:  # another query holds the index: this one scans at once
                assert plan() is None
                index.ahead = True  # a walk ahead holds it: this one waits for it
                waiter = threading.Thread(target=lambda: got.append(plan()))
                waiter.start()
                time.sleep(0.2)
                assert got == []  # still waiting (not returned None)
            waiter.join(timeout=30)
            index.ahead = False
            assert got and got[0] is not None
    finally:
        registry.close()
