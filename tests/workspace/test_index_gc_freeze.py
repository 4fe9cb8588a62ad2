"""A server freezes the objects of its start-up once the sandbox is applied (issue 51): a full collection during the
first search would otherwise go over every object the imports made (0.12-0.19 s of a new server's first grep,
measured on a 20k-file tree)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

from rootbound.workspace.early_start import EarlyStart
from rootbound.workspace.server import WorkspaceConfig, _freeze_start_up


def test_the_start_up_objects_are_frozen_after_the_sandbox(tmp_path: Path) -> None:
    gc.unfreeze()
    later: list[Callable[[], None]] = []
    try:
        _freeze_start_up(WorkspaceConfig(dirs=(tmp_path,), index=True, after_sandbox=later))
        assert gc.get_freeze_count() == 0  # not before the sandbox: only with what runs after it
        for call in later:
            call()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_without_a_sandbox_to_wait_for_they_are_frozen_at_once(tmp_path: Path) -> None:
    gc.unfreeze()
    try:
        _freeze_start_up(WorkspaceConfig(dirs=(tmp_path,), index=True))
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_an_early_start_leaves_it_to_the_cli(tmp_path: Path) -> None:
    """Over stdio the sandbox came before the SDK's import: freezing at build time would be too soon for nothing
    (the CLI freezes once the server is built), and ``after_sandbox`` has already run."""
    gc.unfreeze()
    later: list[Callable[[], None]] = []
    early = EarlyStart(allowlist=None, helper=None, indexes=None)
    _freeze_start_up(WorkspaceConfig(dirs=(tmp_path,), index=True, after_sandbox=later, early=early))
    assert later == []
    assert gc.get_freeze_count() == 0
