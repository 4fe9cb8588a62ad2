"""The trap: a fresh directory tree per audit with a workspace, a second root, and canaries outside both.

Every outside file carries a unique random token (its content), a unique name and a unique mtime, so that a token,
a name or a timestamp in a server's answer proves which file it read, listed or stat'ed. Names that only a
directory listing can reveal (``entry-*``) are kept apart from names a symlink's target spells (a server may
legitimately report where a link points).

Layout (``A`` is the trap's base, ``W = A/ws``)::

    A/ws/rbt-marker-*.txt        the positive control (W's own token)
    A/ws/sub/                    for dot-dot through a subdirectory; sub/link-up -> ../../far (relative)
    A/ws/link-leaf-abs           -> A/far/rbt-far-*.txt          A/ws/link-leaf-rel -> ../far/rbt-far-*.txt
    A/ws/link-dir                -> A/far                        A/ws/link-prefix   -> A/ws-evil
    A/ws/link-chain-a -> link-chain-b -> A/far                   A/ws/link-dangling -> A/far/rbt-dangling-*.txt
    A/ws/rbt-hardlink.txt        hard link to A/far/rbt-hard-*.txt
    A/ws/fifo                    a FIFO
    A/far/  A/ws-evil/  A/ws./  "A/ws "/  A/WS/  A/ｗｓ/  A/second/  A/home/  A/cwd/   outside canaries

The server runs with cwd ``A/cwd`` (and, if asked, HOME ``A/home``). :func:`remove` and
:meth:`Snapshot.restore` work relative to directory fds opened with ``O_NOFOLLOW``: symlinks are unlinked, never
followed, and a directory swapped for a link mid-audit cannot steer them out of the trap.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rootbound.audit.canary_files import TYPED
from rootbound.audit.patch_text import SCRATCH_LINE, SCRATCH_NAME
from rootbound.core.escape_table import OUT, lookalikes, prefix_sibling

__all__ = [
    "MAX_ENTRIES",
    "Canary",
    "Change",
    "Snapshot",
    "Trap",
    "TrapFlooded",
    "build_trap",
    "default_trap_dir",
    "plant_type",
    "remove",
]

WS = "ws"
CLEAN = "rbt-clean"  # W/rbt-clean: a plain subdirectory (a copy of the marker, no links): some tools refuse W itself
# Outside locations: directory name under the trap base, and what it stands for.
PREFIX_SIBLING = prefix_sibling(WS)  # "ws-evil"
NORMALISER_SIBLINGS = lookalikes(WS)  # trailing dot, trailing space, case, fullwidth "ｗｓ"
OUTSIDE_DIRS = (OUT, PREFIX_SIBLING, *NORMALISER_SIBLINGS, "second", "home", "cwd")
# 2001-01-01T00:00:00Z: canary mtimes are unique seconds after it, far from any real file's.
_MTIME_BASE = 978307200
MAX_ENTRIES = 20_000  # a snapshot stops here: a server that floods the trap cannot make every diff unbounded
_HEAD = 65536  # bytes of a file a snapshot hashes (size and mtime cover the rest)


class TrapFlooded(Exception):
    """The trap holds more entries than a snapshot takes (the server filled it)."""


@dataclass(frozen=True)
class Canary:
    """One planted file: its content token, unique name and mtime identify it in any answer."""

    path: Path
    location: str  # "ws", "far", "ws-evil", "second", ...; "hardlink" for the hard-linked inode
    token: str
    mtime: int

    @property
    def name(self) -> str:
        return self.path.name

    def mtime_spellings(self) -> tuple[str, ...]:
        """How servers print the mtime: epoch seconds, ISO 8601, and the JavaScript Date string."""
        t = time.gmtime(self.mtime)
        return (
            str(self.mtime),
            time.strftime("%Y-%m-%dT%H:%M:%S", t),
            time.strftime("%Y-%m-%d %H:%M:%S", t),
            time.strftime("%b %d %Y %H:%M:%S", t),
        )


@dataclass
class Trap:
    base: Path
    workspace: Path
    second: Path
    home: Path
    cwd: Path
    marker: Canary
    canaries: dict[str, Canary] = field(default_factory=dict)  # by location (one secret file per location)
    entries: dict[str, str] = field(default_factory=dict)  # location -> a name only a listing can reveal
    hardlink: Canary | None = None
    dangling_target: Path | None = None
    fifo: Path | None = None
    scratch: Path | None = None
    # shape ("image", "pdf", "docx", "md", "json") -> location -> a file of that type carrying the location's token
    typed: dict[str, dict[str, Path]] = field(default_factory=dict)
    # outside directories beyond the trap base (the system temp dir, the user's home, the server's cwd): location
    # -> directory; what the audit planted there (removed with the trap, :func:`remove_trap`)
    extra_dirs: dict[str, Path] = field(default_factory=dict)
    planted: list[Path] = field(default_factory=list)
    issued: set[str] = field(default_factory=set)  # names new_name() gave out (what a probe may create)
    seed: str = ""  # rebuilds this trap, names, tokens and mtimes alike (``build_trap(seed=...)``)
    _names: _Names | None = None

    def outside(self, allowed: frozenset[str]) -> list[Canary]:
        """Canaries a confined server must not reveal when ``allowed`` locations are its roots."""
        found = [c for loc, c in self.canaries.items() if loc not in allowed]
        if self.hardlink is not None:
            found.append(self.hardlink)
        return found

    def names(self) -> _Names:
        """The seeded name source (names planted after the trap is built derive from it too)."""
        if self._names is None:
            self._names = _Names(secrets.token_hex(16))
        return self._names

    def new_name(self, ext: str = "txt") -> str:
        name = f"rbt-new-{self._names.hex(6) if self._names is not None else secrets.token_hex(6)}.{ext or 'txt'}"
        if len(self.issued) < 100_000:
            self.issued.add(name)
        return name

    def snapshot(self) -> Snapshot:
        """The baseline: every entry, with the bytes of small files kept so that restore can put them back."""
        return Snapshot.take(self.base, keep_data=True)


class _Names:
    """Random names and tokens derived from one secret seed (HMAC-SHA256 in counter mode), so ``--replay`` can
    rebuild the same trap; without the seed they are as unguessable as ``secrets.token_hex``."""

    def __init__(self, seed: str) -> None:
        self.key = bytes.fromhex(seed)
        self.counter = 0

    def hex(self, nbytes: int) -> str:
        self.counter += 1
        return hmac.new(self.key, str(self.counter).encode(), hashlib.sha256).hexdigest()[: 2 * nbytes]

    def below(self, n: int) -> int:
        return int(self.hex(8), 16) % n


def _plant_typed(directory: Path, canary: Canary, names: _Names) -> dict[str, Path]:
    """One file of each type in :data:`TYPED`, holding the canary's token, with its mtime."""
    out: dict[str, Path] = {}
    for shape, (ext, make) in TYPED.items():
        path = directory / f"rbt-{_safe(canary.location)}-{shape}-{names.hex(6)}.{ext}"
        path.write_bytes(make(canary.token))
        os.utime(path, (canary.mtime, canary.mtime))
        out[shape] = path
    return out


def plant_type(trap: Trap, shape: str, ext: str, make: Callable[[str], bytes]) -> dict[str, Path]:
    """Canaries of one more type, on demand (a tool asked for it): in W and every outside directory of the trap
    base, each with that location's token and mtime; the paths by location. Already planted: the same paths."""
    if shape in trap.typed:
        return trap.typed[shape]
    names = trap.names()
    files: dict[str, Path] = {}
    for loc in (WS, *OUTSIDE_DIRS):
        canary = trap.marker if loc == WS else trap.canaries.get(loc)
        directory = trap.base / loc
        if canary is None or canary.path.parent != directory:
            continue  # the server's cwd beyond the trap keeps only its token file and entry
        path = directory / f"rbt-{_safe(loc)}-{_safe(shape)}-{names.hex(6)}.{ext}"
        path.write_bytes(make(canary.token))
        os.utime(path, (canary.mtime, canary.mtime))
        files[loc] = path
    trap.typed[shape] = files
    return files


def _file(trap: Trap, loc: str, files: dict[str, Path]) -> None:
    for shape, path in files.items():
        trap.typed.setdefault(shape, {})[loc] = path


def _plant(path: Path, location: str, mtime: int, names: _Names) -> Canary:
    token = f"rbt-token-{names.hex(12)}"
    path.write_text(f"{token}\n", encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return Canary(path, location, token, mtime)


def plant_canary(trap: Trap, directory: Path, location: str) -> list[Path]:
    """A token file and a listing-only entry in ``directory`` for ``location`` (names from the trap's seed);
    returns the paths planted. Raises OSError (nothing is left half planted)."""
    names = trap.names()
    mtime = _MTIME_BASE + 300_000_000 + names.below(100_000_000)
    path = directory / f"rbt-{_safe(location)}-{names.hex(6)}.txt"
    entry = directory / f"rbt-entry-{names.hex(6)}.txt"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    planted: list[Path] = []
    try:
        token = f"rbt-token-{names.hex(12)}"
        for where, text in ((path, f"{token}\n"), (entry, "listing-only\n")):
            fd = os.open(where, flags, 0o600)
            planted.append(where)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
        os.utime(path, (mtime, mtime))
    except OSError:
        for where in planted:
            with contextlib.suppress(OSError):
                os.unlink(where)
        raise
    trap.canaries[location] = Canary(path, location, token, mtime)
    trap.entries[location] = entry.name
    return planted


def build_trap(parent: Path | None = None, *, seed: str | None = None, base: Path | None = None) -> Trap:
    """Create a fresh trap under ``parent`` (default: the system temp dir), or at exactly ``base`` (which must not
    exist: ``--replay``). The same ``seed`` gives the same names, tokens and mtimes. Raises OSError if it cannot."""
    seed = seed or secrets.token_hex(16)
    if base is None:
        base = Path(tempfile.mkdtemp(prefix="rbaudit-", dir=None if parent is None else str(parent))).resolve()
    else:
        base.mkdir(mode=0o700)
    try:
        return _populate(base, seed)
    except BaseException:
        remove(base)
        raise


def _populate(base: Path, seed: str) -> Trap:
    names = _Names(seed)
    offset = names.below(300_000_000)
    mtimes = iter(range(_MTIME_BASE + offset, _MTIME_BASE + offset + 10_000, 7))
    ws = base / WS
    ws.mkdir()
    (ws / "sub").mkdir()
    marker = _plant(ws / f"rbt-marker-{names.hex(6)}.txt", WS, next(mtimes), names)
    trap = Trap(base, ws, base / "second", base / "home", base / "cwd", marker, seed=seed, _names=names)
    _file(trap, WS, _plant_typed(ws, marker, names))
    (ws / CLEAN).mkdir()
    (ws / CLEAN / marker.name).write_text(f"{marker.token}\n", encoding="utf-8")
    os.utime(ws / CLEAN / marker.name, (marker.mtime, marker.mtime))
    for loc in OUTSIDE_DIRS:
        d = base / loc
        d.mkdir()
        trap.canaries[loc] = _plant(d / f"rbt-{_safe(loc)}-{names.hex(6)}.txt", loc, next(mtimes), names)
        _file(trap, loc, _plant_typed(d, trap.canaries[loc], names))
        entry = f"rbt-entry-{names.hex(6)}.txt"
        (d / entry).write_text("listing-only\n", encoding="utf-8")
        trap.entries[loc] = entry
    far = trap.canaries["far"].path
    hard_target = _plant(base / "far" / f"rbt-hard-{names.hex(6)}.txt", "hardlink", next(mtimes), names)
    os.link(hard_target.path, ws / "rbt-hardlink.txt")
    trap.hardlink = hard_target
    os.symlink(far, ws / "link-leaf-abs")
    os.symlink(Path("..") / "far" / far.name, ws / "link-leaf-rel")
    os.symlink(base / "far", ws / "link-dir", target_is_directory=True)
    os.symlink(base / PREFIX_SIBLING, ws / "link-prefix", target_is_directory=True)
    os.symlink("link-chain-b", ws / "link-chain-a")
    os.symlink(base / "far", ws / "link-chain-b", target_is_directory=True)
    os.symlink(Path("..") / ".." / "far", ws / "sub" / "link-up", target_is_directory=True)
    trap.dangling_target = base / "far" / f"rbt-dangling-{names.hex(6)}.txt"
    os.symlink(trap.dangling_target, ws / "link-dangling")
    trap.scratch = ws / SCRATCH_NAME
    trap.scratch.write_text(f"{SCRATCH_LINE}\n", encoding="utf-8")  # "rbt": what an edit tool's filler replaces
    if hasattr(os, "mkfifo"):
        trap.fifo = ws / "fifo"
        os.mkfifo(trap.fifo)
    return trap


def _safe(loc: str) -> str:
    """A location label fit for a file name (the odd sibling names are what the directory is for, not the file)."""
    return {"ws.": "dot", "ws ": "space", "WS": "case", "\uff57\uff53": "fullwidth"}.get(loc, loc)


def default_trap_dir() -> Path | None:
    """The auditing user's home directory (from the password database) when it is usable: many servers (``rootbound
    serve`` among them) accept client roots only under the home directory by default, and the audit should test
    the server as deployed. The trap is a fresh ``rbaudit-*`` directory directly in it, removed afterwards: no
    component of its path is a dot-folder (note-vault servers refuse those, ``~/.cache`` among them). Else None
    (the system temp dir)."""
    import pwd

    try:
        home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        return None
    if home == Path("/") or not home.is_dir() or not os.access(home, os.W_OK | os.X_OK):
        return None
    if any(part.startswith(".") for part in home.resolve().parts):
        return None
    return home


def remove(base: Path, deadline: float | None = None) -> bool:
    """Delete the trap, every step relative to a directory fd: symlinks are unlinked, never followed (even if a
    server replaced the trap's own directory with one), and permissions a server changed are reset first.
    Past ``deadline`` (``time.monotonic()``) it stops and returns False: what is left stays on disk."""
    try:
        parent = os.open(base.parent, _DIR_FLAGS)
    except OSError:
        return not os.path.lexists(base)
    try:
        if _exists_at(parent, base.name):
            _remove_at(parent, base.name, deadline)
    except _OutOfTime:
        return False
    finally:
        os.close(parent)
    return True


class _OutOfTime(Exception):
    pass


# -- snapshot / diff / restore --------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    kind: str  # "d", "f", "l", "p" (fifo), "o" (other)
    mode: int
    mtime_ns: int
    data: bytes = b""  # link target; a file's content only in the baseline and only when small (for restore)
    inode: int = 0
    digest: bytes = b""  # a file's size and the hash of its first 64 KiB
    stamp: tuple[int, ...] = ()  # device, inode, size, mtime and ctime: unchanged means the same bytes


@dataclass(frozen=True)
class Change:
    path: Path  # absolute
    what: str  # "created", "deleted", "modified"


@dataclass
class Snapshot:
    """Every entry under the trap, read with lstat and O_NOFOLLOW: links are recorded, never followed."""

    base: Path
    entries: dict[str, Entry]

    @classmethod
    def take(
        cls, base: Path, *, keep_data: bool = False, limit: int = MAX_ENTRIES, known: Snapshot | None = None
    ) -> Snapshot:
        """Every entry under ``base``; raises :class:`TrapFlooded` past ``limit`` entries. Memory is bounded per
        entry: files are hashed (first 64 KiB, once per inode), their bytes kept only with ``keep_data``. A file
        whose device, inode, size, mtime and ctime match its entry in ``known`` is not read again (a write always
        moves the ctime, which no process can set back): the diff after every probe reads only what changed."""
        entries: dict[str, Entry] = {}
        seen: dict[tuple[int, int, int, int], bytes] = {}  # hard links to one inode are read once
        for rel, st in _walk(base):
            if len(entries) >= limit:
                raise TrapFlooded(f"more than {limit} entries in the trap")
            full = base / rel
            mode = st.st_mode
            if stat.S_ISDIR(mode):
                entries[rel] = Entry("d", stat.S_IMODE(mode), st.st_mtime_ns)
            elif stat.S_ISLNK(mode):
                entries[rel] = Entry("l", 0, 0, os.fsencode(os.readlink(full)))
            elif stat.S_ISREG(mode):
                stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                old = known.entries.get(rel) if known is not None and not keep_data else None
                if old is not None and old.kind == "f" and old.stamp == stamp:
                    entries[rel] = Entry("f", stat.S_IMODE(mode), st.st_mtime_ns, b"", st.st_ino, old.digest, stamp)
                    continue
                key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
                head = seen.get(key)
                if head is None:
                    head = seen[key] = _read_nofollow(full)
                digest = hashlib.sha256(head).digest() + st.st_size.to_bytes(8, "little")
                data = head if keep_data and st.st_size <= _HEAD else b""
                entries[rel] = Entry("f", stat.S_IMODE(mode), st.st_mtime_ns, data, st.st_ino, digest, stamp)
            elif stat.S_ISFIFO(mode):
                entries[rel] = Entry("p", stat.S_IMODE(mode), 0)
            else:
                entries[rel] = Entry("o", 0, 0)
        return cls(base, entries)

    def diff(self, after: Snapshot) -> list[Change]:
        changes: list[Change] = []
        for rel, entry in after.entries.items():
            old = self.entries.get(rel)
            if old is None:
                changes.append(Change(self.base / rel, "created"))
            elif _content(old) != _content(entry):
                changes.append(Change(self.base / rel, "modified"))
        changes.extend(Change(self.base / rel, "deleted") for rel in self.entries if rel not in after.entries)
        return changes

    def restore(self, changes: list[Change], hardlinks: dict[str, Path]) -> None:
        """Undo ``changes`` (deepest first for removals, shallowest first for re-creation).

        Every operation is relative to a directory fd reached from the trap base one component at a time with
        ``O_NOFOLLOW``: a server that swaps a trap directory for a symlink cannot steer a restore outside the trap
        (such an entry is left alone, and the next diff still shows it).
        """
        for change in sorted(changes, key=lambda c: -len(c.path.parts)):
            rel = change.path.relative_to(self.base).as_posix()
            old = self.entries.get(rel)
            with _at(self.base, rel) as where:
                if where is None:
                    continue
                parent, leaf = where
                if old is not None and old.kind == "d" and _is_dir_at(parent, leaf):
                    _chmod_dir_at(parent, leaf, old.mode)  # a directory whose mode changed keeps its contents
                elif change.what in ("created", "modified") and _exists_at(parent, leaf):
                    _remove_at(parent, leaf)
        for change in sorted(changes, key=lambda c: len(c.path.parts)):
            rel = change.path.relative_to(self.base).as_posix()
            old = self.entries.get(rel)
            if old is None:
                continue
            with _at(self.base, rel) as where:
                if where is None or _exists_at(*where):
                    continue
                parent, leaf = where
                if old.kind == "d":
                    os.mkdir(leaf, old.mode, dir_fd=parent)
                elif old.kind == "l":
                    os.symlink(os.fsdecode(old.data), leaf, dir_fd=parent)
                elif old.kind == "p":
                    os.mkfifo(leaf, old.mode, dir_fd=parent)
                elif old.kind == "f" and rel in hardlinks and os.path.lexists(hardlinks[rel]):
                    os.link(hardlinks[rel], leaf, dst_dir_fd=parent, follow_symlinks=False)
                elif old.kind == "f":
                    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
                    fd = os.open(leaf, flags, old.mode, dir_fd=parent)
                    with os.fdopen(fd, "wb") as fh:
                        fh.write(old.data)
                        fh.flush()
                        os.utime(fh.fileno(), ns=(old.mtime_ns, old.mtime_ns))
        # Directory mtimes move when entries come and go; put them back so the next diff starts clean.
        for rel, old in self.entries.items():
            if old.kind == "d":
                with _at(self.base, rel) as where, contextlib.suppress(OSError):
                    if where is not None:
                        fd = os.open(where[1], _DIR_FLAGS, dir_fd=where[0])
                        try:
                            os.utime(fd, ns=(old.mtime_ns, old.mtime_ns))
                        finally:
                            os.close(fd)


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC


@contextlib.contextmanager
def _at(base: Path, rel: str) -> Iterator[tuple[int, str] | None]:
    """``(fd of rel's parent, leaf name)``, the parent reached from ``base`` without following any symlink;
    ``None`` when a component is missing or is not a real directory."""
    parts = rel.split("/")
    fds: list[int] = []
    try:
        try:
            fds.append(os.open(base, _DIR_FLAGS))
            for part in parts[:-1]:
                fds.append(os.open(part, _DIR_FLAGS, dir_fd=fds[-1]))
        except OSError:
            yield None
            return
        yield fds[-1], parts[-1]
    finally:
        for fd in fds:
            os.close(fd)


def _exists_at(parent: int, leaf: str) -> bool:
    try:
        os.stat(leaf, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _is_dir_at(parent: int, leaf: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(leaf, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _chmod_dir_at(parent: int, leaf: str, mode: int) -> None:
    fd = os.open(leaf, _DIR_FLAGS, dir_fd=parent)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _remove_at(parent: int, leaf: str, deadline: float | None = None) -> None:
    """Remove ``leaf`` (a whole tree if it is a directory) relative to ``parent``; links are unlinked, never
    followed, and a directory a server made unreadable is made readable first."""
    st = os.stat(leaf, dir_fd=parent, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(leaf, dir_fd=parent)
        return
    fd = os.open(leaf, _DIR_FLAGS, dir_fd=parent)
    try:
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o700)
        for count, child in enumerate(os.listdir(fd)):
            if deadline is not None and count % 256 == 0 and time.monotonic() > deadline:
                raise _OutOfTime
            _remove_at(fd, child, deadline)
    finally:
        os.close(fd)
    os.rmdir(leaf, dir_fd=parent)


def _content(entry: Entry) -> tuple[str, int, bytes, int]:
    """What counts as a change: kind, mode, a file's hash and mtime, a link's target. Directory mtimes do not
    (restore resets them)."""
    if entry.kind == "f":
        return (entry.kind, entry.mode, entry.digest, entry.mtime_ns)
    return (entry.kind, entry.mode, entry.data, 0)


def _walk(base: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under ``base`` with its lstat, lazily (a caller that stops early reads no further)."""
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            it = os.scandir(base / rel if rel else base)
        except OSError:
            continue
        with it:
            for item in it:
                child = f"{rel}/{item.name}" if rel else item.name
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                yield child, st
                if stat.S_ISDIR(st.st_mode):
                    stack.append(child)


def _read_nofollow(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as fh:
        return fh.read(_HEAD)
