"""Lexical refusal of client roots outside the allowlist (issue 16 #4) as pure code."""

from __future__ import annotations

from pathlib import Path

from rootbound import Root
from rootbound.workspace.lexical_allow import split_lexically

DIRS = [Path("/srv/work"), Path("/home/me/projects")]


def _split(*paths: str) -> tuple[list[str], list[str]]:
    kept, refused = split_lexically([Root.from_path(Path(p)) for p in paths], DIRS)
    return [str(r.path) for r in kept], [str(r.path) for r in refused]


def test_inside_and_above_are_kept_outside_refused() -> None:
    kept, refused = _split("/srv/work/app", "/srv/work", "/", "/home", "/etc/shadow", "/etc/missing", "/srv/workx")
    assert kept == ["/srv/work/app", "/srv/work", "/", "/home"]
    assert refused == ["/etc/shadow", "/etc/missing", "/srv/workx"]
