"""Boundary: the effective roots (client roots ∩ operator allowlist), held open, and the one way beneath them.

Why: a root is a claim, not a grant, and every lexical guard is escapable. A :class:`Boundary` takes its roots in
once (``root_intake``), holds an ``O_PATH`` fd on each, and every file operation goes through one entry
point, as with Go's ``os.Root`` and cap-std::

    with boundary.open(candidate, READ) as handle:    # parse, map to a root, open beneath its fd, check the type
        data = os.read(handle.fd, n)                  # act on the fd only; handle.path is the display path

:meth:`Boundary.open` takes the in-flight count under a lock (closing waits for it, so a root fd number is never
reused under a running operation), translates every failure once into a fixed :class:`~rootbound.RootsError`
(never OS text or the candidate), and closes what it opened exactly once. An :class:`Intent` says what the open is
for; the resolvers (``rootbound.confine.resolvers``) do the opening.

Rules (also in ``docs/security.md``): relative candidates resolve against the *first* effective root, never the
CWD; absolute ones map to the outermost root containing them by path components; a symlink from one root into
another is denied; the spelling a client used for a root is an alias for the held root.
"""

from __future__ import annotations

import functools
import os
import stat
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Final

from rootbound.confine.atomic_write import beneath
from rootbound.confine.candidate import MAX_PATH_BYTES, parse_candidate
from rootbound.confine.held_roots import Dropped, EffectiveRoot, HeldRoot
from rootbound.confine.intents import (
    CREATE,
    DIRECTORY,
    LIST,
    LSTAT,
    READ,
    RESOLVE,
    RESOLVE_NEW,
    STAT,
    WRITE,
    Intent,
    lstat_name,
    open_object,
    open_parent,
    open_typed,
    reopen,
)
from rootbound.confine.local_disks import is_local
from rootbound.confine.resolvers import (
    MAX_SYMLINK_HOPS,
    Beneath,
    OpenerSpec,
    Resolver,
    ResolverKind,
    close_all,
    pick_resolver,
)
from rootbound.confine.root_intake import Intake, RootLike, RootTrie
from rootbound.confine.syscalls import Facts
from rootbound.confine.write_domain import WriteDomain, on_write_worker
from rootbound.core.errors import (
    AccessDenied,
    DanglingSymlink,
    InvalidPath,
    IsADirectory,
    MovedOutOfRoots,
    OutsideRoots,
    PathNotFound,
    ReadOnly,
    RootsError,
    RootsUnavailable,
    translate_error,
)
from rootbound.core.roots import RootSet

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


_LOCATED_MAX: Final = 1024


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
        self._intent = intent
        self._beneath = beneath
        self._held: HeldRoot | None = None
        self._released = True
        self.fd = -1
        self.name: str | None = None
        # With an intent that has a ``kind``: the fstat of the object, or the walk's statx facts (type, links, size)
        self.st: os.stat_result | Facts | None = None

    # -- the context manager: open on enter, close and release on exit ------------------------------------------

    def __enter__(self) -> Handle:
        boundary = self._boundary
        boundary._acquire()  # counted in flight before the root fds are used; close() waits for the count
        self._released = False
        try:
            candidate = self._candidate
            located = boundary._located.get(candidate) if type(candidate) is str else None
            held, rel = boundary._locate(candidate) if located is None else located
            if self._below:
                rel += self._below
            self._held, self._rel = held, rel
            intent = self._intent
            if intent.parent:
                self.fd, self._parts, self.name = open_parent(self._beneath, held, rel, intent)
            elif intent.kind is not None and not intent.named:  # the hot path (READ)
                self.fd, self.st = open_typed(self._beneath, held, rel, intent)
            elif intent.named or intent.precheck:
                self.fd, self._parts, self.st = open_object(self._beneath, held, rel, intent)
            else:  # STAT, LSTAT
                self.fd = self._beneath.open(held, rel, intent.flags, follow=intent.follow)
        except BaseException as exc:
            self._finish()
            if isinstance(exc, (OSError, ValueError, UnicodeError)) and not isinstance(exc, RootsError):
                raise translate_error(exc) from None
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        fd = self.fd
        if fd >= 0:
            self.fd = -1
            try:
                if exc is not None and self._moved_out(exc, fd):
                    raise MovedOutOfRoots() from None
            finally:
                os.close(fd)
        if not self._released:
            self._released = True
            boundary = self._boundary
            lock = boundary._lock
            lock.acquire()
            try:
                boundary._inflight -= 1
                last = boundary._closing and boundary._inflight == 0
            finally:
                lock.release()
            if last:
                boundary._finalizer()
        if exc is not None and isinstance(exc, (OSError, UnicodeError)) and not isinstance(exc, RootsError):
            raise translate_error(exc) from None  # what the caller did on the fd fails with a fixed denial too

    def _moved_out(self, exc: BaseException, fd: int) -> bool:
        """Whether a denied write failed because its directory is no longer beneath the root: on the write
        domain's threads the kernel refuses such a write with ``EACCES``, which would otherwise read as the
        server's user lacking permission (and send an agent to another path for the wrong reason)."""
        denied = isinstance(exc, AccessDenied) or (type(exc) is PermissionError and not isinstance(exc, RootsError))
        if not denied or not on_write_worker() or self._held is None:
            return False
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                return False
        except OSError:
            return False
        root = self._held.info
        return not beneath(fd, (root.dev, root.ino))

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
        """The fstat of the object (taken once; usually already taken by an intent with a ``kind``)."""
        st = self.st
        if not isinstance(st, os.stat_result):  # None, or the walk's statx facts (only type, links and size)
            st = self.st = os.fstat(self.fd)
        return st

    def detach(self) -> int:
        """Hand the object's fd to the caller (who closes it); the handle still holds the root until it exits."""
        fd, self.fd = self.fd, -1
        return fd

    def reopen(self, flags: int) -> int:
        """A new fd on the same object opened with ``flags``; the caller closes it. Used after a type check on an
        ``O_PATH`` fd: through procfs the object itself is reopened, no path is resolved again. Without procfs (the
        portable profile) the path is resolved again beneath the root and must lead to the same inode."""
        assert self._held is not None, "use the handle inside its with block"
        return reopen(self.fd, flags, self._beneath, self._held, self._rel, self._intent.follow)

    def open_entry(self, dir_fd: int, name: str, inode: int, flags: int) -> tuple[int, os.stat_result] | None:
        """Open entry ``name`` listed (with ``inode``) in ``dir_fd``, a directory below this handle: ``None`` unless
        it is still that entry, not a symlink, and on the root's mount. For tree scans; the caller closes the fd."""
        assert self._held is not None, "use the handle inside its with block"
        return self._beneath.open_entry(self._held, dir_fd, name, inode, flags)

    def entry_opener(self) -> Callable[[int, str, int, int], tuple[int, os.stat_result] | None]:
        """:meth:`open_entry` bound to this root, for the per-entry loop of a tree scan (one call less per entry)."""
        assert self._held is not None, "use the handle inside its with block"
        return functools.partial(self._beneath.open_listed, self._held.info.dev, self._held.mnt)

    def opener_spec(self) -> OpenerSpec:
        """What :func:`~rootbound.confine.resolvers.listed_opener` needs to open this root's listed entries as
        :meth:`entry_opener` does, in another process given the directory fds: resolver, mount policy, the root's
        device and mount id."""
        assert self._held is not None, "use the handle inside its with block"
        return self._beneath.resolver, self._beneath.cross_mounts, self._held.info.dev, self._held.mnt

    def lstat(self) -> os.stat_result | None:
        """For a parent intent: the ``lstat`` of ``name`` in the parent (``None`` if absent)."""
        assert self.name is not None, "only for parent intents"
        return lstat_name(self.fd, self.name)


class Boundary:
    """The effective roots of one roots snapshot, held open; the one way to operate beneath them.

    ``roots`` takes :class:`~rootbound.Root` objects, ``file:`` URIs or paths. ``allow`` is the operator
    allowlist: paths (taken in now), or a held :class:`Boundary` whose roots are used as held objects, never
    resolved by name again (client roots are then opened beneath their fds). ``cross_mounts=False`` (the default)
    refuses any path that crosses into another mount below a root. ``resolver`` picks the kernel path:
    ``"openat2"``, ``"walk"`` (the component walk), ``"portable"`` (the walk exactly as it must run without
    ``O_PATH``, procfs and mount ids, as on macOS; mounts by ``st_dev`` only) or ``"auto"`` (openat2 when the
    kernel has it).
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
        self.resolver: ResolverKind = pick_resolver(resolver)
        self.cross_mounts = cross_mounts
        self.version: int | None = roots.version if isinstance(roots, RootSet) else None
        self._beneath = {self.resolver: Beneath(self.resolver, cross_mounts=cross_mounts)}
        self._fds: list[int] = []
        self._domains: list[WriteDomain] = []
        self._finalizer = weakref.finalize(self, _release_held, self._fds, self._domains)
        self._lock = threading.Lock()
        self._domain_lock = threading.Lock()
        self._inflight = 0
        self._closing = False
        self._local: bool | None = None
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
        self._located: dict[str, tuple[HeldRoot, tuple[str, ...]]] = {}
        self.roots: tuple[EffectiveRoot, ...] = tuple(h.info for h in held)
        self.dropped: tuple[Dropped, ...] = tuple(dropped)
        self.allow_dropped: tuple[Dropped, ...] = tuple(allow_dropped)

    # -- the entry point -------------------------------------------------------------------------------------------

    def open(
        self,
        candidate: object,
        intent: Intent,
        *,
        resolver: ResolverKind | None = None,
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

    @property
    def on_local_disks(self) -> bool:
        """Whether every operation beneath this boundary ends in bounded time: each root's mount a local disk or
        memory file system (:mod:`local_disks`, by the mount id taken in, without asking the file system)
        and no mount crossed below one. Asked once: a held object cannot change mount."""
        if self._local is None:
            self._local = not self.cross_mounts and is_local([held.mnt for held in self._held])
        return self._local

    def __enter__(self) -> Boundary:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _acquire(self) -> None:
        lock = self._lock  # acquire/release, not ``with``: half the cost on a path taken twice per operation
        lock.acquire()
        try:
            if self._closing:
                raise RootsUnavailable("boundary closed")
            self._inflight += 1
        finally:
            lock.release()

    def _release(self) -> None:
        with self._lock:
            self._inflight -= 1
            last = self._closing and self._inflight == 0
        if last:
            self._finalizer()  # idempotent: only the first call closes

    def write_domain(self) -> WriteDomain:
        """The threads this boundary's writes run on, held by the kernel (Landlock) to writing beneath exactly these
        roots, so that a directory moved out of a root mid-write cannot be written in; made at the first write, kept
        until :meth:`close`. ``enforced`` is false only where the kernel has no Landlock; where it has, a domain
        that cannot be made now raises :class:`~rootbound.core.errors.ServerBusy` and the next write tries again
        (see ``write_domain``)."""
        with self._domain_lock:
            if not self._domains or self._domains[-1].pid != os.getpid():
                with self.use():
                    self._domains.append(WriteDomain([held.fd for held in self._held]))
            return self._domains[-1]

    def use(self) -> _Holding:
        """``with boundary.use():`` keeps the root fds open for the block (:meth:`close` waits for it)."""
        return _Holding(self)

    def root_fds(self) -> tuple[int, ...]:
        """The held roots' fds, in order (``O_PATH``); valid only inside :meth:`use`. What a Landlock rule is
        built from, so a wall is the held roots whatever their names now say (issue 48 row 11)."""
        return tuple(held.fd for held in self._held)

    def without(self, stale: Iterable[EffectiveRoot]) -> Boundary:
        """A new boundary holding this one's roots except ``stale`` (their fds duplicated; nothing is resolved by
        name)."""
        gone = set(stale)
        new = Boundary.__new__(Boundary)
        new.resolver, new.cross_mounts, new.version = self.resolver, self.cross_mounts, self.version
        new._beneath = {self.resolver: Beneath(self.resolver, cross_mounts=self.cross_mounts)}
        new._fds = []
        new._domains = []
        new._finalizer = weakref.finalize(new, _release_held, new._fds, new._domains)
        new._lock = threading.Lock()
        new._domain_lock = threading.Lock()
        new._inflight, new._closing = 0, False
        new._local = self._local  # the same objects, so the same file systems
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
        new._located = {}
        new.roots = tuple(h.info for h in held)
        new.dropped = self.dropped  # a root that went stale was taken in; it is simply no longer held
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
            with self.open(candidate, RESOLVE) as handle:
                return handle.path
        except PathNotFound:
            if must_exist:
                raise
        try:
            with self.open(candidate, RESOLVE_NEW) as handle:
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
        """Map a candidate to ``(held root, components below it)`` lexically; nothing is resolved yet.

        Pure string work on an immutable trie, so the answers for recent ``str`` candidates are remembered (a
        bounded map): a server reads the same few paths again and again.
        """
        if type(candidate) is str:
            known = self._located.get(candidate)
            if known is not None:
                return known
            found = self._locate_new(candidate)
            if len(self._located) >= _LOCATED_MAX:
                self._located.clear()
            self._located[candidate] = found
            return found
        return self._locate_new(candidate)

    def _locate_new(self, candidate: object) -> tuple[HeldRoot, tuple[str, ...]]:
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


def _release_held(fds: list[int], domains: list[WriteDomain]) -> None:
    """The finaliser: the write domain's workers are told to end, then the root fds close."""
    while domains:
        domains.pop().close()
    close_all(fds)


class _Holding:
    """A boundary kept open (counted in flight): while a caller uses it, or another boundary is built from it."""

    def __init__(self, boundary: Boundary) -> None:
        self._boundary = boundary

    def __enter__(self) -> Boundary:
        self._boundary._acquire()
        return self._boundary

    def __exit__(self, *exc_info: object) -> None:
        self._boundary._release()
