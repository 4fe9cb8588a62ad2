"""Subscriptions' watches (:mod:`rootbound.workspace.resources.watches` through ``subscribing``): a write to a
subscribed file is told to its subscriber and to no one else, the bounds are stated refusals, an inotify overflow
is told to every subscriber, and the last subscriber leaving (or its session ending) stops the reader thread and
closes the inotify fd: counted, thread and fds, back to where they were."""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from rootbound import Boundary, RootedFS
from rootbound.confine.inotify import Inotify
from rootbound.core.uri import path_to_uri
from rootbound.workspace.resources.subscribing import SubscribeRequest, subscribe
from rootbound.workspace.resources.watches import Watches

DEADLINE = 30.0  # a bound on waiting for the kernel's event, never a measurement


@pytest.fixture
def fs(tmp_path: Path) -> Iterator[RootedFS]:
    root = tmp_path.resolve() / "work"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    (root / "sub" / "c.txt").write_text("c\n")
    (tmp_path / "far").mkdir()
    (tmp_path / "far" / "secret").write_text("s\n")
    with Boundary([root]) as boundary:
        yield RootedFS(boundary, read_only=True)


def root_of(fs: RootedFS) -> Path:
    return next(iter(fs.boundary)).path


class Inbox:
    def __init__(self) -> None:
        self.got: queue.Queue[str] = queue.Queue()

    def __call__(self, uri: str) -> None:
        self.got.put(uri)

    def next(self) -> str:
        return self.got.get(timeout=DEADLINE)


def watch_threads() -> int:
    return sum(thread.name == "rootbound-watch" for thread in threading.enumerate())


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_write_is_told_to_its_subscriber_only(fs: RootedFS) -> None:
    watches, mine, other = Watches(), Inbox(), Inbox()
    a, b = path_to_uri(root_of(fs) / "a.txt"), path_to_uri(root_of(fs) / "b.txt")
    subscribe(fs, SubscribeRequest(a, "s1", mine, watches))
    subscribe(fs, SubscribeRequest(b, "s2", other, watches))
    assert watches.counts() == (2, 1, True)  # one directory: one watch, shared
    (root_of(fs) / "a.txt").write_text("changed\n")
    assert mine.next() == a
    (root_of(fs) / "b.txt").write_text("changed\n")
    assert other.next() == b
    got_mine, got_other = [a], [b]
    for _ in range(3):  # more changes of each: whatever was told, was told to its own subscriber
        (root_of(fs) / "a.txt").write_text("again\n")
        got_mine.append(mine.next())
        (root_of(fs) / "b.txt").write_text("again\n")
        got_other.append(other.next())
    while not mine.got.empty():
        got_mine.append(mine.got.get())
    while not other.got.empty():
        got_other.append(other.got.get())
    assert (set(got_mine), set(got_other)) == ({a}, {b})
    watches.drop_session("s1")
    watches.drop_session("s2")
    assert watches.counts() == (0, 0, False)


def test_the_last_subscriber_leaving_stops_everything(fs: RootedFS) -> None:
    threads, open_fds = watch_threads(), fds()
    watches = Watches()
    for n in range(20):
        session = f"session-{n}"
        for name in ("a.txt", "sub", "sub/c.txt"):
            subscribe(fs, SubscribeRequest(path_to_uri(root_of(fs) / name), session, Inbox(), watches))
    assert watches.counts() == (60, 2, True) and watch_threads() == threads + 1
    for n in range(20):
        assert watches.unsubscribe(f"session-{n}", path_to_uri(root_of(fs) / "a.txt"))
        watches.drop_session(f"session-{n}")
    assert watches.counts() == (0, 0, False)
    assert (watch_threads(), fds()) == (threads, open_fds)


def test_bounds_are_stated_refusals(fs: RootedFS) -> None:
    watches = Watches(per_session=2, per_process=1)
    uris = [path_to_uri(root_of(fs) / name) for name in ("a.txt", "b.txt", "sub/c.txt")]
    subscribe(fs, SubscribeRequest(uris[0], "s", Inbox(), watches))
    subscribe(fs, SubscribeRequest(uris[0], "s", Inbox(), watches))  # again: nothing changes
    subscribe(fs, SubscribeRequest(uris[1], "s", Inbox(), watches))
    with pytest.raises(MCPError, match="at most 2 subscriptions per session"):
        subscribe(fs, SubscribeRequest(uris[2], "s", Inbox(), watches))
    with pytest.raises(MCPError, match="watches 1 directories"):
        subscribe(fs, SubscribeRequest(uris[2], "t", Inbox(), watches))  # another directory: over the process's
    watches.drop_session("s")
    assert watches.counts() == (0, 0, False)


def test_outside_missing_and_ignored_are_refused_like_a_read(fs: RootedFS, tmp_path: Path) -> None:
    watches = Watches()
    (root_of(fs) / ".gitignore").write_text("b.txt\n")
    for uri in (
        path_to_uri(tmp_path.resolve() / "far" / "secret"),
        path_to_uri(tmp_path.resolve() / "far"),
        path_to_uri(root_of(fs) / "missing.txt"),
        path_to_uri(root_of(fs) / "b.txt"),
        path_to_uri(root_of(fs)) + "/../far/secret",
    ):
        with pytest.raises(MCPError) as caught:
            subscribe(fs, SubscribeRequest(uri, "s", Inbox(), watches))
        assert (caught.value.error.code, caught.value.error.message) == (-32602, "Resource not found")
    assert watches.counts() == (0, 0, False)


def test_an_overflow_is_told_to_every_subscriber(fs: RootedFS, monkeypatch: pytest.MonkeyPatch) -> None:
    watches, one, two = Watches(), Inbox(), Inbox()
    a, c = path_to_uri(root_of(fs) / "a.txt"), path_to_uri(root_of(fs) / "sub" / "c.txt")
    subscribe(fs, SubscribeRequest(a, "s1", one, watches))
    subscribe(fs, SubscribeRequest(c, "s2", two, watches))
    real = Inotify.read

    def overflowed(self: Inotify, most: int) -> tuple[list[object], bool]:
        real(self, most)  # drain what woke the reader
        return [], True  # and report what the kernel reports when its queue overflowed

    monkeypatch.setattr(Inotify, "read", overflowed)
    (root_of(fs) / "b.txt").write_text("an unrelated change wakes the reader\n")
    assert {one.next(), two.next()} == {a, c}
    watches.drop_session("s1")
    watches.drop_session("s2")
