"""Writes whose directory another process moves out of the root between the ``..`` proof and the syscall (issue 24
item 1): the write domain (Landlock threads restricted to the effective roots) refuses them in the kernel; without
Landlock, the check after the syscall undoes them; the proof alone (``before``) lets them land outside, which shows
the harness really opens that window.

The move is made by a separate process (``mv``), at the last moment: inside the operation's first tree-changing
syscall, just before it runs, so the proof has already passed.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from rootbound import Boundary, Edit, RootedFS, RootsError
from rootbound.confine import atomic_write, landlock, write_domain
from rootbound.confine.write_domain import WriteDomain
from rootbound.confine.write_ops import WriteOps
from rootbound.core.errors import MovedOutOfRoots

HAS_LANDLOCK = landlock.abi_version() >= 2
ORIGINAL = "original line\n"
OPS = ("write", "mkdir", "delete", "move in", "move out", "edit")


@pytest.fixture
def arena(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``dir`` (the allowlist) holding ``root`` (the root) with ``root/d`` in it, and ``outside`` (beside root)."""
    base = Path(os.path.realpath(tmp_path))
    root, outside = base / "dir" / "root", base / "dir" / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "victim").write_text("victim\n")
    (root / "d" / "edit.txt").write_text(ORIGINAL)
    (root / "d" / "inbound").write_text("from d\n")
    (root / "out").write_text("to d\n")
    return base / "dir", root, outside


def listing(path: Path) -> dict[str, str]:
    return {p.name: (p.read_text() if p.is_file() else "dir") for p in sorted(path.iterdir())}


def call(fs: RootedFS, op: str) -> object:
    if op == "write":
        return fs.write_text("d/new", "new\n")
    if op == "mkdir":
        return fs.create_directory("d/newdir")
    if op == "delete":
        return fs.delete_file("d/victim")
    if op == "move in":
        return fs.move("d/inbound", "in")
    if op == "move out":
        return fs.move("out", "d/out")
    return fs.edit_file("d/edit.txt", [Edit(ORIGINAL, "edited line\n")])


@contextlib.contextmanager
def moved_at_first_syscall(monkeypatch: pytest.MonkeyPatch, src: Path, dst: Path) -> Iterator[list[str]]:
    """The first rename, link, mkdir or unlink the operation makes first waits for a separate process to move
    ``src`` to ``dst``. The process is started from a thread the write domain does not restrict (a child of a
    restricted thread would be held by its domain)."""
    mover = ThreadPoolExecutor(max_workers=1)
    mover.submit(int).result()  # the thread exists now, before any domain
    fired: list[str] = []
    lock = threading.Lock()

    def hook(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def hooked(*args: Any, **kwargs: Any) -> Any:
            with lock:
                first = not fired
                fired.append(name)
            if first:
                mover.submit(subprocess.run, ["mv", "-T", str(src), str(dst)], check=True).result()
            return real(*args, **kwargs)

        return hooked

    for name in ("rename", "mkdir", "unlink", "link"):
        monkeypatch.setattr(os, name, hook(name, getattr(os, name)))
    monkeypatch.setattr(atomic_write, "_rename2", hook("renameat2", atomic_write._rename2))
    try:
        yield fired
    finally:
        monkeypatch.undo()
        mover.shutdown()


@contextlib.contextmanager
def configuration(monkeypatch: pytest.MonkeyPatch, name: str) -> Iterator[None]:
    if name in ("before", "no-landlock"):
        monkeypatch.setattr(landlock, "abi_version", lambda: 0)
    if name == "before":
        monkeypatch.setattr(WriteOps, "_undo", lambda self: False)
    yield


@pytest.mark.parametrize("resolver", ["openat2", "walk"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(
    "config",
    [
        pytest.param(
            "default", marks=pytest.mark.skipif(not HAS_LANDLOCK, reason="needs Landlock ABI >= 2 in this kernel")
        ),
        "no-landlock",
        "before",
    ],
)
def test_a_directory_moved_out_before_the_syscall(
    monkeypatch: pytest.MonkeyPatch, arena: tuple[Path, Path, Path], resolver: str, op: str, config: str
) -> None:
    allow, root, outside = arena
    away = outside / "d"
    before = listing(root / "d")
    before_root = listing(root)
    with configuration(monkeypatch, config), Boundary([root], allow=[allow]) as boundary:
        fs = RootedFS(boundary, resolver=resolver)  # type: ignore[arg-type]
        assert boundary.write_domain().enforced is (config == "default")
        with moved_at_first_syscall(monkeypatch, root / "d", away) as fired:
            if config == "before":
                call(fs, op)  # the proof alone: the syscall runs in the moved directory
            else:
                with pytest.raises(RootsError) as refused:
                    call(fs, op)
                if config == "default":  # the kernel's refusal says why: not "permission denied" (issue 33 #6)
                    assert isinstance(refused.value, MovedOutOfRoots), repr(refused.value)
        assert fired, "the operation made no tree-changing syscall: the harness did not open the window"
    after = listing(away)
    if config == "before":
        assert after != before or listing(root) != before_root, "the window was opened but nothing landed outside"
        return
    # A temp file made while the directory was inside and refused by the domain's kernel wall once it was outside
    # is removed by the calling thread: no temp or hidden name is left behind either way.
    assert after == before  # nothing created, removed, edited or taken from the moved directory
    assert listing(root) == {k: v for k, v in before_root.items() if k != "d"}  # "out" still in the root


@pytest.mark.skipif(not HAS_LANDLOCK, reason="needs Landlock ABI >= 2 in this kernel")
def test_the_write_domain_writes_only_beneath_its_roots(tmp_path: Path) -> None:
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    fd_in = os.open(inside, os.O_PATH | os.O_DIRECTORY)
    fd_out = os.open(outside, os.O_RDONLY | os.O_DIRECTORY)
    try:
        domain = WriteDomain([fd_in])
        assert domain.enforced
        domain.run(lambda: os.mkdir(inside / "made"))
        with pytest.raises(PermissionError):
            domain.run(lambda: os.mkdir("made", dir_fd=fd_out))
        assert domain.run(lambda: sorted(os.listdir(outside))) == []  # reads are not its business
        nested = domain.run(lambda: domain.run(lambda: threading.current_thread().name))
        assert nested.startswith("rootbound-write")  # a call from a worker runs in place, never waits on itself
        domain.close()
    finally:
        os.close(fd_in)
        os.close(fd_out)
    os.mkdir(outside / "still-writable-here")  # the calling thread was never restricted


def test_without_landlock_the_domain_runs_in_place(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_PATH | os.O_DIRECTORY)
    try:
        domain = WriteDomain([fd], abi=0)
        assert not domain.enforced
        assert domain.run(threading.current_thread) is threading.current_thread()
    finally:
        os.close(fd)


@pytest.mark.skipif(not HAS_LANDLOCK, reason="needs Landlock ABI >= 2 in this kernel")
def test_a_forked_child_writes_through_a_domain_of_its_own(tmp_path: Path) -> None:
    """The parent's worker threads do not exist in a child of ``fork()``: the child's first write makes its own
    restricted workers instead of waiting forever on the parent's."""
    with Boundary([tmp_path]) as boundary:
        fs = RootedFS(boundary)
        fs.write_text("parent.txt", "p\n")
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through its exit status
            try:
                fs.write_text("child.txt", "c\n")
                os._exit(0 if boundary.write_domain().pid == os.getpid() else 2)
            except BaseException:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    assert (tmp_path / "child.txt").read_text() == "c\n"


def _write_temp_refused_at_open(directory: Path, *, removal_refused: bool) -> tuple[BaseException | None, list[Any]]:
    """``write_temp`` on a thread the kernel lets make a file in ``directory`` but not open it for writing: the
    two checks a temp file passes (Landlock's right to make it, at creation, then to write it, at open), which
    a directory moved out of the roots between them also splits. With ``removal_refused`` the thread may not
    remove it either (a write worker whose directory left the roots): it is left to the calling thread."""
    fd = os.open(directory, os.O_PATH | os.O_DIRECTORY)
    handled = landlock.ACCESS_FS_MAKE_REG | landlock.ACCESS_FS_WRITE_FILE
    if removal_refused:
        handled |= landlock.ACCESS_FS_REMOVE_FILE
    leftovers: list[Any] = []
    failure: list[BaseException] = []

    def refused() -> None:
        with landlock.Ruleset(handled) as ruleset:
            ruleset.allow_path(fd, landlock.ACCESS_FS_MAKE_REG)
            ruleset.restrict_self()
        write_domain._local.leftovers = leftovers if removal_refused else None
        try:
            atomic_write.write_temp(fd, b"content\n")
        except BaseException as exc:
            failure.append(exc)

    try:
        thread = threading.Thread(target=refused)
        thread.start()
        thread.join()
    finally:
        os.close(fd)
    return (failure[0] if failure else None), leftovers


@pytest.mark.skipif(not HAS_LANDLOCK, reason="needs Landlock ABI >= 2 in this kernel")
@pytest.mark.parametrize("removal_refused", [False, True], ids=["removed-in-place", "left-to-the-caller"])
def test_a_temp_file_made_but_not_opened_is_not_left_behind(tmp_path: Path, removal_refused: bool) -> None:
    """The kernel can create the temp file and then refuse to open it (the flake of issue 37's mover race: an
    empty ``.rootbound-*.tmp`` left in a directory moved out and back): the empty file is removed, by the
    worker if it may, else by the calling thread once the call is over."""
    failure, leftovers = _write_temp_refused_at_open(tmp_path, removal_refused=removal_refused)
    assert isinstance(failure, PermissionError)
    if removal_refused:
        assert [p.stat().st_size for p in tmp_path.iterdir()] == [0]  # made, and the worker could not remove it
        assert len(leftovers) == 1
        write_domain._tidy(leftovers)  # what WriteDomain.run does on the calling thread
    assert list(tmp_path.iterdir()) == []
