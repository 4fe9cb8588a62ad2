"""Which entries a tree walk skips: ``.git``, the caller's exclude globs, and ``.gitignore`` files like git reads them.

Why: an agent searching a repository wants its sources, not ``node_modules``, build output or ``.git`` objects, and
a cap that fills with vendored files in walk order hides the answer. Matching is ``pathspec``'s ``GitIgnoreSpec``
(git's wildmatch, negations, directory-only and anchored patterns) on the RE2 backend: a ``.gitignore`` is content
from the tree, and a pattern in it must not be able to take exponential time.

Rules nest like git's: each directory's ``.gitignore`` applies to paths below that directory, a deeper file's rules
win over a shallower one's, and within a file the last matching pattern wins (``!`` re-includes). A directory that
is ignored is not entered, so nothing below it can be re-included (git's rule too).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import pathspec

from .errors import InvalidPattern

__all__ = ["MAX_GITIGNORE_BYTES", "MAX_GLOBS", "IgnoreRules", "PathFilter", "name_matcher"]

MAX_GITIGNORE_BYTES: Final = 256 * 1024
"""A ``.gitignore`` is read up to this size; the rest is not applied."""
MAX_GLOBS: Final = 64
MAX_GLOB_LENGTH: Final = 512
MAX_PATTERN_LENGTH: Final = 1024
_MAX_RULES_PER_FILE: Final = 4096
ALWAYS_SKIPPED: Final = frozenset({".git"})

_BACKEND: Final = "re2"


def _spec(lines: Iterable[str]) -> pathspec.GitIgnoreSpec | None:
    kept = [line for line in lines if line.strip() and not line.startswith("#")]
    if not kept:
        return None
    return pathspec.GitIgnoreSpec.from_lines(kept, backend=_BACKEND)


@dataclass(frozen=True)
class IgnoreRules:
    """The ``.gitignore`` rules in force in one directory: ``(base, lead, spec)``, shallowest first.

    ``base`` is the directory's path relative to the walk's start (``""`` or ending in ``/``); ``lead`` is the
    start's path relative to that directory, for a ``.gitignore`` above the start (``""`` for the others).
    """

    chain: tuple[tuple[str, str, pathspec.GitIgnoreSpec], ...] = ()

    def child(self, base: str, gitignore: bytes | None, *, lead: str = "") -> IgnoreRules:
        """The rules below directory ``base``, given the bytes of its ``.gitignore`` (``None``: it has none)."""
        if not gitignore:
            return self
        text = gitignore[:MAX_GITIGNORE_BYTES].decode("utf-8", "replace")
        try:
            spec = _spec(text.splitlines()[:_MAX_RULES_PER_FILE])
        except (ValueError, TypeError):
            return self  # a .gitignore git would reject applies nothing; the walk goes on
        if spec is None:
            return self
        return IgnoreRules((*self.chain, (base, lead, spec)))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` (relative to the walk's start) is ignored: the deepest file with a matching rule decides."""
        for base, lead, spec in reversed(self.chain):
            if not rel.startswith(base):
                continue
            sub = lead + rel[len(base) :]
            result = spec.check_file(sub + "/" if is_dir else sub)
            if result.include is not None:
                return bool(result.include)
        return False


def _globs(globs: Sequence[str], what: str) -> pathspec.GitIgnoreSpec | None:
    if len(globs) > MAX_GLOBS:
        raise InvalidPattern(message=f"at most {MAX_GLOBS} {what} globs")
    for glob in globs:
        if not isinstance(glob, str) or not glob.strip() or len(glob) > MAX_GLOB_LENGTH:
            raise InvalidPattern(message=f"each {what} glob must be 1 to {MAX_GLOB_LENGTH} characters")
        if any(ch < " " or ch == "\x7f" for ch in glob):
            raise InvalidPattern(message=f"{what} globs must not contain control characters")
    if not globs:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(list(globs), backend=_BACKEND)
    except (ValueError, TypeError):
        raise InvalidPattern(message=f"invalid {what} glob (gitignore syntax expected)") from None


class PathFilter:
    """The caller's choices for one walk: ``exclude``/``include`` globs (gitignore syntax), whether ``.gitignore``
    files apply (``gitignore=False`` is "include ignored files"), and whether ``.git`` is skipped (default yes).

    ``include`` selects files only (directories are always entered): ``*.py`` matches at any depth,
    ``src/**/*.ts`` relative to the walk's start.
    """

    __slots__ = ("_exclude", "_include", "gitignore", "skip_git")

    def __init__(
        self,
        *,
        exclude: Sequence[str] = (),
        include: Sequence[str] = (),
        gitignore: bool = True,
        skip_git: bool = True,
    ) -> None:
        self._exclude = _globs(exclude, "exclude")
        self._include = _globs(include, "include")
        self.gitignore = gitignore
        self.skip_git = skip_git

    @property
    def plain_files(self) -> bool:
        """No exclude or include globs: only .gitignore rules (if any are in force) can skip a file."""
        return self._exclude is None and self._include is None

    @property
    def trivial(self) -> bool:
        """Nothing to check: the walk can skip the per-entry work (a plain listing)."""
        return self._exclude is None and self._include is None and not self.gitignore and not self.skip_git

    def skip_dir(self, rules: IgnoreRules, rel: str, name: str) -> bool:
        """Whether the directory at ``rel`` is neither listed nor entered."""
        if self.skip_git and name in ALWAYS_SKIPPED:
            return True
        if not rules.chain and self._exclude is None:
            return False
        if self._exclude is not None and self._exclude.check_file(rel + "/").include:
            return True
        return self.gitignore and rules.ignored(rel, True)

    def skip_file(self, rules: IgnoreRules, rel: str, name: str) -> bool:
        """Whether the file (or link, or other non-directory) at ``rel`` is left out."""
        if self._exclude is not None and self._exclude.check_file(rel).include:
            return True
        if self.gitignore and rules.ignored(rel, False):
            return True
        return self._include is not None and not self._include.check_file(rel).include


def name_matcher(pattern: str) -> Callable[[str, str, bool], bool]:
    """A predicate ``(rel, name, is_dir)`` for a search glob: without ``/`` it matches the name at any depth
    (``find -name``); with ``/`` the path relative to the search start (``src/**/*.py``), gitignore syntax.

    ``*.ext``, ``prefix*`` and plain names skip the matcher (the common searches, on every entry of a tree).
    """
    if (
        not isinstance(pattern, str)
        or not pattern
        or len(pattern) > MAX_PATTERN_LENGTH
        or pattern.startswith(("!", "/"))
        or any(ch < " " or ch == "\x7f" for ch in pattern)
        or ".." in pattern.split("/")
    ):
        raise InvalidPattern(message="the pattern must be a relative glob (no leading '/' or '!', no '..')")
    if "/" not in pattern:
        body = pattern[1:] if pattern.startswith("*") else pattern[:-1] if pattern.endswith("*") else pattern
        if not any(ch in body for ch in "*?[]\\"):
            if pattern == "*":
                return lambda rel, name, is_dir: True
            if pattern.startswith("*"):
                return lambda rel, name, is_dir: name.endswith(body)
            if pattern.endswith("*"):
                return lambda rel, name, is_dir: name.startswith(body)
            return lambda rel, name, is_dir: name == body
    try:
        spec = pathspec.GitIgnoreSpec.from_lines([pattern], backend=_BACKEND)
    except (ValueError, TypeError):
        raise InvalidPattern(message="invalid glob") from None
    check = spec.check_file
    return lambda rel, name, is_dir: bool(check(rel + "/" if is_dir else rel).include)
