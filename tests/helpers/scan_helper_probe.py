"""The scan helper seen from outside, through ``/proc``: a server's children, a helper's read counter, and the
moment it waits on its socket (ready, between chunks), so a test can say it took part in a grep without assuming
how fast it started or how the work split."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import anyio

from rootbound.search.agent_grep import GrepLimits
from rootbound.search.chunk_scan import Event, job_of
from rootbound.search.grep_query import GrepQuery
from rootbound.search.safe_regex import compile_bytes
from rootbound.search.scan_helper import ScanHelper

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


def needle_query() -> GrepQuery:
    """A literal grep for ``needle``, as a helper gets it in a job."""
    return GrepQuery(
        compile_bytes("needle", regex=False),
        source=("needle", False, False),
        limits=GrepLimits(),
        files_only=False,
        max_files=10,
        required=b"needle",
        deadline=None,
        line_local=True,
    )


def ask_ready_helper(helper: ScanHelper, files: Sequence[tuple[Path, str]]) -> dict[int, list[Event]]:
    """Once ``helper`` is ready (60 s at most), send it one job per ``(directory, name)`` (tickets 1, 2, …: each
    directory's fd opened here, as the server passes them) and return its answers by ticket."""
    ends = time.monotonic() + 60
    while time.monotonic() < ends:
        with helper.take() as lease:
            if lease is None:
                assert helper.alive, "the helper did not start"
                time.sleep(0.02)
                continue
            for ticket, (place, name) in enumerate(files, 1):
                fd = os.open(place, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    st = os.stat(place / name)
                    job = job_of(needle_query(), "read-only", ("openat2", False, st.st_dev, None))
                    assert lease.send(ticket, job, [(0, name, st.st_ino)], [fd])
                finally:
                    os.close(fd)
            answers: dict[int, list[Event]] = {}
            while len(answers) < len(files) and helper.alive:
                answers.update(lease.answers(1.0))
            return answers
    raise AssertionError("the helper did not say it was ready")
