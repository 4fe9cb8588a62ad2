"""RootedFS: file operations confined to a :class:`~rootbound.Boundary`, enforced at open time.

Why: a guard that answers "yes" and hands back a string invites the caller to reopen that string later
(check-then-open). Every method here maps the caller's path to a held root fd, opens beneath it (``openat2`` with
``RESOLVE_BENEATH``, or the ``O_NOFOLLOW`` component walk) and then works only on the fds it got. Nothing is
reopened by name from the process root, and every failure is a :class:`~rootbound.RootsError` with a fixed reason.

Policies (also in ``docs/security.md``):

* **Writes** are atomic: a fresh temp name (``O_CREAT|O_EXCL|O_NOFOLLOW``) in the target's directory, ``fsync``,
  then ``rename`` over the final name, all relative to the held parent fd. A final name that is a symlink is
  followed only when it resolves to an existing file inside the same root; a dangling one is refused
  (:class:`~rootbound.DanglingSymlink`). ``exclusive=True`` creates with ``O_EXCL`` and refuses any existing
  entry, links included.
* **Hard links** (``hardlinks=``): ``"read-only"`` (default) reads a file with ``st_nlink > 1`` but refuses to
  replace it; ``"refuse"`` also refuses to read it; ``"allow"`` does neither. A path check cannot see where the
  other names of an inode live.
* **walk / glob / grep** never follow symlinks (they are reported, not entered), never cross mounts unless the
  boundary allows it, and have entry, depth, size and match limits.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from collections.abc import Callable, Collection, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, TypeAlias

from . import _openat2 as _o2
from .boundary import Boundary, Resolver, _HeldRoot, translate_error
from .errors import (
    DanglingSymlink,
    HardLinked,
    InvalidPath,
    InvalidPattern,
    IsADirectory,
    LimitExceeded,
    NotADirectory,
    NotAFile,
    NotText,
    OutsideRoots,
    PathExists,
    PathNotFound,
    ReadOnly,
    RootsError,
    RootsUnavailable,
    SymlinkEscape,
    TooLarge,
)

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_MAX_READ",
    "Entry",
    "GrepMatch",
    "GrepResult",
    "HardlinkPolicy",
    "RootedFS",
    "SearchResult",
]

HardlinkPolicy: TypeAlias = Literal["read-only", "refuse", "allow"]
EntryKind: TypeAlias = Literal["file", "dir", "symlink", "other"]

DEFAULT_MAX_READ: Final = 16 * 1024 * 1024
DEFAULT_MAX_ENTRIES: Final = 200_000
DEFAULT_MAX_DEPTH: Final = 64
DEFAULT_MAX_RESULTS: Final = 10_000
DEFAULT_MAX_MATCHES: Final = 1_000
DEFAULT_GREP_FILE_SIZE: Final = 4 * 1024 * 1024
DEFAULT_MAX_LINE: Final = 1_000
MAX_PATTERN_LENGTH: Final = 1_024
_BINARY_SNIFF: Final = 8192

_O_PATH: Final = getattr(os, "O_PATH", os.O_RDONLY)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_O_NOCTTY: Final = getattr(os, "O_NOCTTY", 0)
# O_NONBLOCK: a FIFO planted in a root must not hang a read; the type check after fstat then refuses it.
_READ: Final = os.O_RDONLY | _O_NONBLOCK | _O_NOCTTY
_DIR_READ: Final = os.O_RDONLY | _O_DIRECTORY
_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
_GLOB_MAGIC: Final = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Entry:
    """One directory entry found by :meth:`RootedFS.walk` (``path`` is canonical root + components)."""

    path: Path
    kind: EntryKind


@dataclass(frozen=True)
class GrepMatch:
    """One matching line: its 1-based number and its text (decoded with replacement, cut to a maximum length)."""

    path: Path
    line_number: int
    line: str


@dataclass(frozen=True)
class GrepResult:
    """The matches of :meth:`RootedFS.grep`; ``truncated`` when it stopped at ``max_matches`` (more may exist)."""

    matches: tuple[GrepMatch, ...]
    truncated: bool
    files_searched: int
    files_skipped: int

    @property
    def files(self) -> tuple[Path, ...]:
        """Paths with at least one match, in the order found."""
        return tuple(dict.fromkeys(match.path for match in self.matches))


@dataclass(frozen=True)
class SearchResult:
    """What :meth:`RootedFS.search` found, sorted; ``truncated`` when more matched than ``max_results``.

    ``found`` holds the canonical paths as strings (what a tool prints); ``paths`` builds ``Path`` objects on demand,
    which for thousands of hits is a quarter of the search's cost.
    """

    found: tuple[str, ...]
    truncated: bool

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(map(Path, self.found))


def _kind(entry: os.DirEntry[str]) -> EntryKind:
    if entry.is_symlink():
        return "symlink"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "other"


def _translate_component(component: str) -> str:
    """One glob component to a regex that never matches ``/``: ``*``, ``?``, ``[...]`` / ``[!...]``."""
    out: list[str] = []
    i, n = 0, len(component)
    while i < n:
        ch = component[i]
        i += 1
        if ch == "*":
            if not out or out[-1] != "[^/]*":
                out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            j = i
            if j < n and component[j] in "!^":
                j += 1
            if j < n and component[j] == "]":
                j += 1
            while j < n and component[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(ch))
                continue
            body = component[i:j]
            i = j + 1
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            escaped = "".join(c if c == "-" else re.escape(c) for c in body if c != "/")
            out.append(f"[^/{escaped}]" if negate else f"[{escaped}]")
        else:
            out.append(re.escape(ch))
    return "".join(out)


def _name_matcher(pattern: str) -> Callable[[str], object]:
    """A predicate for one-component glob ``pattern``; ``*.ext``, ``prefix*`` and literals skip the regex engine."""
    body = pattern[1:] if pattern.startswith("*") else pattern[:-1] if pattern.endswith("*") else pattern
    if not _GLOB_MAGIC.search(body):
        if pattern == "*":
            return lambda name: True
        if pattern.startswith("*"):
            return lambda name: name.endswith(body)
        if pattern.endswith("*"):
            return lambda name: name.startswith(body)
        return lambda name: name == body
    return re.compile(_translate_component(pattern), re.DOTALL).fullmatch


@dataclass(frozen=True)
class _Glob:
    prefix: tuple[str, ...]
    regex: re.Pattern[str]
    levels: tuple[re.Pattern[str] | None, ...]  # per-level name patterns before the first "**" (for pruning)
    depth: int | None  # deepest level that can match, None with "**"


def _compile_glob(pattern: str) -> _Glob:
    if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidPattern()
    if pattern[0] == "/" or any(ch < " " or ch == "\x7f" for ch in pattern):
        raise InvalidPattern()
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise InvalidPattern()
    literal = 0
    while literal < len(parts) - 1 and parts[literal] != "**" and not _GLOB_MAGIC.search(parts[literal]):
        literal += 1
    prefix, rest = tuple(parts[:literal]), parts[literal:]
    pieces: list[str] = []
    levels: list[re.Pattern[str] | None] = []
    recursive = False
    for index, part in enumerate(rest):
        last = index == len(rest) - 1
        if part == "**":
            recursive = True
            pieces.append(".*" if last else "(?:[^/]+/)*")
            continue
        regex = _translate_component(part)
        if not recursive:
            levels.append(re.compile(regex))
        pieces.append(regex if last else regex + "/")
    try:
        compiled = re.compile("".join(pieces), re.DOTALL)
    except re.error:
        raise InvalidPattern() from None
    return _Glob(prefix, compiled, tuple(levels), None if recursive else len(rest))


class RootedFS:
    """Confined file operations on a :class:`~rootbound.Boundary` (which stays owned by the caller).

    Paths are what :meth:`Boundary.resolve` accepts (relative to the first root, absolute, or ``file:`` URIs).
    ``resolver`` overrides the boundary's kernel path (``"walk"`` forces the portable fallback), ``read_only``
    refuses every write, ``hardlinks`` sets the hard-link policy, ``max_read`` the default read limit.
    """

    def __init__(
        self,
        boundary: Boundary,
        *,
        resolver: Resolver | None = None,
        read_only: bool = False,
        hardlinks: HardlinkPolicy = "read-only",
        max_read: int = DEFAULT_MAX_READ,
    ) -> None:
        if hardlinks not in ("read-only", "refuse", "allow"):
            raise ValueError("hardlinks must be 'read-only', 'refuse' or 'allow'")
        if resolver is None:
            mode: str = boundary.resolver
        elif resolver == "walk":
            mode = "walk"
        elif resolver == "openat2" or (resolver == "auto" and _o2.available()):
            if not _o2.available():
                raise RootsUnavailable("openat2 not available")
            mode = "openat2"
        elif resolver == "auto":
            mode = "walk"
        else:
            raise ValueError("resolver must be 'auto', 'openat2' or 'walk'")
        self.boundary = boundary
        self.resolver: Literal["openat2", "walk"] = "openat2" if mode == "openat2" else "walk"
        self.read_only = read_only
        self.hardlinks: HardlinkPolicy = hardlinks
        self.max_read = max_read

    def __repr__(self) -> str:
        return f"RootedFS({self.boundary!r}, resolver={self.resolver!r}, read_only={self.read_only})"

    # -- reading -----------------------------------------------------------------------------------------------

    def read_bytes(self, path: object, *, max_size: int | None = None) -> bytes:
        """The content of a regular file, refused if over ``max_size`` (default: the ``max_read`` limit)."""
        boundary = self.boundary
        boundary._acquire()
        try:
            held, rel = boundary._locate(path)
            fd = boundary._open(held, rel, _READ, mode=self.resolver)
            try:
                return self._read_fd(fd, self.max_read if max_size is None else max_size)
            except OSError as exc:
                raise translate_error(exc) from None
            finally:
                os.close(fd)
        finally:
            boundary._release()

    def read_text(
        self, path: object, *, encoding: str = "utf-8", errors: str = "strict", max_size: int | None = None
    ) -> str:
        """:meth:`read_bytes` decoded; undecodable content is :class:`~rootbound.NotText` (never echoed)."""
        data = self.read_bytes(path, max_size=max_size)
        try:
            return data.decode(encoding, errors)
        except UnicodeDecodeError:
            raise NotText() from None

    def read_range(self, path: object, offset: int = 0, length: int | None = None) -> tuple[bytes, int]:
        """``(up to length bytes from offset, file size)``: reads part of a file of any size (``pread``).

        ``length`` defaults to, and is capped at, the ``max_read`` limit.
        """
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must be >= 0")
        want = self.max_read if length is None else min(length, self.max_read)
        boundary = self.boundary
        boundary._acquire()
        try:
            held, rel = boundary._locate(path)
            fd = boundary._open(held, rel, _READ, mode=self.resolver)
            try:
                st = os.fstat(fd)
                self._check_file(st, writing=False)
                chunks: list[bytes] = []
                got = 0
                while got < want:
                    chunk = os.pread(fd, want - got, offset + got)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    got += len(chunk)
                return b"".join(chunks), st.st_size
            except OSError as exc:
                raise translate_error(exc) from None
            finally:
                os.close(fd)
        finally:
            boundary._release()

    def _read_fd(self, fd: int, limit: int) -> bytes:
        st = os.fstat(fd)
        if st.st_nlink != 1 or not stat.S_ISREG(st.st_mode):
            self._check_file(st, writing=False)
        size = st.st_size
        if size > limit:
            raise TooLarge()
        first = os.read(fd, size + 1 if size < limit else limit + 1)
        if len(first) == size:
            return first  # exactly the size fstat saw: done (the usual case, one read)
        return self._read_rest(fd, first, limit)

    @staticmethod
    def _read_rest(fd: int, first: bytes, limit: int) -> bytes:
        """Keep reading after ``first`` until EOF; more than ``limit`` bytes in all is :class:`TooLarge`."""
        chunks = [first]
        total = len(first)
        while chunks[-1]:
            if total > limit:
                raise TooLarge()
            chunk = os.read(fd, min(limit + 1 - total, 65536))
            total += len(chunk)
            chunks.append(chunk)
        if total > limit:
            raise TooLarge()
        return b"".join(chunks)

    def _check_file(self, st: os.stat_result, *, writing: bool) -> None:
        """The fstat after opening: type must fit, and the hard-link policy applies to regular files."""
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectory()
        if not stat.S_ISREG(mode):
            raise NotAFile()
        if st.st_nlink > 1 and (self.hardlinks == "refuse" or (writing and self.hardlinks == "read-only")):
            raise HardLinked()

    def stat(self, path: object = ".", *, follow_symlinks: bool = True) -> os.stat_result:
        """``fstat`` of the object beneath its root (of the link itself with ``follow_symlinks=False``)."""
        boundary = self.boundary
        boundary._acquire()
        try:
            held, rel = boundary._locate(path)
            fd = boundary._open(held, rel, _O_PATH, follow=follow_symlinks, mode=self.resolver)
            try:
                return os.fstat(fd)
            finally:
                os.close(fd)
        finally:
            boundary._release()

    def exists(self, path: object) -> bool:
        """Whether ``path`` resolves to something inside the boundary (never raises)."""
        try:
            self.stat(path)
        except Exception:
            return False
        return True

    def listdir(self, path: object = ".") -> list[str]:
        """Sorted entry names of a directory beneath a root."""
        boundary = self.boundary
        boundary._acquire()
        try:
            held, rel = boundary._locate(path)
            fd = boundary._open(held, rel, _DIR_READ, mode=self.resolver)
            try:
                return sorted(os.listdir(fd))
            except OSError as exc:
                raise translate_error(exc) from None
            finally:
                os.close(fd)
        finally:
            boundary._release()

    def scandir(self, path: object = ".") -> list[Entry]:
        """The entries of one directory, sorted by name, typed from ``d_type`` (symlinks reported, not followed)."""
        boundary = self.boundary
        boundary._acquire()
        try:
            _, fd, base = self._start(path, _DIR_READ)
            try:
                parent = Path(base)  # joining a name to a parsed parent costs a third of parsing the whole path
                with os.scandir(fd) as listing:
                    entries = [Entry(parent / entry.name, _kind(entry)) for entry in listing]
            except OSError as exc:
                raise translate_error(exc) from None
            finally:
                os.close(fd)
            entries.sort(key=lambda entry: entry.path.name)
            return entries
        finally:
            boundary._release()

    # -- writing -----------------------------------------------------------------------------------------------

    def write_bytes(self, path: object, data: bytes, *, exclusive: bool = False, mode: int = 0o666) -> Path:
        """Write ``data`` atomically (temp + rename beside the target); returns the canonical path written.

        ``exclusive=True`` creates the file with ``O_EXCL`` (refusing any existing entry, symlinks included).
        A new file gets ``mode`` minus the umask; a replaced file keeps its permission bits.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("data must be bytes")
        boundary = self.boundary
        boundary._acquire()
        try:
            held, rel = boundary._locate(path)
            self._check_writable(held, rel)
            parent_fd, name, parent_parts, existing = self._write_target(held, rel, exclusive)
            try:
                if exclusive:
                    self._create(parent_fd, name, data, mode)
                else:
                    self._replace(parent_fd, name, data, mode, existing)
            except OSError as exc:
                raise translate_error(exc) from None
            finally:
                os.close(parent_fd)
            return boundary._display(held, (*parent_parts, name))
        finally:
            boundary._release()

    def write_text(
        self, path: object, text: str, *, encoding: str = "utf-8", exclusive: bool = False, mode: int = 0o666
    ) -> Path:
        """:meth:`write_bytes` of ``text`` encoded."""
        return self.write_bytes(path, text.encode(encoding), exclusive=exclusive, mode=mode)

    def _check_writable(self, held: _HeldRoot, rel: tuple[str, ...]) -> None:
        if held.is_file and rel:
            raise OutsideRoots("outside roots")  # nothing lies beneath a file root
        if self.read_only or held.is_file:
            raise ReadOnly()
        if not rel:
            raise IsADirectory()
        if rel[-1] == "..":
            raise InvalidPath("final component is not a name")

    def _write_target(
        self, held: _HeldRoot, rel: tuple[str, ...], exclusive: bool
    ) -> tuple[int, str, tuple[str, ...], os.stat_result | None]:
        """``(parent fd, name, parent components, lstat of the name or None)`` for a write to ``rel``."""
        boundary = self.boundary
        name = rel[-1]
        parent_fd, parent_parts = boundary._open_parts(held, rel[:-1], _DIR_READ, mode=self.resolver)
        try:
            existing = self._lstat(parent_fd, name)
            if existing is not None and stat.S_ISLNK(existing.st_mode) and not exclusive:
                # Follow the link only to an existing object inside this root; write beside *that* object.
                os.close(parent_fd)
                parent_fd = -1
                try:
                    target_fd, target = boundary._open_parts(held, (*parent_parts, name), _O_PATH, mode=self.resolver)
                except PathNotFound:
                    raise DanglingSymlink() from None
                os.close(target_fd)
                if not target:
                    raise IsADirectory()
                name = target[-1]
                parent_fd, parent_parts = boundary._open_parts(held, target[:-1], _DIR_READ, mode=self.resolver)
                existing = self._lstat(parent_fd, name)
                if existing is not None and stat.S_ISLNK(existing.st_mode):
                    raise SymlinkEscape()  # swapped while we looked: not provably inside
            if existing is not None and not stat.S_ISLNK(existing.st_mode) and not exclusive:
                self._check_file(existing, writing=True)
        except BaseException:
            if parent_fd >= 0:
                os.close(parent_fd)
            raise
        return parent_fd, name, parent_parts, existing

    @staticmethod
    def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise translate_error(exc) from None

    @staticmethod
    def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)

    def _create(self, parent_fd: int, name: str, data: bytes | bytearray | memoryview, mode: int) -> None:
        try:
            fd = os.open(name, _CREATE, mode, dir_fd=parent_fd)
        except FileExistsError:
            raise PathExists() from None
        try:
            self._write_all(fd, data)
        finally:
            os.close(fd)
        os.fsync(parent_fd)

    def _replace(
        self,
        parent_fd: int,
        name: str,
        data: bytes | bytearray | memoryview,
        mode: int,
        existing: os.stat_result | None,
    ) -> None:
        temp = f".rootbound-{secrets.token_hex(8)}.tmp"
        fd = os.open(temp, _CREATE, 0o600 if existing is not None else mode, dir_fd=parent_fd)
        try:
            try:
                if existing is not None and stat.S_ISREG(existing.st_mode):
                    os.fchmod(fd, stat.S_IMODE(existing.st_mode) & 0o777)
                self._write_all(fd, data)
            finally:
                os.close(fd)
            os.replace(temp, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent_fd)
            raise
        os.fsync(parent_fd)

    def mkdir(self, path: object, *, parents: bool = False, exist_ok: bool = False, mode: int = 0o777) -> Path:
        """Create a directory beneath a root (``parents`` creates missing ancestors); returns its canonical path."""
        boundary = self.boundary
        boundary._acquire()
        try:
            held, rel = boundary._locate(path)
            if held.is_file and rel:
                raise OutsideRoots("outside roots")
            if self.read_only or held.is_file:
                raise ReadOnly()
            if not rel:
                if exist_ok:
                    return held.info.path
                raise PathExists()
            for end in range(1 if parents else len(rel), len(rel) + 1):
                last = end == len(rel)
                try:
                    self._mkdir_one(held, rel[:end], mode)
                except PathExists:
                    if last and not exist_ok:
                        raise
                    try:  # it exists: acceptable only as a directory (an in-root symlink to one is followed)
                        fd, _ = boundary._open_parts(held, rel[:end], _O_PATH | _O_DIRECTORY, mode=self.resolver)
                    except NotADirectory:
                        raise PathExists() from None
                    os.close(fd)
            fd, parts = boundary._open_parts(held, rel, _O_PATH | _O_DIRECTORY, mode=self.resolver)
            os.close(fd)
            return boundary._display(held, parts)
        finally:
            boundary._release()

    def _mkdir_one(self, held: _HeldRoot, rel: tuple[str, ...], mode: int) -> None:
        if rel[-1] == "..":
            raise InvalidPath("final component is not a name")
        parent_fd, _ = self.boundary._open_parts(held, rel[:-1], _O_PATH | _O_DIRECTORY, mode=self.resolver)
        try:
            os.mkdir(rel[-1], mode, dir_fd=parent_fd)
        except FileExistsError:
            raise PathExists() from None
        except OSError as exc:
            raise translate_error(exc) from None
        finally:
            os.close(parent_fd)

    # -- trees ---------------------------------------------------------------------------------------------------

    def _start(self, path: object, flags: int) -> tuple[_HeldRoot, int, str]:
        """Open the start of a tree operation: ``(held root, fd, display prefix ending in '/')``."""
        held, rel = self.boundary._locate(path)
        return self._start_at(held, rel, flags)

    def _scan(
        self,
        held: _HeldRoot,
        fd: int,
        *,
        max_entries: int,
        max_depth: int,
        descend: Callable[[int, str], bool] | None = None,
    ) -> Iterator[tuple[str, os.DirEntry[str], int, int]]:
        """Depth-first over the directory ``fd`` (owned: closed here): ``(prefix, entry, dir fd, level)``.

        Entries come from ``scandir`` on held fds (``d_type``, no per-entry open). A subdirectory is entered by
        opening its name ``O_NOFOLLOW`` relative to its parent's fd and checking it is the entry that was listed
        on the root's mount (:meth:`_open_entry`), so a symlink or mount swapped in after the listing is skipped.
        """
        stack: list[tuple[int, str, int, Iterator[tuple[str, int]]]] = []
        count = 0
        prefix, level = "", 1
        try:
            while True:
                subdirs: list[tuple[str, int]] = []
                with os.scandir(fd) as listing:
                    for entry in listing:
                        count += 1
                        if count > max_entries:
                            raise LimitExceeded()
                        if (
                            level < max_depth
                            and entry.is_dir(follow_symlinks=False)
                            and (descend is None or descend(level, entry.name))
                        ):
                            subdirs.append((entry.name, entry.inode()))
                        yield prefix, entry, fd, level
                stack.append((fd, prefix, level, iter(subdirs)))
                fd = -1
                while stack:
                    parent_fd, parent_prefix, parent_level, names = stack[-1]
                    item = next(names, None)
                    if item is None:
                        os.close(parent_fd)
                        stack.pop()
                        continue
                    child = self._open_entry(held, parent_fd, item[0], item[1], _DIR_READ)
                    if child is None:
                        continue  # vanished, swapped for a symlink, a mount point, unreadable: not entered
                    fd = child[0]
                    prefix, level = parent_prefix + item[0] + "/", parent_level + 1
                    break
                else:
                    return
        finally:
            if fd >= 0:
                os.close(fd)
            for parent_fd, *_ in stack:
                os.close(parent_fd)

    def _open_entry(
        self, held: _HeldRoot, dir_fd: int, name: str, inode: int, flags: int
    ) -> tuple[int, os.stat_result] | None:
        """Open a listed entry of a held directory, or ``None`` if it is not (still) that entry on the root's mount.

        ``O_NOFOLLOW`` on a single name: no symlink is followed. Mounts: ``readdir`` reports the inode of the
        mount *point* while ``fstat`` reports the mounted object, so an open that crossed a mount shows a
        different inode (or device). Equal inode and device prove no crossing for free; any difference gets the
        exact check (mount id), so an odd filesystem costs time, never a wrong answer.
        """
        try:
            fd = os.open(name, flags | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=dir_fd)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not self.boundary.cross_mounts and (st.st_ino != inode or st.st_dev != held.info.dev):
                self.boundary._check_mount(held, fd)
        except (OSError, RootsError):
            os.close(fd)
            return None
        return fd, st

    def walk(
        self,
        path: object = ".",
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_depth: int = DEFAULT_MAX_DEPTH,
        prune: Collection[str] = (),
    ) -> Generator[Entry, None, None]:
        """Every entry below ``path`` (depth first, unspecified order within a directory); symlinks not entered.

        Directories named in ``prune`` are listed but not entered. Raises :class:`~rootbound.LimitExceeded` after
        ``max_entries`` entries.
        """
        pruned = frozenset(prune)
        descend = (lambda level, name: name not in pruned) if pruned else None
        boundary = self.boundary
        boundary._acquire()
        try:
            held, fd, base = self._start(path, _DIR_READ)
            scan = self._scan(held, fd, max_entries=max_entries, max_depth=max_depth, descend=descend)
            for prefix, entry, _, _ in scan:
                yield Entry(Path(base + prefix + entry.name), _kind(entry))
        except OSError as exc:
            raise translate_error(exc) from None
        finally:
            boundary._release()

    def glob(
        self,
        pattern: str,
        path: object = ".",
        *,
        max_results: int = DEFAULT_MAX_RESULTS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> list[Path]:
        """Sorted canonical paths below ``path`` matching ``pattern``.

        ``*``, ``?`` and ``[...]`` match within one component (dot files included); ``**`` matches any number of
        components. Patterns are relative: absolute patterns and ``..`` are :class:`~rootbound.InvalidPattern`.
        Symlinks are matched by name but never entered.
        """
        spec = _compile_glob(pattern)
        levels = spec.levels
        depth = max_depth if spec.depth is None else min(spec.depth, max_depth)

        def descend(level: int, name: str) -> bool:
            return level > len(levels) or (levels[level - 1] or _ANY).fullmatch(name) is not None

        boundary = self.boundary
        boundary._acquire()
        try:
            held, rel = boundary._locate(path)
            held, fd, base = self._start_at(held, rel + spec.prefix, _DIR_READ)
            matcher = spec.regex.fullmatch
            found: list[str] = []
            for prefix, entry, _, _ in self._scan(held, fd, max_entries=max_entries, max_depth=depth, descend=descend):
                relative = prefix + entry.name
                if matcher(relative) is not None:
                    if len(found) >= max_results:
                        raise LimitExceeded()
                    found.append(base + relative)
            return [Path(p) for p in sorted(found)]
        except OSError as exc:
            raise translate_error(exc) from None
        finally:
            boundary._release()

    def search(
        self,
        pattern: str,
        path: object = ".",
        *,
        max_results: int = DEFAULT_MAX_RESULTS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> SearchResult:
        """Entries whose *name* matches a one-component glob at any depth below ``path`` (like ``find -name``).

        Unlike :meth:`glob`, going over ``max_results`` is not an error: the first ``max_results`` (in walk order)
        are returned, sorted, with ``truncated=True``.
        """
        if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN_LENGTH or "/" in pattern:
            raise InvalidPattern()
        if any(ch < " " or ch == "\x7f" for ch in pattern):
            raise InvalidPattern()
        try:
            matcher = _name_matcher(pattern)
        except re.error:
            raise InvalidPattern() from None
        boundary = self.boundary
        boundary._acquire()
        try:
            held, fd, base = self._start(path, _DIR_READ)
            found: list[str] = []
            truncated = False
            for prefix, entry, _, _ in self._scan(held, fd, max_entries=max_entries, max_depth=max_depth):
                if matcher(entry.name):
                    if len(found) >= max_results:
                        truncated = True
                        break
                    found.append(base + prefix + entry.name)
            found.sort()
            return SearchResult(tuple(found), truncated)
        except OSError as exc:
            raise translate_error(exc) from None
        finally:
            boundary._release()

    def _start_at(self, held: _HeldRoot, rel: tuple[str, ...], flags: int) -> tuple[_HeldRoot, int, str]:
        fd, parts = self.boundary._open_parts(held, rel, flags, mode=self.resolver)
        return held, fd, held.prefix + ("/".join(parts) + "/" if parts else "")

    def grep(
        self,
        pattern: str,
        path: object = ".",
        *,
        regex: bool = False,
        ignore_case: bool = False,
        include: str | None = None,
        files_only: bool = False,
        binary: bool = False,
        max_matches: int = DEFAULT_MAX_MATCHES,
        max_file_size: int = DEFAULT_GREP_FILE_SIZE,
        max_line_length: int = DEFAULT_MAX_LINE,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> GrepResult:
        """Lines matching ``pattern`` (a literal, or a Python regex with ``regex=True``) in files below ``path``.

        Works on bytes (``ignore_case`` folds ASCII only). ``include`` filters file names by a glob. Files over
        ``max_file_size``, binary files (a NUL in the first 8 KiB, unless ``binary``), symlinks, special files and
        files refused by the hard-link policy are skipped and counted. ``files_only`` stops at the first match in
        each file (``grep -l``). Stops after ``max_matches`` (``truncated``).
        """
        if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN_LENGTH:
            raise InvalidPattern()
        needle = pattern.encode("utf-8", "surrogateescape")
        search: re.Pattern[bytes] | None = None
        if regex or ignore_case:
            try:
                search = re.compile(
                    needle if regex else re.escape(needle), re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
                )
            except re.error:
                raise InvalidPattern() from None
        name_filter = None
        if include is not None:
            if not include or len(include) > MAX_PATTERN_LENGTH or "/" in include:
                raise InvalidPattern()
            try:
                name_filter = re.compile(_translate_component(include), re.DOTALL).fullmatch
            except re.error:
                raise InvalidPattern() from None
        boundary = self.boundary
        boundary._acquire()
        try:
            held, rel = boundary._locate(path)
            fd, parts = boundary._open_parts(held, rel, _READ, mode=self.resolver)
            state = _GrepState(needle, search, files_only, binary, max_matches, max_file_size, max_line_length)
            try:
                st = os.fstat(fd)
            except OSError:
                os.close(fd)
                raise
            if not stat.S_ISDIR(st.st_mode):
                try:
                    self._grep_fd(fd, st, str(boundary._display(held, parts)), state)
                finally:
                    os.close(fd)
                return state.result()
            base = held.prefix + ("/".join(parts) + "/" if parts else "")
            # The hot loop (one pass per file of a tree): the steps of _open_entry and _grep_fd, inlined.
            scan = self._scan(held, fd, max_entries=max_entries, max_depth=max_depth)
            root_dev, check_mounts, check_mount = held.info.dev, not boundary.cross_mounts, boundary._check_mount
            open_, fstat, read, close, is_reg = os.open, os.fstat, os.read, os.close, stat.S_ISREG
            flags = _READ | _O_NOFOLLOW | _O_CLOEXEC
            for prefix, entry, dir_fd, _ in scan:
                if not entry.is_file(follow_symlinks=False):
                    if entry.is_symlink():
                        state.skipped += 1
                    continue
                name = entry.name
                if name_filter is not None and name_filter(name) is None:
                    continue
                try:
                    file_fd = open_(name, flags, dir_fd=dir_fd)
                except OSError:
                    state.skipped += 1
                    continue
                try:
                    st = fstat(file_fd)
                    if check_mounts and (st.st_ino != entry.inode() or st.st_dev != root_dev):
                        check_mount(held, file_fd)  # see _open_entry: a different inode may be a mount
                    if st.st_nlink != 1 or not is_reg(st.st_mode):
                        self._check_file(st, writing=False)
                    size = st.st_size
                    if size > max_file_size:
                        state.skipped += 1
                        continue
                    data = read(file_fd, size + 1)
                    if len(data) != size:  # changed since fstat, or no size reported: read to EOF, bounded
                        data = self._read_rest(file_fd, data, max_file_size)
                except (OSError, RootsError):
                    state.skipped += 1
                    continue
                finally:
                    close(file_fd)
                if not binary and data.find(b"\x00", 0, _BINARY_SNIFF) >= 0:
                    state.skipped += 1
                    continue
                state.searched += 1
                state.scan(data, base + prefix + name)
                if state.full:
                    break
            return state.result()
        except OSError as exc:
            raise translate_error(exc) from None
        finally:
            boundary._release()

    def _grep_fd(self, fd: int, st: os.stat_result, display: str, state: _GrepState) -> None:
        if st.st_nlink != 1 or not stat.S_ISREG(st.st_mode):
            try:
                self._check_file(st, writing=False)
            except RootsError:
                state.skipped += 1
                return
        size = st.st_size
        limit = state.max_file_size
        if size > limit:
            state.skipped += 1
            return
        try:
            data = os.read(fd, size + 1)
            if len(data) != size:  # it changed since fstat, or reports no size (/proc): read to EOF, bounded
                data = self._read_rest(fd, data, limit)
        except (OSError, RootsError):
            state.skipped += 1
            return
        if not state.binary and data.find(b"\x00", 0, _BINARY_SNIFF) >= 0:
            state.skipped += 1
            return
        state.searched += 1
        if state.search is None and state.needle not in data:
            return  # most files do not match: one memchr-speed test instead of a method call
        state.scan(data, display)


_ANY: Final = re.compile(".*", re.DOTALL)


class _GrepState:
    """Accumulates grep matches and counters across files."""

    __slots__ = (
        "binary",
        "files_only",
        "full",
        "matches",
        "max_file_size",
        "max_line",
        "max_matches",
        "needle",
        "search",
        "searched",
        "skipped",
    )

    def __init__(
        self,
        needle: bytes,
        search: re.Pattern[bytes] | None,
        files_only: bool,
        binary: bool,
        max_matches: int,
        max_file_size: int,
        max_line: int,
    ) -> None:
        self.needle = needle
        self.search = search
        self.files_only = files_only
        self.binary = binary
        self.max_matches = max_matches
        self.max_file_size = max_file_size
        self.max_line = max_line
        self.matches: list[GrepMatch] = []
        self.searched = 0
        self.skipped = 0
        self.full = max_matches <= 0

    def scan(self, data: bytes, display: str) -> None:
        """Record matching lines of one file (one record per line, like grep)."""
        path: Path | None = None  # built on the first match only: most files do not match
        end = len(data)
        pos = 0
        line_number = 1
        counted = 0
        while not self.full:
            if self.search is None:
                start = data.find(self.needle, pos)
                if start < 0:
                    return
            else:
                found = self.search.search(data, pos)
                if found is None:
                    return
                start = found.start()
            line_start = data.rfind(b"\n", 0, start) + 1
            line_end = data.find(b"\n", start)
            if line_end < 0:
                line_end = end
            line_number += data.count(b"\n", counted, line_start)
            counted = line_start
            text = data[line_start : min(line_end, line_start + 4 * self.max_line)].decode("utf-8", "replace")
            if path is None:
                path = Path(display)
            self.matches.append(GrepMatch(path, line_number, text[: self.max_line]))
            self.full = len(self.matches) >= self.max_matches
            if self.files_only:
                return
            pos = line_end + 1
            if pos > end:
                return

    def result(self) -> GrepResult:
        return GrepResult(tuple(self.matches), self.full, self.searched, self.skipped)
