"""The scan helper seen from outside, through ``/proc``: a server's children, a helper's read counter, and the
moment it waits on its socket (ready, between chunks), so a test can say it took part in a grep without assuming
how fast it started or how the work split."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio

HELPER_MODULE = b"rootbound.workspace.scan_process"


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def read_bytes(pid: int) -> int:
    """What ``pid`` read through read(2) and its kin (``rchar``: files, not its socket's recvmsg)."""
    with open(f"/proc/{pid}/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


def helper_socket(pid: int) -> int | None:
    """The socket fd a scan helper was started with, or ``None`` if ``pid`` is not one."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return int(argv[argv.index(HELPER_MODULE) + 1]) if HELPER_MODULE in argv else None


async def until_idle(pid: int, sock_fd: int, wait: float = 120) -> None:
    """Until the helper is blocked reading its socket (``/proc/PID/syscall``: a syscall whose first argument is the
    socket's fd), which it reaches only once ready and between chunks."""
    ends = time.monotonic() + wait
    while time.monotonic() < ends:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
        if len(fields) > 1 and fields[0] != "running" and int(fields[1], 16) == sock_fd:
            return
        await anyio.sleep(0.05)
    raise AssertionError("the scan helper never waited on its socket: it did not start")
