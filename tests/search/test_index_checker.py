"""A saved index taken up through a forked child (``search/index/checker.py``, issue 51): the child walks and
checks while the parent loads the SDK; what it saw is used only with the kernel's events since, and refused whole
on any fault. Each case runs in a new process (``tests/helpers/checker_scenarios.py``): a fork needs a process with
no other thread. Every answer is compared with a full scan inside the case."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def _case(name: str, tmp_path: Path, **env: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.helpers.checker_scenarios", name, str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return said


def test_changes_after_the_child_saw_the_tree_reach_the_index(tmp_path: Path) -> None:
    said = _case("changed_after_the_child_saw_it", tmp_path)
    assert said["forked"] and said["from_child"] > 0  # the take up used the child's report
    assert said["dirty"] > 0  # the changes made after the child listed, from the shared inotify instance
    assert said["reused"] > 0 and said["answered"] > 0  # and every answer equalled a full scan (checked in the case)


def test_a_child_that_fails_leaves_the_take_up_to_this_process(tmp_path: Path) -> None:
    said = _case("the_child_fails", tmp_path)
    assert said["forked"] and said["from_child"] == 0
    assert said["reused"] > 0 and said["answered"] > 0


# not marshal; another directory's identity; another version; stats that do not fit the names; the first version
@pytest.mark.parametrize("kind", ["0", "1", "2", "3", "4"])
def test_a_report_that_is_not_one_is_refused_whole(tmp_path: Path, kind: str) -> None:
    said = _case("the_child_sends_garbage", tmp_path, RB_GARBAGE=kind)
    assert said["forked"] and said["from_child"] == 0
    assert said["reused"] > 0 and said["answered"] > 0


def test_a_first_query_never_waits_for_a_child_still_walking(tmp_path: Path) -> None:
    said = _case("a_query_comes_while_the_child_walks", tmp_path)  # the child would sleep for an hour
    assert said["forked"] and said["stopped"] and said["from_child"] == 0
    assert said["reused"] > 0 and said["answered"] > 0


def test_a_directory_traded_for_a_link_while_the_child_walks_leaks_nothing(tmp_path: Path) -> None:
    said = _case("swapped_while_the_child_walks", tmp_path)
    assert said["forked"] and said["from_child"] > 0  # the child's report, walked among the trades, was taken
    assert said["leaked"] == 0
    # Answers were looked at: while the trades went on (none may be, on a loaded machine: each refused and scanned),
    # and for both resolvers once they stopped (views from the child's walk among the trades).
    assert said["answered_after"] == 2


def test_a_server_ending_before_its_build_stops_and_reaps_the_child(tmp_path: Path) -> None:
    said = _case("closed_before_it_was_read", tmp_path)
    assert said["reaped"] and said["notify_closed"]
