"""Which entries a tree walk skips: ``.git``, the caller's exclude globs, and the ignore files git and ripgrep read.

Why: an agent searching a repository wants its sources, not ``node_modules``, build output or ``.git`` objects, and
a cap that fills with vendored files in walk order hides the answer. Matching is ``pathspec``'s ``GitIgnoreSpec``
(git's wildmatch, negations, directory-only and anchored patterns) on the RE2 backend: an ignore file is content
from the tree, and a pattern in it must not be able to take exponential time.

The ignore files, all in ``.gitignore`` syntax (:data:`IGNORE_FILES`): a directory's ``.gitignore``, ``.ignore`` and
``.rgignore`` (ripgrep's), and a repository's ``.git/info/exclude`` (rooted at the directory holding ``.git``).
Rules nest like git's and ripgrep's: each file applies to paths below its directory, a deeper file's rules win over
a shallower one's of the same kind, and within a file the last matching pattern wins (``!`` re-includes); a nested
repository (a directory holding ``.git``) starts afresh for ``.gitignore`` and ``info/exclude``. Across
kinds ripgrep's order decides: a match in any ``.rgignore`` wins over one in any ``.ignore``, over ``.gitignore``,
over ``info/exclude`` (so a ``!`` in ``.ignore`` re-includes what a ``.gitignore`` ignores, and not the other way
round). A directory that is ignored is not entered, so nothing below it can be re-included (git's rule too).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import pathspec

from rootbound.core.errors import InvalidPattern
from rootbound.search.glob_match import bracket_error

__all__ = [
    "EXCLUDE",
    "IGNORE_FILES",
    "MAX_GLOBS",
    "MAX_IGNORE_FILE_BYTES",
    "IgnoreRules",
    "PathFilter",
    "name_matcher",
]

MAX_IGNORE_FILE_BYTES: Final = 256 * 1024
"""An ignore file is read up to this size; the rest is not applied."""
MAX_GLOBS: Final = 64
MAX_GLOB_LENGTH: Final = 512
MAX_PATTERN_LENGTH: Final = 1024
_MAX_RULES_PER_FILE: Final = 4096
ALWAYS_SKIPPED: Final = frozenset({".git"})

GITIGNORE: Final = ".gitignore"
EXCLUDE: Final = "info/exclude"
"""The kind of a repository's ``.git/info/exclude``: git's lowest-precedence per-repository file."""
IGNORE_FILES: Final = (".rgignore", ".ignore", GITIGNORE)
"""The per-directory ignore files, highest precedence first (ripgrep's order)."""
_KINDS: Final = (*IGNORE_FILES, EXCLUDE)

_BACKEND: Final = "re2"

_Rule = tuple[str, str, pathspec.GitIgnoreSpec]
"""``(base, lead, spec)``: see :class:`IgnoreRules`."""


def _spec(lines: Iterable[str]) -> pathspec.GitIgnoreSpec | None:
    kept = [line for line in lines if line.strip() and not line.startswith("#")]
    if not kept:
        return None
    return pathspec.GitIgnoreSpec.from_lines(kept, backend=_BACKEND)


_BAD_GLOB: Final = (ValueError, TypeError, re.error)
"""What compiling a glob can raise: ``re.error`` is not a ``ValueError`` (``[z-a]`` raises it, issue 24 #5)."""


def _parse(data: bytes | None) -> pathspec.GitIgnoreSpec | None:
    """The rules of one ignore file's bytes (at most :data:`MAX_IGNORE_FILE_BYTES` of them are applied); a line
    that does not compile (``[z-a]``) is left out, as git leaves out a pattern it cannot match, and the rest apply."""
    if not data:
        return None
    lines = data[:MAX_IGNORE_FILE_BYTES].decode("utf-8", "replace").splitlines()[:_MAX_RULES_PER_FILE]
    try:
        return _spec(lines)
    except _BAD_GLOB:
        pass
    good = []
    for line in lines:
        try:
            _spec([line])
        except _BAD_GLOB:
            continue
        good.append(line)
    try:
        return _spec(good)
    except _BAD_GLOB:
        return None  # the walk goes on


@dataclass(frozen=True)
class IgnoreRules:
    """The ignore rules in force in one directory: per kind (:data:`IGNORE_FILES`, then :data:`EXCLUDE`), the
    ``(base, lead, spec)`` of each file, shallowest first.

    ``base`` is the file's directory relative to the walk's start (``""`` or ending in ``/``); ``lead`` is the
    start's path relative to that directory, for a file above the start (``""`` for the others). ``order`` is every
    rule in the order :meth:`ignored` asks them (the first match decides), kept ready: it runs per entry.
    """

    chains: tuple[tuple[_Rule, ...], ...] = ((),) * len(_KINDS)
    order: tuple[_Rule, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.order)

    def _with(self, *changes: tuple[str, tuple[_Rule, ...]]) -> IgnoreRules:
        """These rules with the chain of each ``(kind, chain)`` replaced."""
        chains = list(self.chains)
        for kind, chain in changes:
            chains[_KINDS.index(kind)] = chain
        return IgnoreRules(tuple(chains), tuple(rule for each in chains for rule in reversed(each)))

    def child(self, base: str, data: bytes | None, *, lead: str = "", kind: str = GITIGNORE) -> IgnoreRules:
        """The rules below directory ``base``, given the bytes of its ignore file of ``kind`` (``None``: it has
        none); for :data:`EXCLUDE`, prefer :meth:`repository`."""
        spec = _parse(data)
        if spec is None:
            return self
        return self._with((kind, (*self.chains[_KINDS.index(kind)], (base, lead, spec))))

    def repository(self, base: str, exclude: bytes | None, *, lead: str = "") -> IgnoreRules:
        """The rules below ``base``, the top of a git repository (it holds ``.git``), given its ``info/exclude``
        (``None``: none, or not read). An enclosing directory's ``.gitignore`` files and ``info/exclude`` do not
        reach into a nested repository (git's and ripgrep's rule); ``.ignore`` and ``.rgignore`` files do."""
        spec = _parse(exclude)
        chain = () if spec is None else ((base, lead, spec),)
        if not chain and not self.chains[-1] and not self.chains[-2]:
            return self
        return self._with((EXCLUDE, chain), (GITIGNORE, ()))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` (relative to the walk's start) is ignored: the highest-precedence kind with a matching
        rule decides, and within a kind the deepest file with one."""
        for base, lead, spec in self.order:
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
        problem = bracket_error(glob, escapes=True)
        if problem is not None:
            raise InvalidPattern(message=f"{what} glob: {problem}")
    if not globs:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(list(globs), backend=_BACKEND)
    except _BAD_GLOB:
        raise InvalidPattern(message=f"invalid {what} glob (gitignore syntax expected)") from None


def filter_key(exclude: Sequence[str], include: Sequence[str], gitignore: bool) -> tuple[object, ...]:
    """What a :class:`PathFilter` was built from, as the index's walk cache names it: one recorded walk per start
    and key (the tools' filters and the index's own walks ahead of the first query use this one spelling)."""
    return (tuple(exclude), tuple(include), gitignore)


class PathFilter:
    """The caller's choices for one walk: ``exclude``/``include`` globs (gitignore syntax), whether the ignore files
    apply (``gitignore=False`` is "include ignored files": no ignore file of any kind is read), and whether ``.git``
    is skipped (default yes).

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
        """No exclude or include globs: only ignore files' rules (if any are in force) can skip a file."""
        return self._exclude is None and self._include is None

    @property
    def trivial(self) -> bool:
        """Nothing to check: the walk can skip the per-entry work (a plain listing)."""
        return self._exclude is None and self._include is None and not self.gitignore and not self.skip_git

    def skip_dir(self, rules: IgnoreRules, rel: str, name: str) -> bool:
        """Whether the directory at ``rel`` is neither listed nor entered."""
        if self.skip_git and name in ALWAYS_SKIPPED:
            return True
        if not rules and self._exclude is None:
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
    problem = bracket_error(pattern, escapes=True)
    if problem is not None:
        raise InvalidPattern(message=problem)
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
    except _BAD_GLOB:
        raise InvalidPattern(message="invalid glob: gitignore syntax expected, as in *.py or src/**/*.ts") from None
    check = spec.check_file
    return lambda rel, name, is_dir: bool(check(rel + "/" if is_dir else rel).include)
