"""Boundary: the effective roots (client roots ∩ operator allowlist), held open, and fail-closed resolution.

Why: a root is a claim, not a grant, and every lexical guard is escapable. A :class:`Boundary` canonicalises its
roots once, holds an ``O_PATH`` fd on each, and resolves a candidate *beneath that fd*: with ``openat2`` and
``RESOLVE_BENEATH`` where the kernel has it, else with a component walk that opens every component
``O_NOFOLLOW`` and follows in-root symlinks itself. A candidate is never normalised as a string, never resolved
against the process CWD, and every error is a denial.

Rules (also in ``docs/security.md``):

* **Intersection.** ``allow=None`` means "no allowlist": client roots are used as given, except ``/``. Otherwise
  a client root inside (or equal to) an allowed entry is kept; one that contains allowed entries is narrowed to
  them; anything else is dropped and reported in :attr:`Boundary.dropped`. ``allow=[]`` allows nothing.
* **Nesting.** Exact duplicates (after canonicalising) are merged. A root nested in another stays listed, but
  containment uses the *outermost* root that lexically contains the candidate: the union of the roots is what is
  allowed, so nesting never hides anything and symlinks are followed within that outermost root.
* **Relative candidates** resolve against the *first* effective root, never the CWD.
* **Absolute candidates** map to a root by path components (a trie walk: O(depth), independent of the number of
  roots), then resolve beneath that root's fd. A symlink from one root into another root is denied.
* The spelling a client used for a root (``/srv/link`` when it canonicalises to ``/data/work``) is accepted as an
  alias for the held root; re-pointing the link later does not move the root.
"""

from __future__ import annotations

import bisect
import errno
import os
import re
import stat
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath
from typing import Final, Literal, NamedTuple, TypeAlias

from . import _openat2 as _o2
from .errors import (
    AccessDenied,
    CrossesMount,
    DanglingSymlink,
    FileOperationFailed,
    InvalidPath,
    InvalidRootURI,
    IsADirectory,
    NotADirectory,
    OutsideRoots,
    PathExists,
    PathNotFound,
    RootChanged,
    RootsError,
    RootsUnavailable,
    SymlinkEscape,
    SymlinkLoop,
    TooLarge,
)
from .roots import Root, RootSet
from .uri import MAX_COMPONENT_BYTES, path_to_uri, uri_to_path

__all__ = ["MAX_PATH_BYTES", "MAX_SYMLINK_HOPS", "Boundary", "Dropped", "EffectiveRoot", "Resolver", "RootLike"]

RootLike: TypeAlias = "Root | PurePath | str"
Resolver: TypeAlias = Literal["auto", "openat2", "walk"]

MAX_PATH_BYTES: Final = 4096
MAX_SYMLINK_HOPS: Final = 40  # the kernel's MAXSYMLINKS, so both resolvers agree on chains

_O_PATH: Final = getattr(os, "O_PATH", os.O_RDONLY)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_DIR_PATH: Final = _O_PATH | _O_DIRECTORY
_DIR_WALK: Final = _DIR_PATH | _O_NOFOLLOW | _O_CLOEXEC
_NOOP: Final = frozenset(("", "."))
_BAD_CHARS: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\\]")
_URI_LIKE: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_LINK_ERRNOS: Final = frozenset((errno.ELOOP, errno.EMLINK, errno.ENOTDIR))

_ERRNO_ERRORS: Final[dict[int, type[RootsError]]] = {
    errno.ENOENT: PathNotFound,
    errno.ENOTDIR: NotADirectory,
    errno.EISDIR: IsADirectory,
    errno.EEXIST: PathExists,
    errno.ENOTEMPTY: PathExists,
    errno.ELOOP: SymlinkLoop,
    errno.EMLINK: SymlinkLoop,
    errno.EACCES: AccessDenied,
    errno.EPERM: AccessDenied,
    errno.EROFS: AccessDenied,
    errno.EFBIG: TooLarge,
}


def translate_error(exc: BaseException) -> RootsError:
    """The denial for an exception raised while resolving or operating: fixed reason, never the OS message."""
    if isinstance(exc, RootsError):
        return exc
    if isinstance(exc, OSError):
        if exc.errno == errno.EXDEV:
            return OutsideRoots("outside roots")
        if exc.errno == errno.ENAMETOOLONG:
            return InvalidPath("path too long")
        kind = _ERRNO_ERRORS.get(exc.errno or 0, FileOperationFailed)
        return kind()
    if isinstance(exc, UnicodeError):
        return InvalidPath("not valid UTF-8")
    if isinstance(exc, ValueError):
        return InvalidPath("control character")
    return FileOperationFailed()


class Dropped(NamedTuple):
    """A root (or allowlist entry) that did not make it into the boundary, and why (a fixed string)."""

    original: object
    reason: str


@dataclass(frozen=True)
class EffectiveRoot:
    """One root of the boundary: its canonical path and the identity of the object held open for it."""

    path: Path
    kind: Literal["dir", "file"]
    source: Root
    narrowed: bool
    dev: int
    ino: int

    @property
    def uri(self) -> str:
        return path_to_uri(self.path)

    @property
    def name(self) -> str | None:
        """The client's name for the root (``None`` when the root was narrowed to an allowlist entry)."""
        return None if self.narrowed else self.source.name


class _HeldRoot:
    """Internal: the fds and identity of one effective root."""

    __slots__ = ("aliases", "fd", "info", "is_file", "mnt", "name", "parent_fd", "parts", "path_str", "prefix")

    def __init__(self, info: EffectiveRoot, parts: tuple[str, ...], fd: int, parent_fd: int, mnt: int | None) -> None:
        self.aliases: list[tuple[str, ...]] = []
        self.info = info
        self.parts = parts
        self.path_str = str(info.path)
        self.prefix = "/" if not parts else self.path_str + "/"
        self.fd = fd
        self.parent_fd = parent_fd
        self.is_file = info.kind == "file"
        self.name = parts[-1] if parts else ""
        self.mnt = mnt


class _Node:
    __slots__ = ("children", "held")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.held: _HeldRoot | None = None


class _Drop(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _split(text: str) -> list[str]:
    parts = text.split("/")
    if parts[0] == "":
        del parts[0]
    if "" in parts or "." in parts:
        return [part for part in parts if part not in _NOOP]
    return parts


def _parse_candidate(candidate: object) -> tuple[bool, list[str]]:
    """``(absolute, components)`` of a candidate, or a denial. No decoding of plain paths, no ``~``, no normpath."""
    if isinstance(candidate, str):
        text = candidate
        first = text[:1]
        if (first == "f" or first == "F") and text[:5].lower() == "file:":
            path = uri_to_path(text)
            if not isinstance(path, PurePosixPath):
                raise InvalidPath("not a local path")
            return True, list(path.parts[1:])
    elif isinstance(candidate, PurePath):
        if isinstance(candidate, PureWindowsPath):
            raise InvalidPath("not a local path")
        text = str(candidate)
    else:
        raise InvalidPath("not a path")
    if not text:
        raise InvalidPath("empty path")
    size = len(text)
    if size > MAX_PATH_BYTES:
        raise InvalidPath("path too long")
    if text.isascii() and text.isprintable() and "\\" not in text:
        pass  # the common case: printable ASCII has no control characters and one byte per character
    elif _BAD_CHARS.search(text) is not None:
        raise InvalidPath("backslash" if "\\" in text else "control character")
    else:
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidPath("not valid UTF-8") from None
        if size > MAX_PATH_BYTES:
            raise InvalidPath("path too long")
    if "://" in text and _URI_LIKE.match(text) is not None:
        raise InvalidPath("not a file URI")
    parts = _split(text)
    if size > MAX_COMPONENT_BYTES:
        for part in parts:
            if len(part) > MAX_COMPONENT_BYTES // 4 and len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
                raise InvalidPath("segment too long")
    return text[0] == "/", parts


def _canonical(value: RootLike) -> tuple[Root, tuple[str, ...], tuple[str, ...], Literal["dir", "file"]]:
    """Strict intake of one root: ``(Root, given parts, canonical parts, kind)`` or :class:`_Drop`."""
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
        kind: Literal["dir", "file"] = "dir"
    elif stat.S_ISREG(st.st_mode):
        kind = "file"
    else:
        raise _Drop("not a directory or regular file")
    return root, tuple(root.path.parts[1:]), tuple(_split(canonical)), kind


def _within(inner: tuple[str, ...], outer: tuple[str, ...]) -> bool:
    return inner[: len(outer)] == outer


def _close_all(fds: list[int]) -> None:
    while fds:
        fd = fds.pop()
        try:  # noqa: SIM105 - on the hot path; contextlib.suppress costs more than the close
            os.close(fd)
        except OSError:
            pass


def _proc_name(fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


class Boundary:
    """The effective roots of one roots snapshot, held open; resolves candidates beneath them, failing closed.

    ``roots`` and ``allow`` take :class:`~rootbound.Root` objects, ``file:`` URIs or paths. ``cross_mounts=False``
    (the default) refuses any path that crosses into another mount below a root. ``resolver`` picks the kernel
    path: ``"openat2"``, ``"walk"`` (the portable component walk) or ``"auto"`` (openat2 when the kernel has it).
    Use as a context manager, or call :meth:`close`, to release the fds (a finaliser also does).
    """

    def __init__(
        self,
        roots: Iterable[RootLike],
        *,
        allow: Iterable[RootLike] | None = None,
        cross_mounts: bool = False,
        resolver: Resolver = "auto",
    ) -> None:
        if os.name != "posix":
            raise RootsUnavailable("platform not supported")
        if resolver not in ("auto", "openat2", "walk"):
            raise ValueError("resolver must be 'auto', 'openat2' or 'walk'")
        if resolver == "openat2" and not _o2.available():
            raise RootsUnavailable("openat2 not available")
        self.resolver: Literal["openat2", "walk"] = (
            "openat2" if resolver == "openat2" or (resolver == "auto" and _o2.available()) else "walk"
        )
        self.cross_mounts = cross_mounts
        self.version: int | None = roots.version if isinstance(roots, RootSet) else None
        self._resolve_flags = (
            _o2.RESOLVE_BENEATH | _o2.RESOLVE_NO_MAGICLINKS | (0 if cross_mounts else _o2.RESOLVE_NO_XDEV)
        )
        self._child_flags = self._resolve_flags | _o2.RESOLVE_NO_SYMLINKS
        self._fds: list[int] = []
        self._finalizer = weakref.finalize(self, _close_all, self._fds)
        self._inflight: list[None] = []  # one item per operation using the root fds (list ops are atomic)
        self._closing = False
        dropped: list[Dropped] = []
        allow_dropped: list[Dropped] = []
        try:
            self._build(list(roots), None if allow is None else list(allow), dropped, allow_dropped)
        except BaseException:
            self._finalizer()
            raise
        self.dropped: tuple[Dropped, ...] = tuple(dropped)
        self.allow_dropped: tuple[Dropped, ...] = tuple(allow_dropped)

    # -- construction ------------------------------------------------------------------------------------------

    def _build(
        self, roots: list[RootLike], allow: list[RootLike] | None, dropped: list[Dropped], allow_dropped: list[Dropped]
    ) -> None:
        allowed: dict[tuple[str, ...], Literal["dir", "file"]] | None = None
        if allow is not None:
            allowed = {}
            for entry in allow:
                try:
                    _, _, parts, kind = _canonical(entry)
                except _Drop as drop:
                    allow_dropped.append(Dropped(entry, drop.reason))
                    continue
                allowed.setdefault(parts, kind)
        allowed_sorted = sorted(allowed) if allowed is not None else []

        # (canonical parts, kind, source, narrowed, alias parts) in effective order, exact duplicates merged.
        chosen: dict[tuple[str, ...], tuple[Literal["dir", "file"], Root, bool, list[tuple[str, ...]], object]] = {}
        for value in roots:
            try:
                root, given, parts, kind = _canonical(value)
            except _Drop as drop:
                dropped.append(Dropped(value, drop.reason))
                continue
            picks = self._intersect(parts, kind, allowed, allowed_sorted)
            if not picks:
                reason = "filesystem root not allowed" if allowed is None else "not in allowlist"
                dropped.append(Dropped(value, reason))
                continue
            for pick, pick_kind in picks:
                alias = given + pick[len(parts) :]
                known = chosen.get(pick)
                if known is None:
                    chosen[pick] = (pick_kind, root, pick != parts, [alias], value)
                else:
                    known[3].append(alias)

        held: list[_HeldRoot] = []
        for parts, (kind, root, narrowed, aliases, source) in chosen.items():
            try:
                held.append(self._open_root(parts, kind, root, narrowed))
            except _Drop as drop:
                dropped.append(Dropped(source, drop.reason))
                continue
            held[-1].aliases = aliases
        self._held: tuple[_HeldRoot, ...] = tuple(held)
        self.roots: tuple[EffectiveRoot, ...] = tuple(h.info for h in held)
        self._trie = _Node()
        for h in held:
            self._insert(h.parts, h, replace=True)
        for h in held:
            for alias in h.aliases:
                self._insert(alias, h, replace=False)

    @staticmethod
    def _intersect(
        parts: tuple[str, ...],
        kind: Literal["dir", "file"],
        allowed: dict[tuple[str, ...], Literal["dir", "file"]] | None,
        allowed_sorted: list[tuple[str, ...]],
    ) -> list[tuple[tuple[str, ...], Literal["dir", "file"]]]:
        """The effective roots one canonical client root yields: itself, the allowed entries inside it, or none."""
        if allowed is None:
            return [] if not parts else [(parts, kind)]
        for depth in range(len(parts) + 1):
            allowed_kind = allowed.get(parts[:depth])
            if allowed_kind == "dir" or (allowed_kind == "file" and depth == len(parts)):
                return [(parts, kind)]
        if kind == "file":
            return []
        picks: list[tuple[tuple[str, ...], Literal["dir", "file"]]] = []
        index = bisect.bisect_right(allowed_sorted, parts)
        while index < len(allowed_sorted) and _within(allowed_sorted[index], parts):
            inner = allowed_sorted[index]
            if not any(_within(inner, outer) for outer, _ in picks):
                picks.append((inner, allowed[inner]))
            index += 1
        return picks

    def _open_root(self, parts: tuple[str, ...], kind: Literal["dir", "file"], root: Root, narrowed: bool) -> _HeldRoot:
        """Open and pin one canonical root; the kernel's name for what we hold must be the canonical path."""
        text = "/" + "/".join(parts)
        opened: list[int] = []
        try:
            flags = _O_PATH | _O_NOFOLLOW | _O_CLOEXEC | (_O_DIRECTORY if kind == "dir" else 0)
            fd = os.open(text, flags)
            opened.append(fd)
            st = os.fstat(fd)
            expected = stat.S_ISDIR if kind == "dir" else stat.S_ISREG
            name = _proc_name(fd)
            if not expected(st.st_mode) or (name if name is not None else os.path.realpath(text)) != text:
                raise _Drop("changed during intake")
            parent_fd = -1
            if kind == "file":
                parent_fd = os.open(os.path.dirname(text), _DIR_PATH | _O_CLOEXEC)
                opened.append(parent_fd)
                again = os.stat(parts[-1], dir_fd=parent_fd, follow_symlinks=False)
                if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
                    raise _Drop("changed during intake")
        except OSError as exc:
            _close_all(opened)
            raise _Drop("too many open files" if exc.errno in (errno.EMFILE, errno.ENFILE) else "cannot open") from None
        except _Drop:
            _close_all(opened)
            raise
        self._fds.extend(opened)
        info = EffectiveRoot(Path(text), kind, root, narrowed, st.st_dev, st.st_ino)
        return _HeldRoot(info, parts, fd, parent_fd, _o2.mount_id(fd))

    def _insert(self, parts: tuple[str, ...], held: _HeldRoot, *, replace: bool) -> None:
        node = self._trie
        for part in parts:
            node = node.children.setdefault(part, _Node())
        if replace or node.held is None:
            node.held = held

    # -- lifetime ----------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Release the root fds (deferred until in-flight operations finish). Later operations are refused.

        An fd number closed under a running operation could be reused by an unrelated open and resolve beneath
        the wrong directory, so closing waits for the last in-flight operation (which then closes).
        """
        self._closing = True
        if not self._inflight:
            self._finalizer()

    @property
    def closed(self) -> bool:
        return self._closing

    def __enter__(self) -> Boundary:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _acquire(self) -> None:
        # Register first, then look at the flag; close() sets the flag first, then looks at the register. Either
        # order of interleaving leaves the fds open for an operation that proceeds.
        self._inflight.append(None)
        if self._closing:
            self._release()
            raise RootsUnavailable("boundary closed")

    def _release(self) -> None:
        self._inflight.pop()
        if self._closing and not self._inflight:
            self._finalizer()  # idempotent: only the first call closes

    # -- public queries ----------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.roots)

    def __bool__(self) -> bool:
        return bool(self.roots)

    def __iter__(self) -> Iterator[EffectiveRoot]:
        return iter(self.roots)

    def __repr__(self) -> str:
        return f"Boundary({len(self.roots)} roots, {len(self.dropped)} dropped, resolver={self.resolver!r})"

    def __contains__(self, candidate: object) -> bool:
        return self.contains(candidate)

    def resolve(self, candidate: object, *, must_exist: bool = True) -> Path:
        """The canonical path of ``candidate`` inside the boundary, or a :class:`~rootbound.RootsError` denial.

        With ``must_exist=False`` the final component may be absent (its parent must exist); a dangling symlink
        there is still refused.
        """
        self._acquire()
        try:
            held, rel = self._locate(candidate)
            try:
                fd, parts = self._open_parts(held, rel, _O_PATH, mode=self.resolver)
            except PathNotFound:
                if must_exist or not rel:
                    raise
                return self._resolve_new(held, rel)
            os.close(fd)
            return self._display(held, parts)
        finally:
            self._release()

    def contains(self, candidate: object, *, must_exist: bool = True) -> bool:
        """Whether :meth:`resolve` accepts ``candidate``. Never raises."""
        try:
            self.resolve(candidate, must_exist=must_exist)
        except Exception:
            return False
        return True

    def verify(self) -> tuple[EffectiveRoot, ...]:
        """Roots whose canonical path no longer names the held object (deleted, replaced or moved).

        Operations never depend on this: they act on the held fds, so a replaced path cannot redirect them. This
        is for an operator or a roots refresh that wants to notice.
        """
        stale: list[EffectiveRoot] = []
        for held in self._held:
            try:
                st = os.stat(held.path_str, follow_symlinks=False)
            except OSError:
                stale.append(held.info)
                continue
            if (st.st_dev, st.st_ino) != (held.info.dev, held.info.ino):
                stale.append(held.info)
        return tuple(stale)

    # -- internals shared with RootedFS ------------------------------------------------------------------------

    def _locate(self, candidate: object) -> tuple[_HeldRoot, tuple[str, ...]]:
        """Map a candidate to ``(held root, components below it)`` lexically; nothing is resolved yet."""
        absolute, parts = _parse_candidate(candidate)
        if not absolute:
            if not self._held:
                raise OutsideRoots("outside roots")
            parts = [*self._held[0].parts, *parts]
        node = self._trie
        held = node.held
        index = 0
        while held is None:
            if index == len(parts):
                raise OutsideRoots("outside roots")
            child = node.children.get(parts[index])
            if child is None:
                raise OutsideRoots("outside roots")
            node = child
            index += 1
            held = node.held
        return held, tuple(parts[index:])

    def _display(self, held: _HeldRoot, parts: tuple[str, ...] | list[str]) -> Path:
        if not parts:
            return held.info.path
        return Path(held.prefix + "/".join(parts))

    def _open(
        self, held: _HeldRoot, rel: tuple[str, ...], flags: int, *, follow: bool = True, mode: str = "openat2"
    ) -> int:
        """An fd for ``rel`` beneath ``held`` opened with ``flags``; every failure is a :class:`RootsError`."""
        if held.is_file:
            return self._open_file_root(held, rel, flags, follow)
        if mode == "openat2":
            path = "/".join(rel).encode("utf-8", "surrogateescape") if rel else b"."
            try:
                return _o2.openat2(
                    held.fd, path, flags | _O_CLOEXEC | (0 if follow else _O_NOFOLLOW), self._resolve_flags
                )
            except OSError as exc:
                if exc.errno == errno.ENOSYS:
                    return self._walk(held, rel, flags, follow, assisted=False)[0]
                if exc.errno != errno.EXDEV:
                    raise translate_error(exc) from None
            except ValueError:
                raise InvalidPath("control character") from None
            # EXDEV: an escape, a mount crossing, or an absolute symlink whose target is inside the root (which
            # RESOLVE_BENEATH refuses wholesale). The kernel-assisted walk tells them apart.
            return self._walk(held, rel, flags, follow, assisted=True)[0]
        return self._walk(held, rel, flags, follow, assisted=False)[0]

    def _open_parts(
        self, held: _HeldRoot, rel: tuple[str, ...], flags: int, *, follow: bool = True, mode: str = "openat2"
    ) -> tuple[int, tuple[str, ...]]:
        """Like :meth:`_open`, plus the canonical components of what was opened (for display paths).

        The display path is the root's canonical path plus these components, so a root that was moved, deleted or
        replaced since intake is refused here (:class:`RootChanged`): the path would name something else.
        """
        if held.is_file:
            return self._open_file_root(held, rel, flags, follow), ()
        if mode == "openat2":
            fd = self._open(held, rel, flags, follow=follow, mode=mode)
            name = _proc_name(fd)
            if name is not None:
                try:
                    return fd, self._under(held, name, fd)
                except BaseException:
                    os.close(fd)
                    raise
            os.close(fd)  # no /proc: the walk knows the components it took
        result = self._walk(held, rel, flags, follow, assisted=mode == "openat2")
        try:
            self._check_root_path(held)
        except BaseException:
            os.close(result[0])
            raise
        return result

    def _check_root_path(self, held: _HeldRoot) -> None:
        try:
            st = os.stat(held.path_str, follow_symlinks=False)
        except OSError:
            raise RootChanged() from None
        if (st.st_dev, st.st_ino) != (held.info.dev, held.info.ino):
            raise RootChanged()

    def _under(self, held: _HeldRoot, name: str, fd: int) -> tuple[str, ...]:
        """Components of the kernel's name ``name`` below the root, or a denial if it is not below it."""
        if name.endswith(" (deleted)"):
            if os.fstat(held.fd).st_nlink == 0:
                raise RootChanged()
            if os.fstat(fd).st_nlink == 0:
                raise PathNotFound()
        if not held.parts:
            return tuple(_split(name))
        if name == held.path_str:
            return ()
        if name.startswith(held.prefix):
            return tuple(name[len(held.prefix) :].split("/"))
        raise RootChanged()

    def _open_file_root(self, held: _HeldRoot, rel: tuple[str, ...], flags: int, follow: bool) -> int:
        """A file root matches only itself: reopen it by name in its parent, and check it is the held inode."""
        if rel:
            raise OutsideRoots("outside roots")
        try:
            fd = os.open(held.name, flags | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=held.parent_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise RootChanged() from None
            raise translate_error(exc) from None
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (held.info.dev, held.info.ino):
            os.close(fd)
            raise RootChanged()
        return fd

    def _resolve_new(self, held: _HeldRoot, rel: tuple[str, ...]) -> Path:
        """``resolve(must_exist=False)`` for an absent final component: existing parent + one plain name."""
        name = rel[-1]
        if name == "..":
            raise PathNotFound()
        parent_fd, parent_parts = self._open_parts(held, rel[:-1], _DIR_PATH, mode=self.resolver)
        try:
            st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        except FileNotFoundError:
            return self._display(held, (*parent_parts, name))
        except OSError as exc:
            raise translate_error(exc) from None
        finally:
            os.close(parent_fd)
        if stat.S_ISLNK(st.st_mode):
            raise DanglingSymlink()
        raise PathNotFound()  # it appeared meanwhile: the caller may retry, we do not guess

    # -- the component walk ------------------------------------------------------------------------------------

    def _component(self, cur: int, name: str, flags: int, assisted: bool) -> int:
        """Open one name in ``cur`` without following a symlink; with openat2 the kernel also refuses mounts."""
        if assisted:
            try:
                return _o2.openat2(
                    cur, name.encode("utf-8", "surrogateescape"), flags | _O_NOFOLLOW | _O_CLOEXEC, self._child_flags
                )
            except OSError as exc:
                if exc.errno == errno.EXDEV:
                    raise CrossesMount() from None
                raise
        return os.open(name, flags | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=cur)

    def _check_mount(self, held: _HeldRoot, fd: int) -> None:
        """Plain walk only: the object must live on the root's mount (mount id if known, else ``st_dev``)."""
        if self.cross_mounts:
            return
        mnt = _o2.mount_id(fd) if held.mnt is not None else None
        if mnt is not None:
            if mnt != held.mnt:
                raise CrossesMount()
        elif os.fstat(fd).st_dev != held.info.dev:
            raise CrossesMount()

    def _check_mount_name(self, held: _HeldRoot, cur: int, name: str) -> None:
        """Error path only: is ``name`` in ``cur`` itself a foreign mount point (its open just failed)?"""
        try:
            fd = os.open(name, _O_PATH | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=cur)
        except OSError:
            return
        try:
            self._check_mount(held, fd)
        finally:
            os.close(fd)

    def _walk(
        self, held: _HeldRoot, rel: tuple[str, ...], flags: int, follow: bool, *, assisted: bool
    ) -> tuple[int, tuple[str, ...]]:
        """Resolve ``rel`` beneath ``held.fd`` component by component (see :meth:`_walk_links`)."""
        if ".." not in rel:
            opened = self._walk_plain(held, rel, flags, follow, assisted)
            if opened is not None:
                return opened, rel
        return self._walk_links(held, rel, flags, follow, assisted=assisted)

    def _walk_plain(
        self, held: _HeldRoot, rel: tuple[str, ...], flags: int, follow: bool, assisted: bool
    ) -> int | None:
        """The common case, cheaply: every component a real directory. ``None`` on any symlink (then the full walk
        decides); other errors are final."""
        opened: list[int] = []
        cur = held.fd
        fd = -1
        try:
            if assisted:
                for name in rel[:-1]:
                    cur = self._component(cur, name, _DIR_PATH, True)
                    opened.append(cur)
                fd = self._component(cur, rel[-1] if rel else ".", flags, True)
            else:
                for name in rel[:-1]:
                    cur = os.open(name, _DIR_WALK, dir_fd=cur)
                    opened.append(cur)
                fd = os.open(rel[-1] if rel else ".", flags | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=cur)
            if follow and flags & _O_PATH and not flags & _O_DIRECTORY and stat.S_ISLNK(os.fstat(fd).st_mode):
                return None
            if not assisted:
                self._check_mount(held, fd)
            result, fd = fd, -1
            return result
        except OSError as exc:
            if not assisted and not self.cross_mounts:
                # A failure inside, or on, a foreign mount must say nothing about what is there.
                if opened:
                    self._check_mount(held, opened[-1])
                if fd < 0 and len(opened) == len(rel) - 1:
                    self._check_mount_name(held, cur, rel[-1])
            if exc.errno in _LINK_ERRNOS:
                return None
            raise translate_error(exc) from None
        except ValueError:
            raise InvalidPath("control character") from None
        finally:
            _close_all(opened)
            if fd >= 0:
                os.close(fd)

    def _walk_links(
        self, held: _HeldRoot, rel: tuple[str, ...], flags: int, follow: bool, *, assisted: bool
    ) -> tuple[int, tuple[str, ...]]:
        """Resolve ``rel`` one component at a time beneath ``held.fd``, following in-root symlinks ourselves.

        ``..`` pops our own stack of fds (never the kernel's ``..``), so it cannot climb above the root. A symlink
        is read as text: a relative target is walked from the link's directory, an absolute one only if it lies
        under the root's canonical path (then from the root fd). More than 40 hops is a loop. Magic links are read
        as text too, so they never teleport.
        """
        stack: list[int] = []
        names: list[str] = []
        pending = list(reversed(rel))
        hops = 0
        fd = -1
        try:
            while True:
                while pending and pending[-1] in _NOOP:
                    pending.pop()
                cur = stack[-1] if stack else held.fd
                if not pending:
                    fd = self._component(cur, ".", flags, assisted)
                    if not assisted:
                        self._check_mount(held, fd)
                    result, fd = fd, -1
                    return result, tuple(names)
                name = pending.pop()
                if name == "..":
                    if not stack:
                        raise SymlinkEscape() if hops else OutsideRoots("outside roots")
                    os.close(stack.pop())
                    names.pop()
                    continue
                while pending and pending[-1] in _NOOP:
                    pending.pop()
                last = not pending
                target: str | None = None
                try:
                    fd = self._component(cur, name, flags if last else _DIR_PATH, assisted)
                except OSError as exc:
                    if exc.errno not in _LINK_ERRNOS or (last and not follow):
                        raise
                    target = self._readlink(name, cur)
                    if target is None:
                        raise
                else:
                    # O_PATH|O_NOFOLLOW opens a symlink itself instead of failing: look before trusting the fd.
                    link_fd = last and follow and flags & _O_PATH and not flags & _O_DIRECTORY
                    if link_fd and stat.S_ISLNK(os.fstat(fd).st_mode):
                        os.close(fd)
                        fd = -1
                        target = self._readlink(name, cur)
                        if target is None:
                            raise PathNotFound()
                if target is None:
                    if not assisted:
                        # Every step on the root's mount, as RESOLVE_NO_XDEV does: with links or "..", a path could
                        # otherwise pass through a foreign mount and come back.
                        self._check_mount(held, fd)
                    if last:
                        result, fd = fd, -1
                        return result, (*names, name)
                    stack.append(fd)
                    names.append(name)
                    fd = -1
                    continue
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise SymlinkLoop()
                if not target:
                    raise PathNotFound()
                if target[0] == "/":
                    tparts = _split(target)
                    if tparts[: len(held.parts)] != list(held.parts):
                        raise SymlinkEscape()
                    _close_all(stack)
                    names.clear()
                    pending.extend(reversed(tparts[len(held.parts) :]))
                else:
                    pending.extend(reversed(target.split("/")))
        except OSError as exc:
            if stack and not assisted:
                self._check_mount(held, stack[-1])  # a failure inside a foreign mount says nothing about it
            raise translate_error(exc) from None
        except ValueError:
            raise InvalidPath("control character") from None
        finally:
            _close_all(stack)
            if fd >= 0:
                os.close(fd)

    @staticmethod
    def _readlink(name: str, cur: int) -> str | None:
        """The link text of ``name`` in ``cur``, or ``None`` when it is not a symlink."""
        try:
            return os.readlink(name, dir_fd=cur)
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                return None
            raise
