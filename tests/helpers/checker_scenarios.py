"""Take ups through a forked child (``search/index/checker.py``), each run in a new process of its own
(``python -m tests.helpers.checker_scenarios SCENARIO TMP``): a fork needs a process with no other thread, which a
test session after other tests is not. Prints one JSON line: what the take up used and what the answers were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rootbound.confine.boundary import Boundary
from rootbound.confine.inotify import Inotify
from rootbound.confine.resolvers import ResolverKind
from rootbound.search.index import checker
from rootbound.search.index import saved as saved_format
from rootbound.search.index.registry import IndexRegistry
from rootbound.search.rooted_fs import RootedFS
from tests.helpers.index_churn import build_tree
from tests.helpers.swap import exchanging_process
from tests.search.test_index import _literal, _ready
from tests.search.test_index_saved import _index, _same_as_a_full_scan, _server, _store

RESOLVERS: tuple[ResolverKind, ...] = ("openat2", "walk")


def save(tmp: Path) -> dict[str, Any]:
    """The tree, built and its index saved by a first "server", in a process of its own: that build imports numpy,
    whose BLAS starts a thread, and a process with another thread forks no child (as a server's would not)."""
    root = tmp / "tree"
    root.mkdir()
    build_tree(root, fillers=40)
    (tmp / "cache").mkdir(mode=0o700)
    time.sleep(saved_format.RACY_NS / 1e9 + 0.2)  # else no file is old enough to be kept
    first, _ = _server(root.resolve(), tmp / "cache" / "saved")  # builds (nothing saved yet: no child) and saves
    first.close()
    return {"saved": sorted(os.listdir(tmp / "cache" / "saved"))}


def _saved_tree(tmp: Path) -> tuple[Path, Path]:
    subprocess.run(
        [sys.executable, "-m", "tests.helpers.checker_scenarios", "save", str(tmp)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return (tmp / "tree").resolve(), tmp / "cache" / "saved"


def _taken_up(root: Path, folder: Path, before_start: Any = None) -> tuple[IndexRegistry, dict[str, Any]]:
    """A new "server" whose take up forks its child; ``before_start`` runs once the child has ended, before this
    process has read what it sent."""
    registry = IndexRegistry([root], cache=None, saved=_store(folder))
    index = _index(registry, root)
    index.expect_saved = True
    index.fork_checker()
    forked = index.checker is not None
    if forked and before_start is not None:
        os.waitid(os.P_PID, index.checker.pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped, its report unread
        before_start()
    index.start()
    registry.find(str(root) + "/")
    _ready(registry, root)
    thread = index.thread
    assert thread is not None
    thread.join(60)
    return registry, {"forked": forked, "from_child": index.from_child, "reused": index.reused}


def changed_after_the_child_saw_it(tmp: Path) -> dict[str, Any]:
    """Files and directories changed after the child walked, before this process read its report: the shared
    inotify instance has the events; every answer must still equal a full scan."""
    root, folder = _saved_tree(tmp)

    def change() -> None:
        (root / "d0" / "e0" / "f0.py").write_text("def getaddrinfo_after_the_child(): pass\n")
        (root / "d3" / "late").mkdir()
        (root / "d3" / "late" / "n.py").write_text("getaddrinfo in a directory made late\nclass LateError(\n")
        os.rename(root / "d2" / "e1", root / "d2" / "e1-moved")
        os.unlink(root / "d1" / "e1" / "f1.py") if (root / "d1" / "e1" / "f1.py").exists() else None

    registry, said = _taken_up(root, folder, change)
    try:
        said["answered"] = _same_as_a_full_scan(registry, root, "after the child")
        said["dirty"] = len(_index(registry, root).dirty)
    finally:
        registry.close()
    return said


def _with_child(tmp: Path, walk: Any, label: str) -> dict[str, Any]:
    """A take up whose child runs ``walk`` instead of its own (the fork copies this process's module)."""
    root, folder = _saved_tree(tmp)
    checker._walk_and_send = walk
    registry, said = _taken_up(root, folder)
    try:
        said["answered"] = _same_as_a_full_scan(registry, root, label)
    finally:
        registry.close()
    return said


def the_child_fails(tmp: Path) -> dict[str, Any]:
    def fail(path: Path, notify: Inotify, out: int, max_entries: int) -> int:
        raise RuntimeError("the child's walk failed")

    return _with_child(tmp, fail, "the child failed")


def the_child_sends_garbage(tmp: Path) -> dict[str, Any]:
    import marshal

    sends = [
        b"\x00not a report",
        marshal.dumps((checker.VERSION, (0, 0), [], [], b"", [])),  # parses: another directory's identity
        marshal.dumps((7, "x")),
        b"",  # the DIR's own identity, one stat number for a file: made below
        marshal.dumps((1, (0, 0), [], [], [])),  # the format before: files as tuples
    ]
    kind = int(os.environ.get("RB_GARBAGE", "0"))

    def garbage(path: Path, notify: Inotify, out: int, max_entries: int) -> int:
        st = os.stat(path)
        sends[3] = marshal.dumps((checker.VERSION, (st.st_dev, st.st_ino), [], ["a"], b"\0" * 8, []))
        os.write(out, sends[kind])
        return 0

    return _with_child(tmp, garbage, "garbage")


def a_query_comes_while_the_child_walks(tmp: Path) -> dict[str, Any]:
    """A first query that finds the child still walking (a large tree's walk outlasts the imports; here a child
    that would sleep for an hour) stops it and takes the index up in this process: it never waits for the child."""
    root, folder = _saved_tree(tmp)

    def asleep(path: Path, notify: Inotify, out: int, max_entries: int) -> int:
        time.sleep(3600)
        return 0

    checker._walk_and_send = asleep
    registry = IndexRegistry([root], cache=None, saved=_store(folder))
    index = _index(registry, root)
    index.expect_saved = True
    index.fork_checker()
    child = index.checker
    index.start()
    try:
        _ready(registry, root)  # its find() is the first query: it stops the child, then takes up
        said: dict[str, Any] = {"forked": child is not None, "from_child": index.from_child}
        said["stopped"] = child is not None and child.pid == -1 and not child.running()
        said["answered"] = _same_as_a_full_scan(registry, root, "the child stopped")
        said["reused"] = index.reused
    finally:
        registry.close()
    return said


def swapped_while_the_child_walks(tmp: Path) -> dict[str, Any]:
    """Another process trades a directory of the tree for a link to outside (RENAME_EXCHANGE, in a loop) while
    the child walks and the take up runs: no answer ever holds a file from outside, for either resolver. While the
    trades go on, a query may be refused (the tree changed under it: the caller scans); once they stop, each
    resolver's query is answered by the index, whose views came from the child's walk made among the trades."""
    root, folder = _saved_tree(tmp)
    outside = tmp / "outside"
    outside.mkdir()
    for n in range(20):
        (outside / f"out{n}.py").write_text("getaddrinfo OUTSIDE-SECRET\n")
    os.symlink(outside, root / "d3" / "e1-link")
    leaked = 0

    def ask(registry: IndexRegistry, tries: int, until_answered: bool) -> int:
        """Up to ``tries`` queries with each resolver (``until_answered``: its first answer ends them, a refusal
        is tried again a little later); how many the index answered. Every answer's leaks are counted."""
        nonlocal leaked
        answered = 0
        for resolver in RESOLVERS:
            with Boundary([root], resolver=resolver) as boundary:
                fs = RootedFS(boundary)
                for _ in range(tries):
                    report, _ = _literal(registry, fs, root)
                    if report is not None:
                        answered += 1
                        for display, hits in report.files:
                            leaked += not display.startswith(str(root) + "/")
                            leaked += sum("OUTSIDE" in hit.text for hit in hits)
                        if until_answered:
                            break
                    elif until_answered:
                        time.sleep(0.05)
        return answered

    registry: IndexRegistry | None = None
    try:
        with exchanging_process(str(root / "d3" / "e1"), str(root / "d3" / "e1-link"), pause=0.002):
            # The child walks among the trades and ends before the take up begins: its report is taken (a query
            # made at once would stop a child still walking, and leave the walk to this process).
            registry, said = _taken_up(root, folder, before_start=lambda: None)
            answered = ask(registry, 20, until_answered=False)
        answered_after = ask(registry, 600, until_answered=True)  # the trades stopped: bounded tries, not a clock
    finally:
        if registry is not None:
            registry.close()
    said.update(leaked=leaked, answered=answered, answered_after=answered_after)
    return said


def closed_before_it_was_read(tmp: Path) -> dict[str, Any]:
    """A server that ends before its index's build began: the child is stopped and reaped, its watches dropped."""
    root, folder = _saved_tree(tmp)
    registry = IndexRegistry([root], cache=None, saved=_store(folder))
    index = _index(registry, root)
    index.fork_checker()
    child = index.checker
    assert child is not None
    pid = child.pid
    registry.close()
    return {"forked": True, "reaped": not os.path.exists(f"/proc/{pid}"), "notify_closed": child.notify.fd == -1}


if __name__ == "__main__":
    scenario, where = sys.argv[1], Path(sys.argv[2])
    print(json.dumps(globals()[scenario](where)))
