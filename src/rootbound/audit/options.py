"""What an audit is asked to do (:class:`AuditOptions`) and the runner's fixed waits and widths."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rootbound.audit.session import (
    ServerSpec,
)
from rootbound.audit.trap import (
    MAX_ENTRIES,
)

__all__ = ["PARALLEL", "ROOTS_GRACE", "ROOTS_WAIT", "UNCONFIGURED", "AuditOptions", "ModeName", "WorkspaceKind"]


ModeName = Literal["args", "roots", "both"]
WorkspaceKind = Literal["auto", "dir", "git"]
PARALLEL = 4  # read probes in flight at once
ROOTS_WAIT = 3.0  # seconds a roots-mode run waits for the server's first roots request before the first control
# a refusal that says the server has nothing to serve without its argument (not a path-specific refusal)
UNCONFIGURED = re.compile(
    r"no (allowed |root |workspace |project )?(directories|directory|dirs|roots?|workspace|folders?|projects?)\b"
    r"|cannot operate|not configured|no .{0,20}configured|not initiali[sz]ed",
    re.IGNORECASE,
)
ROOTS_GRACE = 0.5  # ... or this long after the server answered a ping sent after `initialized`


@dataclass
class AuditOptions:
    spec: ServerSpec
    modes: ModeName = "both"
    write: bool = False
    allow_tools: frozenset[str] = frozenset()
    timeout: float = 5.0
    budget: float = 120.0
    trap_dir: Path | None = None
    trap_home: bool = False
    keep_trap: bool = False
    accept_partial: bool = False
    stderr_log: Path | None = None  # where the server's stderr goes (default: a new file in the temp dir)
    seed: str | None = None  # rebuild a reported trap (--replay)
    workspace_kind: WorkspaceKind = "auto"  # git: W and the outside directories are repositories
    max_entries: int = MAX_ENTRIES  # a trap holding more (the server flooded it) stops the audit
    server_cwd: Path | None = None  # where the server runs (default: where the audit runs; a canary is planted)
    far_temp: Path | None = None  # where the temp-dir canary goes (default: the system temp dir)
    far_home: Path | None = None  # where the home canary goes (default: the user's home)
    progress: Callable[[str], None] | None = None
    # kernel evidence: fanotify (process ids) where the kernel allows it, else inotify; "inotify" forces the latter
    kernel: Literal["auto", "inotify"] = "auto"
    # the server runs in a sandbox (the auditor's home hidden, writes walled) where the kernel allows it
    sandbox: bool = True
