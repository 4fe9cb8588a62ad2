"""Directories the tests build: a git repository holding given files, a directory on a local file system, and a
workspace for glob-error tests."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from rootbound.confine.local_disks import LOCAL_FILE_SYSTEMS, fs_types
from rootbound.confine.syscalls import mount_id

__all__ = ["bracket_workspace", "fs_type_of", "git_repository", "local_dir"]


def git_repository(root: Path, files: Mapping[str, str]) -> Path:
    """``git init`` at ``root``, then each relative path in ``files`` written with its content (parents made)."""
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content)
    return root


def fs_type_of(path: Path | str) -> str | None:
    """The file system type of ``path``'s mount, as ``Boundary.on_local_disks`` reads it (by mount id)."""
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        mnt = mount_id(fd)
    finally:
        os.close(fd)
    return None if mnt is None else fs_types().get(mnt)


def local_dir(tmp_path: Path) -> Path:
    """A directory on a local file system: the test directory, or tmpfs under /dev/shm (always local)."""
    if fs_type_of(tmp_path) in LOCAL_FILE_SYSTEMS:
        return tmp_path
    shm = Path("/dev/shm") / f"rootbound-{os.getpid()}"
    shm.mkdir(exist_ok=True)
    return shm


def bracket_workspace(base: Path) -> Path:
    """``base/ws`` holding ``src/a.py`` and a file literally named ``[`` (``[[]`` finds it), both with ``needle``."""
    root = base.resolve() / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("needle\n")
    (root / "[").write_text("needle\n")
    return root
