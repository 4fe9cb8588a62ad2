"""A server with a search index freezes the objects of its start-up once the sandbox is applied (issue 51): a full
collection during the first search would otherwise go over every object the imports made (0.12-0.19 s of a new
server's first grep, measured on a 20k-file tree)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

from rootbound.workspace.server import WorkspaceConfig, _indexes


def test_the_start_up_objects_are_frozen_after_the_sandbox(tmp_path: Path) -> None:
    gc.unfreeze()
    later: list[Callable[[], None]] = []
    registry = _indexes(WorkspaceConfig(dirs=(tmp_path,), index=True, after_sandbox=later))
    assert registry is not None
    try:
        assert gc.get_freeze_count() == 0  # not before the sandbox: only with what runs after it
        for call in later:
            call()
        assert gc.get_freeze_count() > 0
    finally:
        registry.close()
        gc.unfreeze()


def test_no_index_no_freeze(tmp_path: Path) -> None:
    gc.unfreeze()
    later: list[Callable[[], None]] = []
    assert _indexes(WorkspaceConfig(dirs=(tmp_path,), index=False, after_sandbox=later)) is None
    for call in later:
        call()
    assert gc.get_freeze_count() == 0
