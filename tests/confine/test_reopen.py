"""The READ intent's type check before any reading open, and the held ``/proc/<pid>/fd`` dirfd it reopens through.

Issue 16 #8: a regular file is reached as an ``O_PATH`` fd, its type checked, and only then reopened for reading
through that fd (procfs), never by name, so a FIFO or device is never opened for reading. The reopen looks the fd
number up in a dirfd of ``/proc/<pid>/fd`` held since import (``resolvers``): a child of ``fork()`` must
never look its fd numbers up in its *parent's* table, and without procfs the reopen must fail closed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rootbound import Boundary, NotAFile, PathNotFound, RootedFS
from rootbound.confine import intents as intent_mod
from rootbound.confine import proc_fd as procfd_mod
from tests.helpers.processes import private_mount_namespace

RESOLVERS = ["openat2", "walk"]  # "portable" has no O_PATH: its "path" open already is a non-blocking read open
SECRET = b"SECRET-OUTSIDE-5c1e"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = Path(os.path.realpath(tmp_path))
    root = base / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "plain.txt").write_bytes(b"inside")
    (root / "a" / "b" / "deep.txt").write_bytes(b"deep inside")
    (base / "outside").mkdir()
    (base / "outside" / "secret").write_bytes(SECRET)
    return base


@pytest.fixture(params=RESOLVERS)
def fs(request: pytest.FixtureRequest, tree: Path) -> Iterator[RootedFS]:
    with Boundary([tree / "root"], resolver=request.param) as boundary:
        yield RootedFS(boundary)


# -- special files are typed on an O_PATH fd, never opened for reading ------------------------------------------


def _blocked_writer(fifo: Path) -> subprocess.Popen[bytes]:
    """A process blocked in ``open(fifo, O_WRONLY)``, returned once the kernel shows it waiting for a reader."""
    writer = subprocess.Popen([sys.executable, "-c", f"import os; os.open({str(fifo)!r}, os.O_WRONLY)"])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            wchan = Path(f"/proc/{writer.pid}/wchan").read_text()
        except OSError:
            wchan = ""
        if wchan == "wait_for_partner":
            return writer
        assert writer.poll() is None, "the writer was released before the test began"
        time.sleep(0.01)
    writer.kill()
    raise AssertionError("the writer never blocked on the FIFO")


@pytest.mark.parametrize("where", ["pipe", "a/b/pipe", "link-to-pipe"])
def test_a_fifo_with_a_blocked_writer_is_never_opened(fs: RootedFS, tree: Path, where: str) -> None:
    """Directly in the root, three levels down (the walk's fast descent) and through an in-root symlink (the walk's
    link-following path): refused as not a file, and the blocked writer stays blocked (an open for reading, even
    non-blocking, would release it)."""
    root = tree / "root"
    fifo = root / ("a/b/pipe" if where == "a/b/pipe" else "pipe")
    os.mkfifo(fifo)
    if where == "link-to-pipe":
        os.symlink("pipe", root / "link-to-pipe")
    writer = _blocked_writer(fifo)
    try:
        for _ in range(3):
            with pytest.raises(NotAFile):
                fs.read_bytes(where)
            with pytest.raises(NotAFile):
                fs.read_range(where, 0, 10)
        time.sleep(0.2)
        assert writer.poll() is None, "the FIFO was opened for reading: its blocked writer was released"
        assert Path(f"/proc/{writer.pid}/wchan").read_text() == "wait_for_partner"
    finally:
        writer.kill()
        writer.wait()


def test_a_device_node_is_refused(fs: RootedFS, tree: Path) -> None:
    """A character device (a copy of /dev/null's numbers) in a root is typed and refused, never opened."""
    try:
        os.mknod(tree / "root" / "null", 0o600 | 0o020000, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    with pytest.raises(NotAFile):
        fs.read_bytes("null")


# -- the held /proc/<pid>/fd dirfd -------------------------------------------------------------------------------


def test_the_held_dirfd_names_this_process_fd_table() -> None:
    held = procfd_mod._proc_fd
    assert held >= 0
    assert os.readlink(f"/proc/self/fd/{held}") == f"/proc/{os.getpid()}/fd"


_FORK_SCRIPT = textwrap.dedent(
    """
    import ctypes, os, sys
    from rootbound import Boundary, RootedFS, RootsError
    from rootbound.confine import proc_fd as _resolve
    root, secret, how, resolver = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    fs = RootedFS(Boundary([root], resolver=resolver))
    assert fs.read_bytes("plain.txt") == b"inside"  # the parent's dirfd is in use
    parent_dirfd = _resolve._proc_fd
    # The parent holds the outside secret on the lowest free fd N; the child frees N, so its O_PATH open of
    # plain.txt gets N. Reopened through the *parent's* /proc/<pid>/fd, "N" would be the secret.
    n = os.open(secret, os.O_RDONLY)
    pid = os.fork() if how == "os.fork" else ctypes.CDLL(None).fork()  # libc fork: no Python fork hooks run
    if pid == 0:
        code = 3
        try:
            os.close(n)
            try:
                data = fs.read_bytes("plain.txt")
            except RootsError as exc:
                data = type(exc).__name__.encode()
            mine = os.readlink(f"/proc/self/fd/{_resolve._proc_fd}") == f"/proc/{os.getpid()}/fd"
            code = 0 if data == b"inside" and mine else (1 if b"SECRET" in data else 2)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert _resolve._proc_fd == parent_dirfd and fs.read_bytes("plain.txt") == b"inside"
    sys.exit(os.waitstatus_to_exitcode(status))
    """
)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("how", ["os.fork", "libc fork"])
def test_a_forked_child_reopens_its_own_fds_not_its_parents(tree: Path, resolver: str, how: str) -> None:
    """After ``os.fork()`` (the fork hook replaces the dirfd) and after a fork that bypasses Python's hooks (the pid
    check does), the child reads its own file; 1 would mean it reopened the parent's fd (the outside secret)."""
    done = subprocess.run(
        [sys.executable, "-c", _FORK_SCRIPT, str(tree / "root"), str(tree / "outside" / "secret"), how, resolver],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, (done.returncode, done.stderr)


# -- without procfs: today's fallback, which fails closed ---------------------------------------------------------


@pytest.fixture
def no_procfs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """As if /proc were not mounted: no held dirfd, and the by-path names lead nowhere."""
    missing = str(tmp_path / "no-proc" / "self" / "fd")
    monkeypatch.setattr(procfd_mod, "_proc_fd", -1)
    monkeypatch.setattr(procfd_mod, "_PROC_SELF_FD", missing)


def test_without_procfs_reads_still_work_and_fifos_are_still_refused(fs: RootedFS, tree: Path, no_procfs: None) -> None:
    assert fs.read_bytes("plain.txt") == b"inside"
    assert fs.read_bytes("a/b/deep.txt") == b"deep inside"
    os.mkfifo(tree / "root" / "pipe")
    with pytest.raises(NotAFile):
        fs.read_bytes("pipe")


def test_without_procfs_a_file_replaced_before_the_reopen_is_refused(
    fs: RootedFS, tree: Path, no_procfs: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback resolves the path again and must reach the inode that was type-checked; a file swapped in
    between (here: right before the reopen) is refused, never read."""
    root = tree / "root"
    (root / "other.txt").write_bytes(b"swapped in")
    real = procfd_mod.proc_open

    def swap_then_reopen(fd: int, flags: int) -> int:
        os.replace(root / "other.txt", root / "plain.txt")
        return real(fd, flags)

    monkeypatch.setattr(intent_mod, "proc_open", swap_then_reopen)
    with pytest.raises(PathNotFound):
        fs.read_bytes("plain.txt")


_NO_PROC_SCRIPT = textwrap.dedent(
    """
    import os, subprocess, sys
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/proc"], check=True)  # /proc is now an empty directory
    from rootbound import Boundary, NotAFile, RootedFS
    from rootbound.confine import proc_fd as _resolve
    assert _resolve._proc_fd == -1, "a dirfd was opened without procfs"
    root = sys.argv[1]
    os.mkfifo(os.path.join(root, "pipe"))
    for resolver in ("openat2", "walk"):
        fs = RootedFS(Boundary([root], resolver=resolver))
        assert fs.read_bytes("plain.txt") == b"inside"
        assert fs.read_bytes("a/b/deep.txt") == b"deep inside"
        try:
            fs.read_bytes("pipe")
        except NotAFile:
            pass
        else:
            raise AssertionError("a FIFO was read")
    print("ok")
    """
)


def test_without_a_mounted_procfs_in_a_mount_namespace(tree: Path) -> None:
    """The real thing: /proc covered by an empty tmpfs in a private mount namespace before rootbound is imported."""
    args = private_mount_namespace()
    done = subprocess.run(
        [*args, sys.executable, "-c", _NO_PROC_SCRIPT, str(tree / "root")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
