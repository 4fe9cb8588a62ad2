"""What a tree tool walks: the roots it starts from (each tree once), the filter its arguments build, and the note
for what it could not enter.

Why a module of its own: ``directory_tree`` (:mod:`.listing`) and ``search_files``, ``grep`` and ``find_projects``
(:mod:`.searching`) start from the same places and say the same things when there is nothing to walk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rootbound.confine.boundary import LSTAT, EffectiveRoot
from rootbound.core.errors import RootsError
from rootbound.search import ignore_rules
from rootbound.search.ignore_rules import PathFilter
from rootbound.search.rooted_fs import RootedFS
from rootbound.workspace.tools.calls import (
    ToolError,
    bool_arg,
    globs_arg,
)


def path_filter(args: Mapping[str, Any], *, include: bool = False) -> PathFilter:
    return PathFilter(
        exclude=globs_arg(args, "exclude"),
        include=globs_arg(args, "include") if include else (),
        gitignore=not bool_arg(args, "include_ignored"),
    )


def filter_key(args: Mapping[str, Any], *, include: bool = False) -> tuple[object, ...]:
    """What :func:`path_filter` was built from: the index keeps one walk result per start and key."""
    included = globs_arg(args, "include") if include else ()
    return ignore_rules.filter_key(globs_arg(args, "exclude"), included, not bool_arg(args, "include_ignored"))


def start_points(fs: RootedFS, path: str | None, context: Mapping[str, Any]) -> list[object]:
    """The search starting points: the named directory, or the directory roots whose trees make up the union of
    all of them, each once (:func:`tree_roots`)."""
    if path is not None:
        return [path]
    return [root.path for root in searched_roots(fs, context)]


NO_DIRECTORY_ROOT: Final = (
    "nothing to search: every root is a single file, not a directory. Fix: read the files with read_file "
    "(list_roots shows them), or have the client declare a directory as a root"
)


def searched_roots(fs: RootedFS, context: Mapping[str, Any]) -> list[EffectiveRoot]:
    """:func:`tree_roots`, refusing (a tool error, never an empty success) when there is none to walk: with no
    roots a search answering "(no matches)" reads as "no such files" (issue 26 #2)."""
    if not len(fs.boundary):
        raise ToolError(no_roots(context))
    roots = tree_roots(fs)
    if not roots:
        raise ToolError(NO_DIRECTORY_ROOT)
    return roots


def tree_roots(fs: RootedFS) -> list[EffectiveRoot]:
    """The directory roots to walk so that every file of every root is visited once (issue 16 #3).

    A root held twice under two names (a bind mount of another root: the same ``st_dev``/``st_ino``) is walked
    once. A root beneath another is left to that one's walk: its path is opened through the boundary, which
    resolves it from the outermost root lexically containing it, on that root's fd and with its mount policy
    (the walk's own), and only when that open lands on the very directory held for the inner root (same
    ``st_dev``/``st_ino``) is it beneath: never a string prefix alone. Anything unproven is walked on its own.
    """
    boundary = fs.boundary
    kept: list[EffectiveRoot] = []
    seen: set[tuple[int, int]] = set()
    for root in boundary:
        identity = (root.dev, root.ino)
        if root.kind != "dir" or identity in seen:
            continue
        seen.add(identity)
        try:
            with boundary.open(str(root.path), LSTAT, resolver=fs.resolver) as handle:
                outer, st = handle.root, handle.fstat()
        except (RootsError, OSError):
            kept.append(root)  # not provably reachable from another root: its own walk
            continue
        if outer is not root and (outer.dev, outer.ino) != identity and (st.st_dev, st.st_ino) == identity:
            continue  # beneath ``outer``, whose walk reaches it
        kept.append(root)
    return kept


NO_ROOTS_HELP: Final = (
    "no roots: every path is denied. Fix: have the client declare a root (a directory it wants this server to "
    "use), or start the server with one: rootbound serve DIR"
)


NO_ROOTS_FIX: Final = "no roots: every path is denied. Fix: {}"


def no_roots(context: Mapping[str, Any] | None) -> str:
    """ "No roots", with the fix that fits this client's situation (``EmptyRoots`` in
    workspace/effective_roots.py) when the server gave one, else the general one."""
    fix = (context or {}).get("fix")
    return NO_ROOTS_FIX.format(fix) if fix else NO_ROOTS_HELP


class NotEntered:
    """Counts the directories a walk could not enter, for the line that says so (nothing silent)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, path: str) -> None:
        self.count += 1


def not_entered_note(count: int) -> str:
    if not count:
        return ""
    what = "directory" if count == 1 else "directories"
    return f"[not entered: {count} {what} (unreadable, on another file system, or changed while walked)]"


def with_note(text: str, note: str) -> str:
    return f"{text}\n{note}" if note else text
