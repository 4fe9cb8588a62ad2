"""The roots cap and the descriptor budget (issue 16 #2) as pure code."""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from rootbound import Root, RootSet
from rootbound.confine import landlock
from rootbound.mcp import RootsProvider
from rootbound.workspace.effective_roots import HeldBoundaries
from rootbound.workspace.limits.fd_budget import FDS_PER_ROOT, RootBudget, RootsRefused, open_fds
from tests.helpers.serve_process import http_serve, text_of


def test_cap_per_snapshot() -> None:
    budget = RootBudget(max_roots=4)
    budget.admit(4)
    with pytest.raises(RootsRefused, match="declared 5 roots; this server holds at most 4"):
        budget.admit(5)


def test_open_fds_counts_what_is_open() -> None:
    before = open_fds()
    fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(10)]
    try:
        assert open_fds() == before + 10
    finally:
        for fd in fds:
            os.close(fd)


def test_global_budget_refuses_near_the_limit() -> None:
    """In a child with a 64-fd limit: a snapshot that would cross 75 % of it is refused, a small one is not."""
    code = (
        "import os, resource\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))\n"
        "from rootbound.workspace.limits.fd_budget import RootBudget, RootsRefused\n"
        "budget = RootBudget()\n"
        "budget.admit(2)\n"
        "try:\n"
        "    budget.admit(30)\n"
        "except RootsRefused as error:\n"
        "    print(error)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "file-descriptor budget" in out
    assert resource.getrlimit(resource.RLIMIT_NOFILE)  # the parent's limit is untouched


# -- issue 24 #2: counting under the sandbox, and releasing what abandoned sessions hold -------------------------

KERNEL_ABI = landlock.abi_version()
needs_landlock = pytest.mark.skipif(KERNEL_ABI == 0, reason="this kernel offers no Landlock (tested where it does)")


@needs_landlock
def test_open_fds_still_counts_once_sandboxed(tmp_path: Path) -> None:
    """Landlock refuses opening /proc/self/fd; the count goes through the fd held since import."""
    code = (
        "import os, sys\n"
        "from rootbound.workspace.limits.fd_budget import open_fds\n"
        "from rootbound.workspace.sandbox import Sandbox\n"
        "Sandbox([__import__('pathlib').Path(sys.argv[1])], writable=False).apply()\n"
        "try:\n"
        "    os.listdir('/proc/self/fd')\n"
        "    print('not sandboxed')\n"
        "except PermissionError:\n"
        "    before = open_fds()\n"
        "    fds = [os.dup(0) for _ in range(10)]\n"
        "    print(before > 0, open_fds() - before)\n"
    )
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["True", "10"], run.stdout + run.stderr


LOW_LIMIT = (
    "import resource, sys\n"
    "resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))\n"
    "from rootbound.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


@needs_landlock
@pytest.mark.anyio
async def test_the_budget_refuses_under_the_sandbox_and_a_victim_still_reads(tmp_path: Path) -> None:
    """``serve --http`` sandboxed, 256 fds: a session of 60 file roots (120 fds) is admitted, a second one is
    refused with the budget's words, not admitted to exhaust the table; a small session still reads."""
    work = tmp_path.resolve()
    for i in range(120):
        (work / f"f{i}.txt").write_text(f"{i}\n")
    (work / "victim.txt").write_text("victim\n")
    texts: list[tuple[bool, str]] = []
    args = [str(work)]
    launcher = ("-c", LOW_LIMIT)
    first = RootsProvider([Root.from_path(work / f"f{i}.txt") for i in range(60)])
    second = RootsProvider([Root.from_path(work / f"f{i}.txt") for i in range(60, 120)])
    victim = RootsProvider([Root.from_path(work)])
    with http_serve(args, launcher=launcher) as url:
        async with http_client(url, first) as holder:  # open throughout: its 60 roots stay held (issue 33 #2)
            texts.append(await text_of(holder, "read_file", path=str(work / "f0.txt")))
            for provider, path in ((second, "f60.txt"), (victim, "victim.txt")):
                async with http_client(url, provider) as client:
                    texts.append(await text_of(client, "read_file", path=str(work / path)))
    assert texts[0] == (False, "0\n")
    assert texts[1][0] and "file-descriptor budget" in texts[1][1], texts[1]
    assert texts[2] == (False, "victim\n")


@contextlib.asynccontextmanager
async def http_client(url: str, provider: RootsProvider) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=60)) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy", **provider.client_kwargs()) as client,
    ):
        yield client


def _file_roots(base: Path, names: range) -> RootSet:
    return RootSet.of([Root.from_path(base / f"f{i}.txt") for i in names])


def test_an_idle_snapshot_is_released_to_make_room_and_taken_in_again_without_following_moves(
    tmp_path: Path,
) -> None:
    """Two snapshots that do not fit together: with ``idle_release=0`` the unused one is released for the new
    one; when its session comes back it is taken in again, and a root whose file was replaced meanwhile is
    dropped, not followed. A snapshot in use is never released."""
    base = tmp_path.resolve()
    for i in range(40):
        (base / f"f{i}.txt").write_text(f"{i}\n")
    first, second = _file_roots(base, range(20)), _file_roots(base, range(20, 40))
    room = open_fds() + FDS_PER_ROOT * 20 + 8  # one snapshot fits, two do not

    patient = HeldBoundaries([base], RootBudget(fraction=1.0, limit=room, idle_release=3600))
    with patient.for_roots(first):
        pass
    with pytest.raises(RootsRefused, match="file-descriptor budget"), patient.for_roots(second):
        pass
    del patient
    gc.collect()  # its boundaries close with it

    held = HeldBoundaries([base], RootBudget(fraction=1.0, limit=room, idle_release=0))
    with held.for_roots(first) as boundary:
        with pytest.raises(RootsRefused), held.for_roots(second):
            pass  # the first is in use: not released
        assert not boundary.closed
    with held.for_roots(second) as boundary:
        assert len(boundary) == 20
    assert boundary is not None
    (base / "other.txt").write_text("replaced\n")
    os.replace(base / "other.txt", base / "f3.txt")  # another object under the same name
    with held.for_roots(first) as again:
        assert len(again) == 19
        assert all(root.path.name != "f3.txt" for root in again)
    assert boundary.closed  # the second, idle again, made room
