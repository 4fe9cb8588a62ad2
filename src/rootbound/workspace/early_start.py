"""What a server sets up before the SDK is loaded: the DIRs held, the scan helper spawned, the search indexes made.

Over stdio the CLI restricts the process right after this (``Sandbox.loads_later``) and starts taking up the saved
indexes, then imports the SDK and builds the server: the take up's checks of every file run while the SDK loads,
~0.5-0.8 s a host waits for anyway, instead of after the first grep has arrived (issue 51). Nothing here may import
the SDK or start a thread; both belong after the restriction. :func:`build_workspace_server` makes the same three
objects itself when given none (HTTP, library callers).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rootbound.confine.boundary import Boundary
from rootbound.search.index.registry import IndexRegistry
from rootbound.search.index.saved import SavedStore
from rootbound.search.scan_helper import ScanHelper

__all__ = ["EarlyStart", "IndexPlan", "index_registry", "spawn_scan_helper"]


@dataclass(frozen=True)
class IndexPlan:
    """What the search indexes are to be: where their postings go, what is saved, when they start."""

    dirs: tuple[Path, ...]
    enabled: bool
    confine_only: bool
    at_start: bool
    cache: Path | None
    saved: SavedStore | None


@dataclass(frozen=True)
class EarlyStart:
    """The DIRs held (:class:`Boundary`, ``None`` without DIRs), the scan helper (``None``: one process) and the
    index registry (``None``: no index), made before the sandbox; the server takes them over."""

    allowlist: Boundary | None
    helper: ScanHelper | None
    indexes: IndexRegistry | None

    @classmethod
    def make(
        cls, plan: IndexPlan, helper_command: tuple[str, ...] | None, later: list[Callable[[], None]]
    ) -> EarlyStart:
        """Hold the DIRs, spawn the helper, make the registry; what needs a thread goes to ``later``."""
        allowlist = Boundary(plan.dirs) if plan.dirs else None
        return cls(allowlist, spawn_scan_helper(helper_command, allowlist), index_registry(plan, later))


def index_registry(plan: IndexPlan, later: list[Callable[[], None]] | None) -> IndexRegistry | None:
    """One search index per DIR, shared by every session (none for the home directory of no-DIR mode: a wall, not
    a workspace). Its builds are threads: started now only when nothing waits for a sandbox (``later`` is None),
    else appended to ``later``; a DIR with a saved index is taken up at start, in the background."""
    if not plan.enabled or not plan.dirs or plan.confine_only:
        return None
    registry = IndexRegistry(
        [d.resolve() for d in plan.dirs], cache=plan.cache, at_start=plan.at_start and later is None, saved=plan.saved
    )
    if plan.at_start and later is not None:
        later.append(registry.start_all)
    elif plan.saved is not None:
        if later is None:
            registry.start_saved()
        else:
            later.append(registry.start_saved)
    return registry


def spawn_scan_helper(command: Sequence[str] | None, allowlist: Boundary | None) -> ScanHelper | None:
    """The scan helper process, spawned now (before the sandbox: a restricted process may not execute the
    interpreter; the helper applies its own, built from the held DIRs' fds, never their names) and ended with the
    process; ``None`` when there is no command or it cannot be spawned (grep then scans in one process)."""
    if command is None:
        return None
    try:
        if allowlist is None:
            helper = ScanHelper(tuple(command))
        else:
            with allowlist.use():
                helper = ScanHelper(tuple(command), holds=allowlist.root_fds())
    except OSError as error:
        print(f"rootbound serve: scan helper not started ({error.strerror}): grep scans on one core", file=sys.stderr)
        return None
    return helper  # ended by close_helpers() on every exit path
