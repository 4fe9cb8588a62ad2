"""The write domain's wall fails closed and its threads are bounded for the whole process (issue 33 #1, #2).

A transient shortage (no fd for the ruleset, no thread to be had) refuses that one write with ``ServerBusy``; it
never makes the domain the no-Landlock fallback, and the next write is held by the kernel again. Threads start only
for a write, end when idle or when another root set waits, and never exceed the process-wide cap.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rootbound import Boundary, RootedFS
from rootbound.confine import landlock
from rootbound.confine import write_domain as wd
from rootbound.core.errors import ServerBusy

pytestmark = pytest.mark.skipif(landlock.abi_version() < 2, reason="needs Landlock ABI >= 2 in this kernel")


def write_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "rootbound-write"]


def wait_until(predicate: object, seconds: float = 30.0) -> bool:
    """Polls ``predicate`` (a callable) until true; generous: a loaded machine is slow, never wrong."""
    assert callable(predicate)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())


@contextlib.contextmanager
def no_free_fds() -> Iterator[None]:
    """Every fd of the process taken (a real ``EMFILE`` for the next open), given back on exit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    fillers: list[int] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 16, hard))
    try:
        while True:
            try:
                fillers.append(os.open("/dev/null", os.O_RDONLY))
            except OSError as error:
                assert error.errno == errno.EMFILE
                break
        yield
    finally:
        for fd in fillers:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def refused_outside(fs: RootedFS, outside: Path) -> bool:
    """Whether the kernel holds this boundary's write threads to its roots: a write by fd outside is refused."""
    fd = os.open(outside, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fs.boundary.write_domain().run(lambda: os.mkdir("probe", dir_fd=fd))
    except PermissionError:
        return True
    finally:
        os.close(fd)
    os.rmdir(outside / "probe")
    return False


def test_emfile_at_the_first_write_is_busy_and_the_next_write_is_walled(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    with Boundary([root]) as boundary:
        fs = RootedFS(boundary)
        with no_free_fds(), pytest.raises(ServerBusy):
            fs.write_text("a.txt", "a\n")
        assert not (root / "a.txt").exists()  # nothing was done
        fs.write_text("a.txt", "a\n")  # the shortage is over: the same call works
        assert (root / "a.txt").read_text() == "a\n"
        domain = boundary.write_domain()
        assert domain.enforced
        assert refused_outside(fs, outside)  # the kernel's wall, not the check-after-and-undo fallback
        assert not fs._undo()  # the writing operations know it too


def test_no_thread_to_be_had_is_busy_never_unwalled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    real_start = threading.Thread.start
    calls: list[int] = []

    def start_fails_once(self: threading.Thread) -> None:
        if self.name == "rootbound-write" and not calls:
            calls.append(1)
            raise RuntimeError("can't start new thread")
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start_fails_once)
    with Boundary([root]) as boundary:
        fs = RootedFS(boundary)
        with pytest.raises(ServerBusy):
            fs.write_text("b.txt", "b\n")
        assert not (root / "b.txt").exists()
        fs.write_text("b.txt", "b\n")
        assert boundary.write_domain().enforced
        assert refused_outside(fs, outside)


def test_a_worker_that_cannot_restrict_itself_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``landlock_restrict_self`` failing (``ENOMEM``) must not leave an unrestricted thread running the write."""
    root = tmp_path / "root"
    root.mkdir()
    real = landlock.restrict_thread
    failures = [OSError(errno.ENOMEM, "no memory")]

    def restrict(fd: int) -> None:
        if failures:
            raise failures.pop()
        real(fd)

    monkeypatch.setattr(landlock, "restrict_thread", restrict)
    ran: list[str] = []
    with Boundary([root]) as boundary:
        domain = boundary.write_domain()
        with pytest.raises(ServerBusy):
            domain.run(lambda: ran.append("ran"))
        assert ran == []
        assert domain.run(lambda: threading.current_thread().name) == "rootbound-write"


def test_threads_are_capped_for_the_process_and_shared_in_turn(tmp_path: Path) -> None:
    cap = wd.WriteThreads(cap=2)
    roots = []
    for i in range(6):
        roots.append(tmp_path / f"r{i}")
        roots[-1].mkdir()
    fds = [os.open(r, os.O_PATH | os.O_DIRECTORY) for r in roots]
    domains = [wd.WriteDomain([fd], threads=cap) for fd in fds]
    peak = [0]
    lock = threading.Lock()
    gate = threading.Event()

    def write(domain: wd.WriteDomain, root: Path, n: int) -> str:
        def body() -> str:
            with lock:
                peak[0] = max(peak[0], cap.live)
            gate.wait(30)
            (root / f"f{n}").write_text("x")
            return threading.current_thread().name

        return domain.run(body)

    try:
        with ThreadPoolExecutor(max_workers=12) as callers:
            futures = [callers.submit(write, d, r, n) for n in range(2) for d, r in zip(domains, roots, strict=True)]
            assert wait_until(lambda: cap.live == 2)
            time.sleep(0.2)  # more would have started by now if the cap let them
            assert cap.live == 2
            gate.set()
            assert {f.result(timeout=60) for f in futures} == {"rootbound-write"}
        assert peak[0] <= 2
        for root in roots:
            assert sorted(p.name for p in root.iterdir()) == ["f0", "f1"]  # every write served, none refused
    finally:
        for domain in domains:
            domain.close()
        for fd in fds:
            os.close(fd)
    assert wait_until(lambda: cap.live == 0)


def test_idle_workers_end_and_a_closed_domain_keeps_no_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wd, "IDLE", 0.05)
    before = len(write_threads())
    with Boundary([tmp_path]) as boundary:
        fs = RootedFS(boundary)
        for n in range(20):
            fs.write_text(f"{n}.txt", "x")
        assert wait_until(lambda: len(write_threads()) == before)  # idle: gone while the roots are still held
        fs.write_text("again.txt", "x")  # and started again for the next write
        assert (tmp_path / "again.txt").exists()
    assert wait_until(lambda: len(write_threads()) == before)


def test_a_closed_domain_refuses_and_holds_no_fd(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_PATH | os.O_DIRECTORY)
    try:
        count = len(os.listdir("/proc/self/fd"))
        domain = wd.WriteDomain([fd])
        assert len(os.listdir("/proc/self/fd")) == count + 1  # the ruleset, nothing else
        assert domain.run(lambda: 7) == 7
        domain.close()
        assert len(os.listdir("/proc/self/fd")) == count
        with pytest.raises(Exception, match="write domain unavailable"):
            domain.run(lambda: 8)
    finally:
        os.close(fd)
