"""The two resolvers, side by side: open a path beneath a held root fd, never leaving it.

Why both: ``openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS [| RESOLVE_NO_XDEV])`` lets the kernel refuse every
escape inside one path walk (Linux >= 5.6). Where it is missing (or when asked for), the component walk opens
each component ``O_NOFOLLOW`` relative to the previous fd, reads in-root symlinks as text and follows them
itself, pops its own fd stack for ``..``, and checks the mount of what it opened. ``tests/confine`` runs every
attack against both and has a property test that they agree.

Neither resolver decides policy (which root, which intent): :class:`Beneath` only opens ``rel`` beneath a
:class:`~rootbound.confine.held_roots.HeldRoot` with the flags it is given, and turns every failure into a fixed denial.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Callable
from typing import Final, Literal, TypeAlias

from rootbound.confine import syscalls as _o2
from rootbound.confine.candidate import NOOP, split_path
from rootbound.confine.held_roots import HeldRoot
from rootbound.confine.proc_fd import proc_name
from rootbound.confine.syscalls import Facts
from rootbound.core.errors import (
    CrossesMount,
    InvalidPath,
    OutsideRoots,
    PathNotFound,
    RootChanged,
    RootsError,
    RootsUnavailable,
    SymlinkEscape,
    SymlinkLoop,
    translate_error,
)

__all__ = [
    "DIR_PATH",
    "DIR_READ",
    "MAX_SYMLINK_HOPS",
    "O_CLOEXEC",
    "O_DIRECTORY",
    "O_NOFOLLOW",
    "O_PATH",
    "READ",
    "Beneath",
    "OpenerSpec",
    "Resolver",
    "ResolverKind",
    "close_all",
    "listed_opener",
    "pick_resolver",
]

MAX_SYMLINK_HOPS: Final = 40  # the kernel's MAXSYMLINKS, so both resolvers agree on chains

O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_O_NOCTTY: Final = getattr(os, "O_NOCTTY", 0)
# The portable profile: the walk as it must run where O_PATH, procfs and mount ids do not exist (macOS, the
# BSDs), simulated on Linux (``resolver="portable"``) so every escape and race test runs against it. "Open without
# reading" becomes a non-blocking read-only open: a FIFO must not hang it, a terminal must not become the
# controlling one. Where the OS has no O_PATH at all, that same open is what O_PATH means here.
_PORTABLE_PATH: Final = os.O_RDONLY | _O_NONBLOCK | _O_NOCTTY
O_PATH: Final = getattr(os, "O_PATH", _PORTABLE_PATH)
DIR_PATH: Final = O_PATH | O_DIRECTORY
DIR_READ: Final = os.O_RDONLY | O_DIRECTORY
# O_NONBLOCK: a FIFO planted in a root must not hang a read; the type check after fstat then refuses it.
READ: Final = os.O_RDONLY | _O_NONBLOCK | _O_NOCTTY
_DIR_WALK: Final = DIR_PATH | O_NOFOLLOW | O_CLOEXEC
_LINK_ERRNOS: Final = frozenset((errno.ELOOP, errno.EMLINK, errno.ENOTDIR))

Resolver: TypeAlias = Literal["auto", "openat2", "walk", "portable"]
ResolverKind: TypeAlias = Literal["openat2", "walk", "portable"]


def pick_resolver(resolver: Resolver) -> ResolverKind:
    """The resolver for ``"auto"``, ``"openat2"``, ``"walk"`` or ``"portable"`` (openat2 only where the kernel has
    it; ``"portable"`` is the walk without ``O_PATH``, procfs or mount ids)."""
    if resolver not in ("auto", "openat2", "walk", "portable"):
        raise ValueError("resolver must be 'auto', 'openat2', 'walk' or 'portable'")
    if resolver == "portable" or (resolver == "auto" and not hasattr(os, "O_PATH")):
        return "portable"
    if resolver == "openat2" and not _o2.available():
        raise RootsUnavailable("openat2 not available")
    return "openat2" if resolver == "openat2" or (resolver == "auto" and _o2.available()) else "walk"


OpenerSpec: TypeAlias = tuple[str, bool, int, "int | None"]
"""A root's entry opener as plain data (resolver, ``cross_mounts``, the root's device, its mount id), for a process
that holds none of the root's fds: :meth:`~rootbound.confine.boundary.Handle.opener_spec`."""


def listed_opener(spec: OpenerSpec) -> Callable[[int, str, int, int], tuple[int, os.stat_result] | None]:
    """:meth:`Beneath.open_listed` for the root ``spec`` describes: what
    :meth:`~rootbound.confine.boundary.Handle.entry_opener` gives in the process holding the root."""
    resolver, cross_mounts, dev, mnt = spec
    if resolver not in ("openat2", "walk", "portable"):
        raise ValueError("not a resolver")
    kind: ResolverKind = "openat2" if resolver == "openat2" else "walk" if resolver == "walk" else "portable"
    return functools.partial(Beneath(kind, cross_mounts=bool(cross_mounts)).open_listed, int(dev), mnt)


def close_all(fds: list[int]) -> None:
    while fds:
        fd = fds.pop()
        try:  # noqa: SIM105 - on the hot path; contextlib.suppress costs more than the close
            os.close(fd)
        except OSError:
            pass


def portable_flags(flags: int) -> int:
    """``flags`` as the portable profile opens them: ``O_PATH`` becomes a non-blocking read-only open."""
    return (flags & ~O_PATH) | _PORTABLE_PATH if flags & O_PATH else flags


class Beneath:
    """Opens paths beneath held roots with one resolver (``"openat2"``, ``"walk"`` or ``"portable"``) and one mount
    policy."""

    __slots__ = ("_child_flags", "_hows", "_resolve_flags", "cross_mounts", "portable", "resolver")

    def __init__(self, resolver: ResolverKind, *, cross_mounts: bool) -> None:
        self.resolver = resolver
        self.portable = resolver == "portable"  # no O_PATH, no procfs, no mount ids: st_dev only
        self.cross_mounts = cross_mounts
        self._resolve_flags = (
            _o2.RESOLVE_BENEATH | _o2.RESOLVE_NO_MAGICLINKS | (0 if cross_mounts else _o2.RESOLVE_NO_XDEV)
        )
        self._child_flags = self._resolve_flags | _o2.RESOLVE_NO_SYMLINKS
        self._hows: dict[int, bytes] = {}  # open flags (O_CLOEXEC, O_NOFOLLOW included) -> packed open_how

    def os_open(self, name: str, flags: int, dir_fd: int | None = None) -> int:
        """``os.open``, except that the portable profile has no ``O_PATH``: a non-blocking read-only open instead."""
        return os.open(name, portable_flags(flags) if self.portable else flags, dir_fd=dir_fd)

    def proc_name(self, fd: int) -> str | None:
        return None if self.portable else proc_name(fd)

    def mount_id(self, fd: int) -> int | None:
        return None if self.portable else _o2.mount_id(fd)

    # -- the two public ways in --------------------------------------------------------------------------------

    def open(self, held: HeldRoot, rel: tuple[str, ...], flags: int, *, follow: bool = True) -> int:
        """An fd for ``rel`` beneath ``held`` opened with ``flags``; every failure is a :class:`RootsError`."""
        if held.is_file:
            return self._open_file_root(held, rel, flags, follow)
        if self.resolver == "openat2":
            path = "/".join(rel).encode("utf-8", "surrogateescape") if rel else b"."
            try:
                return _o2.openat2(
                    held.fd, path, flags | O_CLOEXEC | (0 if follow else O_NOFOLLOW), self._resolve_flags
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
        if ".." not in rel:
            opened = self._descend(held, rel, flags, follow)
            if opened is not None:
                return opened[0]
        return self._walk_links(held, rel, flags, follow, assisted=False)[0]

    def open_stat(
        self, held: HeldRoot, rel: tuple[str, ...], flags: int, follow: bool = True
    ) -> tuple[int, os.stat_result | Facts]:
        """Like :meth:`open`, plus the ``fstat`` of what was opened: the walk already takes it to see whether an
        ``O_PATH`` open stopped on a symlink, and a type check needs no second one. From the walk's common case it
        is the :class:`~rootbound.confine.syscalls.Facts` of the ``statx`` that also checked the mount."""
        if held.is_file:
            fd = self._open_file_root(held, rel, flags, follow)
        elif self.resolver == "openat2":
            # The hot path of the READ intent: one openat2 with a packed open_how. Any failure takes the full
            # path (:meth:`open`: retries, the errno's meaning, the kernel-assisted walk), which decides.
            all_flags = flags | O_CLOEXEC if follow else flags | O_CLOEXEC | O_NOFOLLOW
            how = self._hows.get(all_flags)
            if how is None:
                how = self._hows[all_flags] = _o2.packed_how(all_flags, self._resolve_flags)
            path = "/".join(rel).encode("utf-8", "surrogateescape") if rel else b"."
            fd = _o2.openat2_packed(held.fd, path, how)
            if fd < 0:
                fd = self.open(held, rel, flags, follow=follow)
        elif self.resolver == "walk" and ".." not in rel:
            opened = self._descend(held, rel, flags, follow, False, True)
            if opened is None:
                fd = self._walk_links(held, rel, flags, follow, assisted=False)[0]
            else:
                fd, st = opened
                if st is not None:
                    return fd, st  # the stat the walk took; without one, the fstat below
        else:
            fd = self.open(held, rel, flags, follow=follow)
        try:
            return fd, os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise

    def open_named(
        self, held: HeldRoot, rel: tuple[str, ...], flags: int, *, follow: bool = True
    ) -> tuple[int, tuple[str, ...]]:
        """Like :meth:`open`, plus the canonical components of what was opened (for display paths).

        The display path is the root's canonical path plus these components, so a root that was moved, deleted or
        replaced since intake is refused here (:class:`RootChanged`): the path would name something else.
        """
        if held.is_file:
            return self._open_file_root(held, rel, flags, follow), ()
        if self.resolver == "openat2":
            fd = self.open(held, rel, flags, follow=follow)
            name = proc_name(fd)
            if name is not None:
                try:
                    return fd, self._under(held, name, fd)
                except BaseException:
                    os.close(fd)
                    raise
            os.close(fd)  # no /proc: the walk knows the components it took
        result = self._walk(held, rel, flags, follow, assisted=self.resolver == "openat2")
        try:
            self._check_root_path(held)
        except BaseException:
            os.close(result[0])
            raise
        return result

    def open_entry(
        self, held: HeldRoot, dir_fd: int, name: str, inode: int, flags: int
    ) -> tuple[int, os.stat_result] | None:
        """Open a listed entry of a held directory, or ``None`` if it is not (still) that entry on the root's mount
        (:meth:`open_listed` with the root's device and mount id)."""
        return self.open_listed(held.info.dev, held.mnt, dir_fd, name, inode, flags)

    def open_listed(
        self, dev: int, mnt: int | None, dir_fd: int, name: str, inode: int, flags: int
    ) -> tuple[int, os.stat_result] | None:
        """Open a listed entry of a directory below a root on device ``dev`` with mount id ``mnt`` (``None``:
        unknown), or ``None`` if it is not (still) that entry on the root's mount. Takes the root's identity, not
        the root, so a scan helper process given only directory fds opens exactly as the walk does.

        ``O_NOFOLLOW`` on a single name: no symlink is followed. Mounts: ``readdir`` reports the inode of the
        mount *point* while ``fstat`` reports the mounted object, so an open that crossed a mount shows a
        different inode (or device). Equal inode and device prove no crossing for free; any difference gets the
        exact check (mount id), so an odd filesystem costs time, never a wrong answer.
        """
        try:
            fd = self.os_open(name, flags | O_NOFOLLOW | O_CLOEXEC, dir_fd)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not self.cross_mounts and (st.st_ino != inode or st.st_dev != dev):
                self._check_mount_of(dev, mnt, fd)
        except (OSError, RootsError):
            os.close(fd)
            return None
        return fd, st

    def check_mount(self, held: HeldRoot, fd: int) -> None:
        """The object ``fd`` must live on the root's mount (mount id if known, else ``st_dev``) unless crossing
        mounts is allowed."""
        self._check_mount_of(held.info.dev, held.mnt, fd)

    def _check_mount_of(self, dev: int, mnt: int | None, fd: int) -> None:
        if self.cross_mounts:
            return
        found = _o2.mount_id(fd) if mnt is not None else None
        if found is not None:
            if found != mnt:
                raise CrossesMount()
        elif os.fstat(fd).st_dev != dev:
            raise CrossesMount()

    # -- roots that moved, and file roots ----------------------------------------------------------------------

    @staticmethod
    def _check_root_path(held: HeldRoot) -> None:
        try:
            st = os.stat(held.path_str, follow_symlinks=False)
        except OSError:
            raise RootChanged() from None
        if (st.st_dev, st.st_ino) != (held.info.dev, held.info.ino):
            raise RootChanged()

    @staticmethod
    def _under(held: HeldRoot, name: str, fd: int) -> tuple[str, ...]:
        """Components of the kernel's name ``name`` below the root, or a denial if it is not below it."""
        if name.endswith(" (deleted)"):
            if os.fstat(held.fd).st_nlink == 0:
                raise RootChanged()
            if os.fstat(fd).st_nlink == 0:
                raise PathNotFound()
        if not held.parts:
            return tuple(split_path(name))
        if name == held.path_str:
            return ()
        if name.startswith(held.prefix):
            return tuple(name[len(held.prefix) :].split("/"))
        raise RootChanged()

    def _open_file_root(self, held: HeldRoot, rel: tuple[str, ...], flags: int, follow: bool) -> int:
        """A file root matches only itself: reopen it by name in its parent, and check it is the held inode."""
        if rel:
            raise OutsideRoots("outside roots")
        try:
            fd = self.os_open(held.name, flags | O_NOFOLLOW | O_CLOEXEC, held.parent_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise RootChanged() from None
            raise translate_error(exc) from None
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (held.info.dev, held.info.ino):
            os.close(fd)
            raise RootChanged()
        return fd

    # -- the component walk ------------------------------------------------------------------------------------

    def _component(self, cur: int, name: str, flags: int, assisted: bool) -> int:
        """Open one name in ``cur`` without following a symlink; with openat2 the kernel also refuses mounts."""
        if assisted:
            try:
                return _o2.openat2(
                    cur, name.encode("utf-8", "surrogateescape"), flags | O_NOFOLLOW | O_CLOEXEC, self._child_flags
                )
            except OSError as exc:
                if exc.errno == errno.EXDEV:
                    raise CrossesMount() from None
                raise
        return self.os_open(name, flags | O_NOFOLLOW | O_CLOEXEC, cur)

    def _check_mount_name(self, held: HeldRoot, cur: int, name: str) -> None:
        """Error path only: is ``name`` in ``cur`` itself a foreign mount point (its open just failed)?"""
        try:
            fd = self.os_open(name, O_PATH | O_NOFOLLOW | O_CLOEXEC, cur)
        except OSError:
            return
        try:
            self.check_mount(held, fd)
        finally:
            os.close(fd)

    def _walk(
        self, held: HeldRoot, rel: tuple[str, ...], flags: int, follow: bool, *, assisted: bool
    ) -> tuple[int, tuple[str, ...]]:
        """Resolve ``rel`` beneath ``held.fd`` component by component (:meth:`_descend`, else :meth:`_walk_links`)."""
        if ".." not in rel:
            opened = self._descend(held, rel, flags, follow, assisted)
            if opened is not None:
                return opened[0], rel
        return self._walk_links(held, rel, flags, follow, assisted=assisted)

    def _descend(
        self,
        held: HeldRoot,
        rel: tuple[str, ...],
        flags: int,
        follow: bool,
        assisted: bool = False,
        want_stat: bool = False,
    ) -> tuple[int, os.stat_result | Facts | None] | None:
        """The common case, cheaply: every component a real directory. ``None`` on any symlink (then the full walk
        decides); other errors are final. On the hot path of the walk resolver: one frame, closing as it goes.
        Returns the fd and, when it took one (a followed ``O_PATH`` open, or ``want_stat``), its ``fstat`` or its
        :class:`~syscalls.Facts` (where the mount check needs a ``statx`` anyway, one call gives both).

        Without ``..`` and symlinks the walk only descends, and every mount crossed stays crossed (a mount is never
        mounted beneath itself), so one mount check on the final object covers every component.
        """
        root = cur = held.fd
        depth = 0
        try:
            if assisted:
                for name in rel[:-1]:
                    nxt = self._component(cur, name, DIR_PATH, True)
                    if cur != root:
                        os.close(cur)
                    cur = nxt
                    depth += 1
                fd = self._component(cur, rel[-1] if rel else ".", flags, True)
            else:
                dir_flags, leaf_flags = _DIR_WALK, flags | O_NOFOLLOW | O_CLOEXEC
                if self.portable:
                    dir_flags, leaf_flags = portable_flags(dir_flags), portable_flags(leaf_flags)
                for name in rel[:-1]:
                    nxt = os.open(name, dir_flags, dir_fd=cur)
                    if cur != root:
                        os.close(cur)
                    cur = nxt
                    depth += 1
                fd = os.open(rel[-1] if rel else ".", leaf_flags, dir_fd=cur)
        except OSError as exc:
            if not assisted and not self.cross_mounts:  # a failure inside, or on, a foreign mount says nothing
                if cur != root:
                    self.check_mount(held, cur)
                if rel and depth == len(rel) - 1:
                    self._check_mount_name(held, cur, rel[-1])
            if exc.errno in _LINK_ERRNOS:
                return None
            raise translate_error(exc) from None
        except ValueError:
            raise InvalidPath("control character") from None
        finally:
            if cur != root:
                os.close(cur)
        st: os.stat_result | Facts | None = None
        try:
            linkable = follow and flags & O_PATH and not flags & O_DIRECTORY  # may have opened a symlink itself
            check = not assisted and not self.cross_mounts  # one mount check covers every component (see above)
            mnt = held.mnt
            if check and mnt is not None and (linkable or want_stat) and not self.portable:
                facts = _o2.statx_facts(fd)  # the type and the mount id in one statx, not fstat + statx
                if facts is not None:
                    if linkable and stat.S_ISLNK(facts.st_mode):
                        os.close(fd)
                        return None
                    if facts.mnt_id != mnt:
                        self.check_mount(held, fd)  # the exact answer (st_dev where no mount id is known)
                    return fd, facts
            if linkable:
                st = os.fstat(fd)
                if stat.S_ISLNK(st.st_mode):
                    os.close(fd)
                    return None
            if check and (mnt is None or _o2.mount_id(fd) != mnt):
                self.check_mount(held, fd)  # the exact answer (st_dev where no mount id is known)
        except BaseException:
            os.close(fd)
            raise
        return fd, st

    def _walk_links(
        self, held: HeldRoot, rel: tuple[str, ...], flags: int, follow: bool, *, assisted: bool
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
                while pending and pending[-1] in NOOP:
                    pending.pop()
                cur = stack[-1] if stack else held.fd
                if not pending:
                    fd = self._component(cur, ".", flags, assisted)
                    if not assisted:
                        self.check_mount(held, fd)
                    result, fd = fd, -1
                    return result, tuple(names)
                name = pending.pop()
                if name == "..":
                    if not stack:
                        raise SymlinkEscape() if hops else OutsideRoots("outside roots")
                    os.close(stack.pop())
                    names.pop()
                    continue
                while pending and pending[-1] in NOOP:
                    pending.pop()
                last = not pending
                target: str | None = None
                try:
                    fd = self._component(cur, name, flags if last else DIR_PATH, assisted)
                except OSError as exc:
                    if exc.errno not in _LINK_ERRNOS or (last and not follow):
                        raise
                    target = self._readlink(name, cur)
                    if target is None:
                        raise
                else:
                    # O_PATH|O_NOFOLLOW opens a symlink itself instead of failing: look before trusting the fd.
                    link_fd = last and follow and flags & O_PATH and not flags & O_DIRECTORY
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
                        self.check_mount(held, fd)
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
                    tparts = split_path(target)
                    if tparts[: len(held.parts)] != list(held.parts):
                        raise SymlinkEscape()
                    close_all(stack)
                    names.clear()
                    pending.extend(reversed(tparts[len(held.parts) :]))
                else:
                    pending.extend(reversed(target.split("/")))
        except OSError as exc:
            if stack and not assisted:
                self.check_mount(held, stack[-1])  # a failure inside a foreign mount says nothing about it
            raise translate_error(exc) from None
        except ValueError:
            raise InvalidPath("control character") from None
        finally:
            close_all(stack)
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
