"""Boundary: the effective roots (client roots ∩ operator allowlist), held open, and the one way beneath them.

Why: a root is a claim, not a grant, and every lexical guard is escapable. A :class:`Boundary` takes its roots in
once (``rootbound._intake``), holds an ``O_PATH`` fd on each, and every file operation goes through one entry
point, as with Go's ``os.Root`` and cap-std::

    with boundary.open(candidate, READ) as handle:    # parse, map to a root, open beneath its fd, check the type
        data = os.read(handle.fd, n)                  # act on the fd only; handle.path is the display path

:meth:`Boundary.open` takes the in-flight count under a lock (closing waits for it, so a root fd number is never
reused under a running operation), translates every failure once into a fixed :class:`~rootbound.RootsError`
(never OS text or the candidate), and closes what it opened exactly once. An :class:`Intent` says what the open is
for; the resolvers (``rootbound._resolve``) do the opening.

Rules (also in ``docs/security.md``): relative candidates resolve against the *first* effective root, never the
CWD; absolute ones map to the outermost root containing them by path components; a symlink from one root into
another is denied; the spelling a client used for a root is an alias for the held root.
"""

from __future__ import annotations

import os
import stat
import threading
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Literal

from ._candidate import MAX_PATH_BYTES, parse_candidate
from ._held import Dropped, EffectiveRoot, HeldRoot
from ._intake import Intake, RootLike, RootTrie
from ._resolve import (
    DIR_PATH,
    DIR_READ,
    MAX_SYMLINK_HOPS,
    O_CLOEXEC,
    O_PATH,
    Beneath,
    Resolver,
    close_all,
    pick_resolver,
)
from ._resolve import READ as _READ_FLAGS
from .errors import (
    DanglingSymlink,
    InvalidPath,
    IsADirectory,
    NotADirectory,
    NotAFile,
    OutsideRoots,
    PathNotFound,
    ReadOnly,
    RootsError,
    RootsUnavailable,
    SymlinkEscape,
    translate_error,
)
from .roots import RootSet

__all__ = [
    "CREATE",
    "DIRECTORY",
    "LIST",
    "LSTAT",
    "MAX_PATH_BYTES",
    "MAX_SYMLINK_HOPS",
    "READ",
    "STAT",
    "WRITE",
    "Boundary",
    "Dropped",
    "EffectiveRoot",
    "Handle",
    "Intent",
    "Resolver",
    "RootLike",
]


@dataclass(frozen=True)
class Intent:
    """What an open beneath a root is for.

    ``flags`` are the open flags of the object handed out (the parent directory for ``parent`` intents);
    ``follow`` whether a final symlink is followed (within the root); ``kind`` the type the object must have
    (``None``: any). With ``precheck`` the object is first opened ``O_PATH``, its type checked, and only then
    reopened with ``flags`` through that fd, so a FIFO or device is never opened for reading. ``parent`` hands out
    the held parent directory plus the final plain name (create, write, rename); with ``follow`` an in-root symlink
    there is followed to the existing object it names, and a dangling one is refused. ``parents_mode`` (parent
    intents) creates missing parent directories with that mode. ``named`` computes the display path.
    ``O_DIRECTORY`` in ``flags`` already makes the kernel refuse anything but a directory.
    """

    name: str
    flags: int
    follow: bool = True
    kind: Literal["file", "dir"] | None = None
    precheck: bool = False
    parent: bool = False
    parents_mode: int | None = None
    named: bool = False

    def with_parents(self, mode: int) -> Intent:
        """This parent intent, creating missing parent directories with permission bits ``mode``."""
        return Intent(self.name, self.flags, self.follow, self.kind, self.precheck, self.parent, mode, self.named)


READ: Final = Intent("read", _READ_FLAGS, kind="file")
"""A regular file opened for reading (``O_NONBLOCK``: a planted FIFO cannot hang it; its type is then refused)."""
LIST: Final = Intent("list", DIR_READ, named=True)
"""A directory opened for listing."""
STAT: Final = Intent("stat", O_PATH)
"""Any object, final symlink followed (an ``O_PATH`` fd: for fstat, or a checked reopen)."""
LSTAT: Final = Intent("lstat", O_PATH, follow=False)
"""Any object, a final symlink itself."""
DIRECTORY: Final = Intent("directory", DIR_PATH, named=True)
"""An existing directory (``O_PATH``), e.g. to check what ``mkdir`` found."""
CREATE: Final = Intent("create", DIR_READ, follow=False, parent=True, named=True)
"""The parent directory and a final name that is never followed (exclusive create, mkdir, rename target)."""
WRITE: Final = Intent("write", DIR_READ, parent=True, named=True)
"""Like :data:`CREATE`, but an in-root symlink at the final name is followed to the existing object it names."""

_PROC_FD: Final = "/proc/self/fd/"
_KIND_ERRORS: Final = {"file": NotAFile, "dir": NotADirectory}


class Handle:
    """One open beneath a root: use ``with boundary.open(candidate, intent) as handle``.

    ``fd`` is the opened object (for a parent intent: its parent directory), ``name`` the final plain name for a
    parent intent (else ``None``), ``root`` the :class:`EffectiveRoot` it is beneath, ``path`` its display path
    (canonical root + components, with a ``named`` intent). All fds are closed when the ``with`` block ends.
    """

    __slots__ = (
        "_below",
        "_beneath",
        "_boundary",
        "_candidate",
        "_held",
        "_intent",
        "_parts",
        "_rel",
        "_released",
        "fd",
        "name",
        "st",
    )

    def __init__(
        self, boundary: Boundary, candidate: object, intent: Intent, beneath: Beneath, below: tuple[str, ...]
    ) -> None:
        self._boundary = boundary
        self._candidate = candidate
        self._below = below
        self._rel: tuple[str, ...] = ()
        self._intent = intent
        self._beneath = beneath
        self._held: HeldRoot | None = None
        self._parts: tuple[str, ...] = ()
        self._released = True
        self.fd = -1
        self.name: str | None = None
        self.st: os.stat_result | None = None  # the fstat of the object, with an intent that has a ``kind``

    # -- the context manager: open on enter, close and release on exit ------------------------------------------

    def __enter__(self) -> Handle:
        boundary = self._boundary
        boundary._acquire()
        self._released = False
        try:
            held, rel = boundary._locate(self._candidate)
            if self._below:
                rel += self._below
            self._held, self._rel = held, rel
            intent = self._intent
            if intent.parent:
                self._open_parent(held, rel, intent)
            else:
                self._open_object(held, rel, intent)
        except BaseException as exc:
            self._finish()
            if isinstance(exc, (OSError, ValueError, UnicodeError)) and not isinstance(exc, RootsError):
                raise translate_error(exc) from None
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._finish()
        if exc is not None and isinstance(exc, (OSError, UnicodeError)) and not isinstance(exc, RootsError):
            raise translate_error(exc) from None  # what the caller did on the fd fails with a fixed denial too

    def _finish(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)
        if not self._released:
            self._released = True
            self._boundary._release()

    # -- what the handle offers ------------------------------------------------------------------------------------

    @property
    def root(self) -> EffectiveRoot:
        assert self._held is not None, "use the handle inside its with block"
        return self._held.info

    @property
    def path(self) -> Path:
        """The display path of the object (of ``name`` in the parent, for a parent intent); ``named`` intents."""
        assert self._held is not None, "use the handle inside its with block"
        assert self._intent.named, "the intent did not ask for the display path"
        if self.name is not None:
            return self._held.display((*self._parts, self.name))
        return self._held.display(self._parts)

    @property
    def prefix(self) -> str:
        """The display path of the object followed by ``/`` (for names of entries below it)."""
        assert self._held is not None, "use the handle inside its with block"
        assert self._intent.named, "the intent did not ask for the display path"
        return self._held.prefix + ("/".join(self._parts) + "/" if self._parts else "")

    def fstat(self) -> os.stat_result:
        """The fstat of the object (taken once; already taken by an intent with a ``kind``)."""
        if self.st is None:
            self.st = os.fstat(self.fd)
        return self.st

    def detach(self) -> int:
        """Hand the object's fd to the caller (who closes it); the handle still holds the root until it exits."""
        fd, self.fd = self.fd, -1
        return fd

    def reopen(self, flags: int) -> int:
        """A new fd on the same object opened with ``flags``; the caller closes it. Used after a type check on an
        ``O_PATH`` fd: through procfs the object itself is reopened, no path is resolved again. Without procfs the
        path is resolved again beneath the root and must lead to the same inode."""
        held = self._held
        assert held is not None, "use the handle inside its with block"
        try:
            return os.open(f"{_PROC_FD}{self.fd}", flags | O_CLOEXEC)
        except FileNotFoundError:
            if os.path.isdir(_PROC_FD):
                raise PathNotFound() from None
        except OSError as exc:
            raise translate_error(exc) from None
        fd = self._beneath.open(held, self._rel, flags, follow=self._intent.follow)
        mine, theirs = self.fstat(), os.fstat(fd)
        if (mine.st_dev, mine.st_ino) != (theirs.st_dev, theirs.st_ino):
            os.close(fd)
            raise PathNotFound()  # replaced meanwhile: not the object that was checked
        return fd

    def open_entry(self, dir_fd: int, name: str, inode: int, flags: int) -> tuple[int, os.stat_result] | None:
        """Open entry ``name`` listed (with ``inode``) in ``dir_fd``, a directory below this handle: ``None`` unless
        it is still that entry, not a symlink, and on the root's mount. For tree scans; the caller closes the fd."""
        assert self._held is not None, "use the handle inside its with block"
        return self._beneath.open_entry(self._held, dir_fd, name, inode, flags)

    # -- opening ---------------------------------------------------------------------------------------------------

    def _open_object(self, held: HeldRoot, rel: tuple[str, ...], intent: Intent) -> None:
        beneath = self._beneath
        flags = O_PATH if intent.precheck else intent.flags
        if intent.named:
            self.fd, self._parts = beneath.open_named(held, rel, flags, follow=intent.follow)
        else:
            self.fd = beneath.open(held, rel, flags, follow=intent.follow)
        if intent.kind is not None:
            self.st = st = os.fstat(self.fd)
            mode = st.st_mode
            if not (stat.S_ISREG(mode) if intent.kind == "file" else stat.S_ISDIR(mode)):
                if stat.S_ISDIR(mode):
                    raise IsADirectory()
                raise _KIND_ERRORS[intent.kind]()
        if intent.precheck and intent.flags != O_PATH:
            fd = self.reopen(intent.flags)
            os.close(self.fd)
            self.fd = fd

    def _open_parent(self, held: HeldRoot, rel: tuple[str, ...], intent: Intent) -> None:
        if held.is_file:
            raise OutsideRoots("outside roots") if rel else ReadOnly()  # nothing can be created at a file root
        if not rel:
            raise IsADirectory()
        name = rel[-1]
        if name == "..":
            raise InvalidPath("final component is not a name")
        beneath = self._beneath
        if intent.parents_mode is not None:
            self._make_parents(held, rel[:-1], intent.parents_mode)
        self.fd, self._parts = beneath.open_named(held, rel[:-1], intent.flags)
        if not intent.follow:
            self.name = name
            return
        existing = _lstat(self.fd, name)
        if existing is not None and stat.S_ISLNK(existing.st_mode):
            # Follow the link only to an existing object inside this root; act beside *that* object.
            os.close(self.fd)
            self.fd = -1
            try:
                target_fd, target = beneath.open_named(held, (*self._parts, name), O_PATH)
            except PathNotFound:
                raise DanglingSymlink() from None
            os.close(target_fd)
            if not target:
                raise IsADirectory()
            name = target[-1]
            self.fd, self._parts = beneath.open_named(held, target[:-1], intent.flags)
            again = _lstat(self.fd, name)
            if again is not None and stat.S_ISLNK(again.st_mode):
                raise SymlinkEscape()  # swapped while we looked: not provably inside
        self.name = name

    def _make_parents(self, held: HeldRoot, rel: tuple[str, ...], mode: int) -> None:
        """Create the missing directories of ``rel`` one by one, each beneath the held root (links followed within)."""
        for end in range(1, len(rel) + 1):
            try:
                fd = self._beneath.open(held, rel[:end], DIR_PATH)
            except PathNotFound:
                if rel[end - 1] == "..":
                    raise
                parent = self._beneath.open(held, rel[: end - 1], DIR_PATH)
                try:
                    os.mkdir(rel[end - 1], mode, dir_fd=parent)
                except FileExistsError:
                    pass  # made meanwhile: the next open decides what it is
                finally:
                    os.close(parent)
                continue
            os.close(fd)

    def lstat(self) -> os.stat_result | None:
        """For a parent intent: the ``lstat`` of ``name`` in the parent (``None`` if absent)."""
        assert self.name is not None, "only for parent intents"
        return _lstat(self.fd, self.name)


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


class Boundary:
    """The effective roots of one roots snapshot, held open; the one way to operate beneath them.

    ``roots`` takes :class:`~rootbound.Root` objects, ``file:`` URIs or paths. ``allow`` is the operator
    allowlist: paths (taken in now), or a held :class:`Boundary` whose roots are used as held objects, never
    resolved by name again (client roots are then opened beneath their fds). ``cross_mounts=False`` (the default)
    refuses any path that crosses into another mount below a root. ``resolver`` picks the kernel path:
    ``"openat2"``, ``"walk"`` (the portable component walk) or ``"auto"`` (openat2 when the kernel has it).
    Use as a context manager, or call :meth:`close`, to release the fds (a finaliser also does).
    """

    def __init__(
        self,
        roots: Iterable[RootLike],
        *,
        allow: Iterable[RootLike] | Boundary | None = None,
        cross_mounts: bool = False,
        resolver: Resolver = "auto",
    ) -> None:
        if os.name != "posix":
            raise RootsUnavailable("platform not supported")
        self.resolver: Literal["openat2", "walk"] = pick_resolver(resolver)
        self.cross_mounts = cross_mounts
        self.version: int | None = roots.version if isinstance(roots, RootSet) else None
        self._beneath = {self.resolver: Beneath(self.resolver, cross_mounts=cross_mounts)}
        self._fds: list[int] = []
        self._finalizer = weakref.finalize(self, close_all, self._fds)
        self._lock = threading.Lock()
        self._inflight = 0
        self._closing = False
        dropped: list[Dropped] = []
        allow_dropped: list[Dropped] = []
        try:
            intake = Intake(self.resolver, self._fds)
            if isinstance(allow, Boundary):
                with allow.use():
                    held = intake.roots(list(roots), allow._held, dropped)
            elif allow is not None:
                scratch: list[int] = []
                try:
                    taken = Intake(self.resolver, scratch).allowlist(list(allow), allow_dropped)
                    held = intake.roots(list(roots), taken, dropped)
                finally:
                    close_all(scratch)
            else:
                held = intake.roots(list(roots), None, dropped)
        except BaseException:
            self._finalizer()
            raise
        self._held: tuple[HeldRoot, ...] = tuple(held)
        self._trie = RootTrie(held)
        self.roots: tuple[EffectiveRoot, ...] = tuple(h.info for h in held)
        self.dropped: tuple[Dropped, ...] = tuple(dropped)
        self.allow_dropped: tuple[Dropped, ...] = tuple(allow_dropped)

    # -- the entry point -------------------------------------------------------------------------------------------

    def open(
        self,
        candidate: object,
        intent: Intent,
        *,
        resolver: Literal["openat2", "walk"] | None = None,
        below: tuple[str, ...] = (),
    ) -> Handle:
        """The one way beneath a root: ``with boundary.open(candidate, intent) as handle: ...``.

        ``candidate`` is a path (relative to the first root, or absolute) or a ``file:`` URI; ``below`` appends
        already-validated plain components (a glob's literal prefix). ``resolver`` overrides the boundary's. Every
        failure, in the open or in the ``with`` body's OS calls, is a :class:`~rootbound.RootsError` with a fixed
        reason.
        """
        kind = resolver or self.resolver
        beneath = self._beneath.get(kind)
        if beneath is None:
            beneath = self._beneath.setdefault(kind, Beneath(pick_resolver(kind), cross_mounts=self.cross_mounts))
        return Handle(self, candidate, intent, beneath, below)

    # -- lifetime --------------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Release the root fds (deferred until in-flight operations finish). Later operations are refused.

        An fd number closed under a running operation could be reused by an unrelated open and resolve beneath
        the wrong directory, so closing waits for the last in-flight operation (which then closes).
        """
        with self._lock:
            self._closing = True
            last = self._inflight == 0
        if last:
            self._finalizer()

    @property
    def closed(self) -> bool:
        return self._closing

    def __enter__(self) -> Boundary:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _acquire(self) -> None:
        with self._lock:
            if self._closing:
                raise RootsUnavailable("boundary closed")
            self._inflight += 1

    def _release(self) -> None:
        with self._lock:
            self._inflight -= 1
            last = self._closing and self._inflight == 0
        if last:
            self._finalizer()  # idempotent: only the first call closes

    def use(self) -> _Holding:
        """``with boundary.use():`` keeps the root fds open for the block (:meth:`close` waits for it)."""
        return _Holding(self)

    def without(self, stale: Iterable[EffectiveRoot]) -> Boundary:
        """A new boundary holding this one's roots except ``stale`` (their fds duplicated; nothing is resolved by
        name). The dropped ones are reported as ``root changed``."""
        gone = set(stale)
        new = Boundary.__new__(Boundary)
        new.resolver, new.cross_mounts, new.version = self.resolver, self.cross_mounts, self.version
        new._beneath = {self.resolver: Beneath(self.resolver, cross_mounts=self.cross_mounts)}
        new._fds = []
        new._finalizer = weakref.finalize(new, close_all, new._fds)
        new._lock = threading.Lock()
        new._inflight, new._closing = 0, False
        held: list[HeldRoot] = []
        try:
            with self.use():
                for old in self._held:
                    if old.info in gone:
                        continue
                    fd = os.dup(old.fd)
                    new._fds.append(fd)
                    parent_fd = -1
                    if old.parent_fd >= 0:
                        parent_fd = os.dup(old.parent_fd)
                        new._fds.append(parent_fd)
                    one = HeldRoot(old.info, old.parts, fd, parent_fd, old.mnt)
                    one.aliases = old.aliases
                    held.append(one)
        except BaseException:
            new._finalizer()
            raise
        new._held = tuple(held)
        new._trie = RootTrie(held)
        new.roots = tuple(h.info for h in held)
        new.dropped = self.dropped + tuple(Dropped(root.source, "root changed") for root in self.roots if root in gone)
        new.allow_dropped = self.allow_dropped
        return new

    # -- public queries --------------------------------------------------------------------------------------------

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
        try:
            with self.open(candidate, _RESOLVE) as handle:
                return handle.path
        except PathNotFound:
            if must_exist:
                raise
        try:
            with self.open(candidate, _RESOLVE_NEW) as handle:
                existing = handle.lstat()
                path = handle.path
        except (IsADirectory, InvalidPath, ReadOnly):
            raise PathNotFound() from None  # the root itself, "..", a vanished file root: nothing to create
        if existing is None:
            return path
        if stat.S_ISLNK(existing.st_mode):
            raise DanglingSymlink()
        raise PathNotFound()  # it appeared meanwhile: the caller may retry, we do not guess

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

    # -- internals of the entry point (Handle is part of this module) --------------------------------------------

    def _locate(self, candidate: object) -> tuple[HeldRoot, tuple[str, ...]]:
        """Map a candidate to ``(held root, components below it)`` lexically; nothing is resolved yet."""
        absolute, parts = parse_candidate(candidate)
        if not absolute:
            if not self._held:
                raise OutsideRoots("outside roots")
            parts = [*self._held[0].parts, *parts]
        found = self._trie.locate(parts)
        if found is None:
            raise OutsideRoots("outside roots")
        held, index = found
        return held, tuple(parts[index:])


class _Holding:
    """A boundary kept open (counted in flight): while a caller uses it, or another boundary is built from it."""

    def __init__(self, boundary: Boundary) -> None:
        self._boundary = boundary

    def __enter__(self) -> Boundary:
        self._boundary._acquire()
        return self._boundary

    def __exit__(self, *exc_info: object) -> None:
        self._boundary._release()


_RESOLVE: Final = Intent("resolve", O_PATH, named=True)
_RESOLVE_NEW: Final = Intent("resolve-new", DIR_PATH, follow=False, parent=True, named=True)
