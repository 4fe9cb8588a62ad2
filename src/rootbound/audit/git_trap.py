"""The trap for repository servers (``--workspace-kind git``): W and every outside directory become git
repositories whose history, index, working tree and branches carry that location's canary, so that a log, show,
diff, status or branch listing of an outside repository is evidence like a file read.

Per repository (``D`` is W or an outside directory, ``T`` its token, ``N`` its name-only entry)::

    D/.git                    a repository; HEAD's commit message holds T
    D/rbt-tracked.txt         committed, then changed to hold T (``git diff``, ``git diff HEAD``)
    D/rbt-staged.txt          staged, holding T (``git diff --cached``)
    branch N (W: the marker's name)   (``git branch``: a name only a listing shows)

W's marker stays untracked (``git status`` names it). git runs with a fixed identity and no user or system
config, so the trap does not depend on the machine's git setup.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from rootbound.audit.trap import OUTSIDE_DIRS, Trap

__all__ = [
    "EXISTING_BRANCH",
    "GIT_REFS",
    "build_git",
    "git_fillers",
    "index_entries",
    "index_unchanged",
    "looks_like_git",
]

# Parameters of repository tools that name a revision, not a path: filled with HEAD.
GIT_REFS = frozenset({"target", "revision", "rev", "ref", "commit", "sha", "base_branch", "contains", "not_contains"})
EXISTING_BRANCH = "rbt-existing"  # in every repository of the trap, at HEAD: a checkout switches to it


def git_fillers(tool: str) -> dict[str, str]:
    """Values for a repository tool's revision and branch parameters: ``HEAD``, and a branch that exists (to check
    out) or a new one (to create)."""
    fillers = dict.fromkeys(GIT_REFS, "HEAD")
    lowered = tool.lower()
    fillers["branch_name"] = fillers["branch"] = (
        EXISTING_BRANCH if "checkout" in lowered or "switch" in lowered else "rbt-created"
    )
    return fillers


def index_entries(data: bytes) -> list[tuple[bytes, bytes]] | None:
    """(mode + object id, path) of each entry of a git index (versions 2 and 3), without the stat data a mere
    ``git status`` refreshes; None if the bytes are not an index this parser knows."""
    if len(data) < 12 or data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") not in (2, 3):
        return None
    count = int.from_bytes(data[8:12], "big")
    out: list[tuple[bytes, bytes]] = []
    at = 12
    for _ in range(min(count, 100_000)):
        if at + 62 > len(data):
            return None
        mode_and_id = data[at + 24 : at + 28] + data[at + 40 : at + 60]
        flags = int.from_bytes(data[at + 60 : at + 62], "big")
        start = at + 62 + (2 if flags & 0x4000 else 0)
        end = data.find(b"\0", start)
        if end < 0:
            return None
        out.append((mode_and_id, data[start:end]))
        entry_len = end - at
        at += (entry_len + 8) // 8 * 8  # NUL-padded to a multiple of eight
    return out


_GIT_WORD = re.compile(r"(^|[-_/.])git([-_/.]|$)", re.IGNORECASE)
_DATE = "2001-01-01T00:00:00Z"


def looks_like_git(command: tuple[str, ...]) -> bool:
    """A server command that names git (``mcp-server-git``, ``uvx mcp-server-git``, ``git-mcp``)."""
    return any(_GIT_WORD.search(os.path.basename(part)) for part in command)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="rootbound audit",
        GIT_AUTHOR_EMAIL="audit@rootbound.invalid",
        GIT_COMMITTER_NAME="rootbound audit",
        GIT_COMMITTER_EMAIL="audit@rootbound.invalid",
        GIT_AUTHOR_DATE=_DATE,
        GIT_COMMITTER_DATE=_DATE,
    )
    return env


def _git(where: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(where), *args],
        env=_env(),
        check=True,
        capture_output=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


def _repo(where: Path, token: str, branch: str) -> None:
    _git(where, "init", "-q", "-b", "main")
    (where / "rbt-tracked.txt").write_text("rbt base\n", encoding="utf-8")
    _git(where, "add", "rbt-tracked.txt")
    _git(where, "commit", "-q", "-m", f"rbt commit {token}")
    _git(where, "branch", branch)
    _git(where, "branch", EXISTING_BRANCH)
    (where / "rbt-tracked.txt").write_text(f"rbt base\n{token}\n", encoding="utf-8")
    (where / "rbt-staged.txt").write_text(f"{token}\n", encoding="utf-8")
    _git(where, "add", "rbt-staged.txt")


def index_unchanged(before: bytes, path: Path) -> bool:
    """The index at ``path`` has the entries of ``before`` (its stat data may differ): not a write."""
    try:
        with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as fh:
            now = fh.read(1 << 20)
    except OSError:
        return False
    old = index_entries(before)
    return old is not None and old == index_entries(now)


def build_git(trap: Trap) -> None:
    """Make W and the outside directories repositories (raises OSError or CalledProcessError if git cannot)."""
    if shutil.which("git") is None:
        raise OSError("--workspace-kind git needs git on PATH")
    _repo(trap.workspace, trap.marker.token, trap.marker.name)
    for loc in OUTSIDE_DIRS:
        if loc in ("cwd", "home"):
            continue  # the server's own cwd and HOME stay plain directories
        _repo(trap.base / loc, trap.canaries[loc].token, trap.entries[loc])
