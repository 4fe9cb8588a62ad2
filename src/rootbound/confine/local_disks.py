"""Which file systems answer in bounded time: local disks and memory, not the network or a user-space daemon.

Why: a server with one client (stdio) may run a quick read on its event loop instead of handing it to a worker
thread (the hop costs 0.1-0.3 ms, as much as the read), but only if no open or read beneath the root can wait
on something unbounded: an NFS or SMB server that went away, a FUSE daemon that never answers. The test is the
file system type of each held root's mount; with mounts never crossed below a root (``RESOLVE_NO_XDEV``), every
object an operation reaches is on that mount.

The type is read from ``/proc/self/mountinfo`` by the mount id taken at intake, never asked of the file system
itself (``fstatfs`` on NFS is a round trip to the server, which may be the one that went away). A held root pins
its mount, so its mount id cannot be reused by another mount while the root is held. An allowlist of
type names, so that a type not named here (network, FUSE, new) counts as slow: failing closed here only costs the
thread hop.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Final

__all__ = ["LOCAL_FILE_SYSTEMS", "MOUNTINFO", "fs_types", "is_local", "keep_mountinfo_open"]

LOCAL_FILE_SYSTEMS: Final = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "bcachefs", "zfs", "jfs", "reiserfs", "tmpfs", "ramfs"}
    | {"overlay"}  # containers' root file system; its layers are directories on the host's disks
)
"""``fstype`` names (the field after `` - `` in ``mountinfo``) of file systems on local block devices or in memory."""

MOUNTINFO: Final = "/proc/self/mountinfo"

_held_fd = -1
_lock = threading.Lock()


def keep_mountinfo_open() -> None:
    """Hold ``/proc/self/mountinfo`` open from now on: a sandbox applied later (Landlock checks at open time)
    would refuse to open it, but a held fd reads a fresh table each time from offset 0."""
    global _held_fd
    with _lock:
        if _held_fd < 0:
            with contextlib.suppress(OSError):  # no procfs: nothing is known to be local
                _held_fd = os.open(MOUNTINFO, os.O_RDONLY | os.O_CLOEXEC)


def _read(mountinfo: str) -> str | None:
    """The table's text, or ``None`` when it cannot be read (then nothing is known to be local)."""
    try:
        if mountinfo == MOUNTINFO and _held_fd >= 0:
            with _lock:
                os.lseek(_held_fd, 0, os.SEEK_SET)  # a seq_file: read again from 0, it lists the mounts as they are
                chunks = []
                while chunk := os.read(_held_fd, 65536):
                    chunks.append(chunk)
            return b"".join(chunks).decode("utf-8", "replace")
        with open(mountinfo, encoding="utf-8", errors="replace") as lines:
            return lines.read()
    except OSError:
        return None


def fs_types(mountinfo: str = MOUNTINFO) -> dict[int, str]:
    """Mount id -> file system type, for every mount this process sees (empty when ``mountinfo`` is unreadable)."""
    text = _read(mountinfo)
    types: dict[int, str] = {}
    for line in (text or "").splitlines():
        # "36 35 98:0 /root /mnt rw,noatime shared:1 - ext4 /dev/sda1 rw": optional fields end at a lone "-"
        head, sep, tail = line.partition(" - ")
        fields = head.split(" ", 1)
        if not sep or not fields[0].isdigit() or not tail:
            continue
        types[int(fields[0])] = tail.split(" ", 1)[0]
    return types


def is_local(mount_ids: list[int | None], mountinfo: str = MOUNTINFO) -> bool:
    """Whether every mount id is of one of :data:`LOCAL_FILE_SYSTEMS` (``None``, an unknown id: not local)."""
    if not mount_ids:
        return True
    types = fs_types(mountinfo)
    return all(mnt is not None and types.get(mnt) in LOCAL_FILE_SYSTEMS for mnt in mount_ids)
