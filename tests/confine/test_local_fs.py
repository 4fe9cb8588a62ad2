"""The file system type of a held root's mount (from ``/proc/self/mountinfo`` by mount id), and
``Boundary.on_local_disks`` built on it (issue 15: a one-client server runs quick calls on its event loop only
where no open can wait on a network server or a FUSE daemon)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rootbound import Boundary
from rootbound.confine.local_disks import fs_types, is_local
from tests.helpers.trees import fs_type_of, local_dir

PLACES = ("/", "/proc", "/sys", "/dev", "/dev/shm")


@pytest.mark.skipif(shutil.which("findmnt") is None, reason="util-linux findmnt is the judge")
@pytest.mark.parametrize("place", PLACES)
def test_the_type_agrees_with_findmnt(place: str) -> None:
    if not os.path.exists(place):
        pytest.skip(f"{place} is not mounted here")
    judge = subprocess.run(
        ["findmnt", "-n", "-o", "FSTYPE", "--target", place], capture_output=True, text=True, check=True
    ).stdout.split()[0]
    assert fs_type_of(place) == judge


def test_mountinfo_lines_are_read_by_their_separator(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(
        "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
        "27 1 8:1 / / rw,relatime shared:1 master:2 - ext4 /dev/sda1 rw\n"
        "31 27 0:40 / /mnt/a\\040-\\040b rw - nfs4 server:/export rw,vers=4.2\n"  # " - " escaped in the path
        "32 27 0:41 / /mnt/fuse rw - fuse.sshfs host: rw\n"
        "33 27 0:42 / /x rw - overlay overlay rw,lowerdir=/a\n"
        "not a line\n"
        "34 27 0:43 / /y rw shared:5\n"  # no separator: skipped
        "\n"
    )
    assert fs_types(str(info)) == {22: "proc", 27: "ext4", 31: "nfs4", 32: "fuse.sshfs", 33: "overlay"}
    assert is_local([27, 33], str(info))
    assert not is_local([27, 31], str(info))  # one root on NFS is enough
    assert not is_local([32], str(info))
    assert not is_local([22], str(info))
    assert not is_local([27, None], str(info))  # a mount id that could not be taken
    assert not is_local([99], str(info))  # a mount this process does not see
    assert not is_local([27], str(tmp_path / "missing"))  # unreadable: nothing is known to be local
    assert is_local([], str(info))  # no root: nothing to wait on


@pytest.mark.parametrize("resolver", ["openat2", "walk"])
def test_a_boundary_on_local_disks(tmp_path: Path, resolver: str) -> None:
    local = local_dir(tmp_path)
    (local / "sub").mkdir(exist_ok=True)
    (local / "file.txt").write_text("x")
    with Boundary([local, local / "file.txt"], resolver=resolver) as boundary:  # type: ignore[arg-type]
        assert boundary.on_local_disks
        derived = boundary.without([boundary.roots[1]])
        try:
            assert derived.on_local_disks
        finally:
            derived.close()
    with Boundary([local], cross_mounts=True, resolver=resolver) as crossing:  # type: ignore[arg-type]
        assert not crossing.on_local_disks  # an open may then reach any mount below
    with Boundary([local, "/proc"], resolver=resolver) as mixed:  # type: ignore[arg-type]
        assert len(mixed) == 2
        assert not mixed.on_local_disks  # one root on a file system not known to be local is enough
    with Boundary([], resolver=resolver) as empty:  # type: ignore[arg-type]
        assert empty.on_local_disks  # nothing beneath it can wait on anything


def test_the_portable_resolver_has_no_mount_ids_so_nothing_is_local(tmp_path: Path) -> None:
    with Boundary([local_dir(tmp_path)], resolver="portable") as boundary:
        assert not boundary.on_local_disks
