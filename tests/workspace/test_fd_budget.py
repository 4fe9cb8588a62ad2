"""The roots cap and the descriptor budget (issue 16 #2) as pure code."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from rootbound.workspace._fd_budget import RootBudget, RootsRefused, open_fds


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
        "from rootbound.workspace._fd_budget import RootBudget, RootsRefused\n"
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
