"""Root intake: client roots and the operator allowlist become held fds, once per snapshot, failing closed.

Why: a root is a claim, not a grant. A client root is canonicalised by name (it is only a claim), then *opened*:
beneath the held fd of the allowlist entry that contains it when there is an allowlist (so the operator's bound is
enforced by the kernel on the object taken in at start, never by re-resolving the entry's name), or from ``/``
when there is none. The allowlist itself is opened by name only where it is first given as paths.

Rules (``docs/security.md``): ``allow=None`` keeps every root but ``/``; a root inside (or equal to) an allowed
entry is kept; one that contains entries is narrowed to the outermost of them; anything else is dropped and
reported. Nested roots are resolved by the outermost root lexically containing a candidate (:class:`RootTrie`).
"""

from __future__ import annotations

import bisect
import errno
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Literal, TypeAlias

from rootbound.confine.candidate import split_path
from rootbound.confine.held_roots import Dropped, EffectiveRoot, HeldRoot
from rootbound.confine.resolvers import (
    DIR_PATH,
    O_CLOEXEC,
    O_DIRECTORY,
    O_NOFOLLOW,
    O_PATH,
    Beneath,
    ResolverKind,
    close_all,
)
from rootbound.core.errors import InvalidPath, InvalidRootURI, RootsError
from rootbound.core.roots import Root, RootLike

__all__ = ["Intake", "RootLike", "RootTrie"]

Kind: TypeAlias = Literal["dir", "file"]


class _Drop(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _canonical(value: RootLike) -> tuple[Root, tuple[str, ...], tuple[str, ...], Kind]:
    """Strict intake of one root by name: ``(Root, given parts, canonical parts, kind)`` or :class:`_Drop`."""
    try:
        root = Root.coerce(value)
    except (InvalidRootURI, InvalidPath):
        raise _Drop("invalid root URI") from None
    if not isinstance(root.path, PurePosixPath):
        raise _Drop("not a local path")
    try:
        canonical = os.path.realpath(str(root.path), strict=True)
        st = os.stat(canonical)
    except FileNotFoundError:
        raise _Drop("does not exist") from None
    except (OSError, RuntimeError, ValueError):
        raise _Drop("cannot be resolved") from None
    if stat.S_ISDIR(st.st_mode):
        kind: Kind = "dir"
    elif stat.S_ISREG(st.st_mode):
        kind = "file"
    else:
        raise _Drop("not a directory or regular file")
    return root, tuple(root.path.parts[1:]), tuple(split_path(canonical)), kind


def _within(inner: tuple[str, ...], outer: tuple[str, ...]) -> bool:
    return inner[: len(outer)] == outer


def _open_failure(exc: BaseException) -> _Drop:
    """Why opening a root failed, as a drop reason (a denial while resolving it means it moved meanwhile)."""
    if isinstance(exc, _Drop):
        return exc
    if isinstance(exc, RootsError):
        return _Drop("changed during intake")
    if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):
        return _Drop("too many open files")
    return _Drop("cannot open")


class Intake:
    """Takes in one roots snapshot. ``fds`` collects every fd opened (the boundary owns and closes them)."""

    def __init__(self, resolver: ResolverKind, fds: list[int]) -> None:
        # Roots are opened beneath allowlist entries with mounts allowed: a mount inside an allowed directory is
        # inside it (as before); operations beneath the root then apply the boundary's own mount policy.
        self._beneath = Beneath(resolver, cross_mounts=True)
        self._fds = fds

    def allowlist(self, entries: Iterable[RootLike], dropped: list[Dropped]) -> list[HeldRoot]:
        """Open allowlist entries given by name (the only place an allowlist is resolved by name)."""
        held: dict[tuple[str, ...], HeldRoot] = {}
        for entry in entries:
            try:
                root, _, parts, kind = _canonical(entry)
                if parts not in held:
                    held[parts] = self._open_by_name(parts, kind, root, narrowed=False)
            except _Drop as drop:
                dropped.append(Dropped(entry, drop.reason))
        return list(held.values())

    def roots(
        self, values: Sequence[RootLike], allow: Sequence[HeldRoot] | None, dropped: list[Dropped]
    ) -> list[HeldRoot]:
        """The effective roots of ``values`` (client roots) within ``allow`` (held allowlist roots, or no allowlist)."""
        anchors = {h.parts: h for h in allow} if allow is not None else None
        anchors_sorted = sorted(anchors) if anchors is not None else []
        # canonical parts -> (kind, source, narrowed, anchor, aliases, original), in effective order, merged.
        chosen: dict[tuple[str, ...], tuple[Kind, Root, bool, HeldRoot | None, list[tuple[str, ...]], object]] = {}
        for value in values:
            try:
                root, given, parts, kind = _canonical(value)
            except _Drop as drop:
                dropped.append(Dropped(value, drop.reason))
                continue
            picks = self._intersect(parts, kind, anchors, anchors_sorted)
            if not picks:
                reason = "filesystem root not allowed" if anchors is None else "not in allowlist"
                dropped.append(Dropped(value, reason))
                continue
            for pick, pick_kind, anchor in picks:
                alias = given + pick[len(parts) :]
                known = chosen.get(pick)
                if known is None:
                    chosen[pick] = (pick_kind, root, pick != parts, anchor, [alias], value)
                else:
                    known[4].append(alias)
        held: list[HeldRoot] = []
        for parts, (kind, root, narrowed, anchor, aliases, source) in chosen.items():
            try:
                if anchor is None:
                    one = self._open_by_name(parts, kind, root, narrowed=narrowed)
                else:
                    one = self._open_beneath(anchor, parts, kind, root, narrowed=narrowed)
            except _Drop as drop:
                dropped.append(Dropped(source, drop.reason))
                continue
            one.aliases = aliases
            held.append(one)
        return held

    @staticmethod
    def _intersect(
        parts: tuple[str, ...],
        kind: Kind,
        anchors: dict[tuple[str, ...], HeldRoot] | None,
        anchors_sorted: list[tuple[str, ...]],
    ) -> list[tuple[tuple[str, ...], Kind, HeldRoot | None]]:
        """What one canonical client root yields: itself (with the entry containing it), the entries inside it, or
        nothing."""
        if anchors is None:
            return [] if not parts else [(parts, kind, None)]
        for depth in range(len(parts) + 1):
            anchor = anchors.get(parts[:depth])
            if anchor is not None and (not anchor.is_file or depth == len(parts)):
                return [(parts, kind, anchor)]
        if kind == "file":
            return []
        picks: list[tuple[tuple[str, ...], Kind, HeldRoot | None]] = []
        index = bisect.bisect_right(anchors_sorted, parts)
        while index < len(anchors_sorted) and _within(anchors_sorted[index], parts):
            inner = anchors_sorted[index]
            if not any(_within(inner, outer) for outer, _, _ in picks):
                anchor = anchors[inner]
                picks.append((inner, anchor.info.kind, anchor))
            index += 1
        return picks

    def _open_by_name(self, parts: tuple[str, ...], kind: Kind, root: Root, *, narrowed: bool) -> HeldRoot:
        """Open and pin one canonical path from ``/``; the kernel's name for what we hold must be that path."""
        text = "/" + "/".join(parts)
        opened: list[int] = []
        try:
            fd = self._beneath.os_open(text, O_PATH | O_NOFOLLOW | O_CLOEXEC | (O_DIRECTORY if kind == "dir" else 0))
            opened.append(fd)
            st = os.fstat(fd)
            expected = stat.S_ISDIR if kind == "dir" else stat.S_ISREG
            name = self._beneath.proc_name(fd)
            if not expected(st.st_mode) or (name if name is not None else os.path.realpath(text)) != text:
                raise _Drop("changed during intake")
            parent_fd = -1
            if kind == "file":
                parent_fd = self._beneath.os_open(os.path.dirname(text), DIR_PATH | O_CLOEXEC)
                opened.append(parent_fd)
                again = os.stat(parts[-1], dir_fd=parent_fd, follow_symlinks=False)
                if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
                    raise _Drop("changed during intake")
        except (OSError, RootsError, _Drop) as exc:
            close_all(opened)
            raise _open_failure(exc) from None
        self._fds.extend(opened)
        info = EffectiveRoot(Path(text), kind, root, narrowed, st.st_dev, st.st_ino)
        return HeldRoot(info, parts, fd, parent_fd, self._beneath.mount_id(fd))

    def _open_beneath(
        self, anchor: HeldRoot, parts: tuple[str, ...], kind: Kind, root: Root, *, narrowed: bool
    ) -> HeldRoot:
        """Open a client root beneath the held allowlist entry ``anchor`` (the kernel keeps it inside).

        The name the root was canonicalised to must be where the open beneath the anchor landed; anything that
        moved meanwhile is dropped, never followed.
        """
        rel = parts[len(anchor.parts) :]
        opened: list[int] = []
        try:
            if not rel:  # the entry itself (or the client root narrowed to it): share the held object
                fd = os.dup(anchor.fd)
                opened.append(fd)
                parent_fd = -1
                if anchor.parent_fd >= 0:
                    parent_fd = os.dup(anchor.parent_fd)
                    opened.append(parent_fd)
                st = os.fstat(fd)
            else:
                if kind == "dir":
                    fd, landed = self._beneath.open_named(anchor, rel, DIR_PATH)
                    opened.append(fd)
                    parent_fd = -1
                else:
                    parent_fd, landed = self._beneath.open_named(anchor, rel[:-1], DIR_PATH)
                    opened.append(parent_fd)
                    landed = (*landed, rel[-1])
                    fd = self._beneath.os_open(rel[-1], O_PATH | O_NOFOLLOW | O_CLOEXEC, parent_fd)
                    opened.append(fd)
                st = os.fstat(fd)
                expected = stat.S_ISDIR if kind == "dir" else stat.S_ISREG
                if landed != rel or not expected(st.st_mode):
                    raise _Drop("changed during intake")
        except (OSError, RootsError, _Drop) as exc:
            close_all(opened)
            raise _open_failure(exc) from None
        self._fds.extend(opened)
        path = Path("/" + "/".join(parts))
        info = EffectiveRoot(path, kind, root, narrowed, st.st_dev, st.st_ino)
        return HeldRoot(info, parts, fd, parent_fd, self._beneath.mount_id(fd))


class _Node:
    __slots__ = ("children", "held")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.held: HeldRoot | None = None


class RootTrie:
    """Maps absolute components to the outermost held root containing them: O(depth), whatever the root count."""

    def __init__(self, held: Sequence[HeldRoot]) -> None:
        self._top = _Node()
        for h in held:
            self._insert(h.parts, h, replace=True)
        for h in held:
            for alias in h.aliases:
                self._insert(alias, h, replace=False)

    def _insert(self, parts: tuple[str, ...], held: HeldRoot, *, replace: bool) -> None:
        node = self._top
        for part in parts:
            node = node.children.setdefault(part, _Node())
        if replace or node.held is None:
            node.held = held

    def locate(self, parts: list[str]) -> tuple[HeldRoot, int] | None:
        """``(held root, index of the first component below it)``, or ``None`` when no root contains ``parts``."""
        node = self._top
        held = node.held
        index = 0
        while held is None:
            if index == len(parts):
                return None
            child = node.children.get(parts[index])
            if child is None:
                return None
            node = child
            index += 1
            held = node.held
        return held, index
