"""atomic_write: the fd-level pieces every confined write is published with (temp, rename, beneath proof)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from rootbound import OutsideRoots
from rootbound.confine import atomic_write as atomic


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = Path(os.path.realpath(tmp_path))
    (base / "root" / "a" / "b").mkdir(parents=True)
    (base / "outside").mkdir()
    return base


@pytest.fixture
def dirfd(tree: Path) -> Iterator[int]:
    fd = os.open(tree / "root" / "a" / "b", os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


def identity(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def test_beneath_follows_the_object_not_the_name(tree: Path, dirfd: int) -> None:
    root = identity(tree / "root")
    assert atomic.beneath(dirfd, root)
    assert atomic.beneath(dirfd, identity(tree / "root" / "a" / "b"))  # the root itself counts
    assert not atomic.beneath(dirfd, identity(tree / "outside"))
    os.rename(tree / "root" / "a", tree / "outside" / "a")  # a local process moves the parent out
    assert not atomic.beneath(dirfd, root)
    assert atomic.beneath(dirfd, identity(tree / "outside"))
    os.symlink(tree / "outside" / "a", tree / "root" / "a")  # a link back at the old name changes nothing
    assert not atomic.beneath(dirfd, root)


def test_beneath_is_bounded(tree: Path, dirfd: int) -> None:
    assert not atomic.beneath(dirfd, identity(tree / "root"), max_depth=1)
    assert atomic.beneath(dirfd, identity(tree / "root"), max_depth=2)


def test_write_temp_is_complete_private_and_keeps_mode(dirfd: int, tree: Path) -> None:
    name = atomic.write_temp(dirfd, b"data" * 1000, keep_mode=0o100640)
    path = tree / "root" / "a" / "b" / name
    assert name.startswith(atomic.TEMP_PREFIX) and name.endswith(atomic.TEMP_SUFFIX)
    assert path.read_bytes() == b"data" * 1000
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    atomic.discard(dirfd, name)
    assert not path.exists()
    umask = os.umask(0o027)
    try:
        fresh = atomic.write_temp(dirfd, b"", new_mode=0o666)
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tree / "root" / "a" / "b" / fresh).stat().st_mode) == 0o640
    atomic.discard(dirfd, name)  # already gone: no error


def test_rename_noreplace_refuses_existing_names_and_links(dirfd: int, tree: Path) -> None:
    here = tree / "root" / "a" / "b"
    (here / "src").write_bytes(b"new")
    (here / "taken").write_bytes(b"old")
    os.symlink(tree / "outside" / "nothing", here / "dangling")
    for name in ("taken", "dangling"):
        with pytest.raises(FileExistsError):
            atomic.rename_noreplace(dirfd, "src", dirfd, name)
    assert (here / "taken").read_bytes() == b"old"
    assert os.listdir(tree / "outside") == []
    atomic.rename_noreplace(dirfd, "src", dirfd, "fresh")
    assert (here / "fresh").read_bytes() == b"new"
    with pytest.raises(ValueError, match="null"):
        atomic.rename_noreplace(dirfd, "a\x00b", dirfd, "c")


@pytest.mark.parametrize("fallback", [False, True])
def test_publish_create_only(dirfd: int, tree: Path, fallback: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if fallback:  # a libc without renameat2: link + unlink must refuse existing names just the same
        monkeypatch.setattr(atomic, "_renameat2", None)
    here = tree / "root" / "a" / "b"
    root = identity(tree / "root")
    atomic.publish(dirfd, atomic.write_temp(dirfd, b"one"), "f", root=root, replace=False)
    assert (here / "f").read_bytes() == b"one"
    with pytest.raises(FileExistsError):
        atomic.publish(dirfd, atomic.write_temp(dirfd, b"two"), "f", root=root, replace=False)
    assert (here / "f").read_bytes() == b"one"
    atomic.publish(dirfd, atomic.write_temp(dirfd, b"three"), "f", root=root, replace=True)
    assert (here / "f").read_bytes() == b"three"
    assert sorted(os.listdir(here)) == ["f"]  # no temp file left behind, on success or failure


def test_publish_refuses_a_directory_moved_out_mid_write(dirfd: int, tree: Path) -> None:
    root = identity(tree / "root")
    temp = atomic.write_temp(dirfd, b"secret-in-flight")
    os.rename(tree / "root" / "a", tree / "outside" / "a")
    with pytest.raises(OutsideRoots):
        atomic.publish(dirfd, temp, "f", root=root, replace=True)
    assert os.listdir(tree / "outside" / "a" / "b") == []  # the temp file is gone, nothing was published


def test_rename_noreplace_without_libc_support(monkeypatch: pytest.MonkeyPatch, dirfd: int) -> None:
    monkeypatch.setattr(atomic, "_renameat2", None)
    with pytest.raises(OSError, match="not implemented") as caught:
        atomic.rename_noreplace(dirfd, "a", dirfd, "b")
    assert caught.value.errno == errno.ENOSYS
