"""The coarse wall under the :class:`~rootbound.Boundary`: ``rootbound serve`` takes away its own access with Landlock.

The Boundary decides, per client, which paths a tool may touch; it is Python code, so a bug in it, in the SDK or in
a dependency would be an escape. Landlock is enforced by the kernel for the life of the process: after
:meth:`Sandbox.apply`, opening, listing, creating or removing anything outside the operator's DIRs (read-only
unless ``--writable``) and the interpreter's own files (read-only) fails with EACCES, and with ABI >= 4 the process
can bind only its serving port and connect nowhere over TCP. What it cannot cover is in docs/security.md,
"Defence in depth".

Applied before the first thread starts: Landlock restricts the calling thread and the threads it starts later, never
threads already running. Over HTTP, after everything serving needs is imported and the listening socket is bound.
Over stdio, before the SDK is imported (:attr:`Sandbox.loads_later`): a new stdio server's saved search indexes are
taken up while the SDK loads (issue 51), and the SDK's modules are read through the wall, as numpy's always were.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import stat
import sys
import sysconfig
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from rootbound.confine import landlock as ll
from rootbound.confine.fd_access import task_count
from rootbound.confine.write_domain import GRANTED

__all__ = ["Sandbox", "SandboxError"]

_READ: Final = ll.ACCESS_FS_READ_FILE | ll.ACCESS_FS_READ_DIR
# --writable: change files and directories beneath the DIRs; never make devices, fifos or sockets, never execute.
# REFER (ABI 2) lets an atomic replace rename between directories of the DIRs; TRUNCATE (ABI 3) lets a file be
# truncated in place. MAKE_SYM because Landlock counts moving a symlink as making one at its new name (move_file
# moves a link as itself); rootbound never calls symlink(), and a link's target is still checked by Landlock when
# anything is opened through it, so this widens no access. Same rights as the write domain
# (rootbound.confine.write_domain.GRANTED).
_WRITE: Final = GRANTED
# The search index's own cache folder (``Sandbox(cache=...)``): its files are written, mapped and removed there,
# never executed; nothing else of the user's cache directory is reachable.
_CACHE: Final = (
    _READ
    | ll.ACCESS_FS_WRITE_FILE
    | ll.ACCESS_FS_REMOVE_DIR
    | ll.ACCESS_FS_REMOVE_FILE
    | ll.ACCESS_FS_MAKE_DIR
    | ll.ACCESS_FS_MAKE_REG
    | ll.ACCESS_FS_TRUNCATE
)
# Imported before restricting, though the interpreter's files stay readable: what serving is certain to import
# lazily, so it does not depend on finding files after the restriction (a package installed outside the paths
# below would otherwise fail at its first use). Tool dependencies are imported by the tools module itself.
_PRELOAD_STDIO: Final = ("mcp.server.stdio",)
_PRELOAD_HTTP: Final = (
    "encodings.idna",
    "uvicorn.lifespan.on",
    "uvicorn.loops.auto",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.websockets.auto",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.http.httptools_impl",
)


class SandboxError(Exception):
    """The sandbox was asked for and could not be applied: serving without it would be a silent downgrade."""


class Sandbox:
    """What ``serve`` restricts itself to, decided at start; :meth:`apply` enforces it, once."""

    def __init__(
        self,
        dirs: Sequence[Path | int],
        *,
        writable: bool,
        listens: bool = False,
        enabled: bool = True,
        cache: Path | None = None,
    ) -> None:
        self.dirs = tuple(dirs)  # paths, or fds held open (the scan helper's: its wall is what the server holds)
        self.cache = cache  # the search index's folder for this process, read-write
        self.saved_fd: int | None = None  # the saved indexes' folder (held open), read-write: part of the cache
        self.then: list[Callable[[], None]] = []  # run once the process is restricted (or known not to be)
        self.listens = listens  # serving over TCP: its port stays bindable
        # Applied before the server's modules are imported (stdio): the native libraries they link stay loadable.
        self.loads_later = False
        # A server (its protocol stack imported first); the scan helper, which never loads it, says False.
        self.serves = True
        self.writable = writable
        self.enabled = enabled
        self.abi = ll.abi_version() if enabled else 0
        self.applied = False

    @property
    def active(self) -> bool:
        """Whether :meth:`apply` will restrict anything (Landlock available, not opted out)."""
        return self.enabled and self.abi > 0 and (bool(self.dirs) or ll.net_rights(self.abi) != 0)

    def describe(self) -> str:
        """One line for the startup message and ``list_roots``: what the kernel enforces, or why nothing."""
        if not self.enabled:
            return "off (--no-sandbox)"
        if self.abi == 0:
            return "unavailable (no Landlock in this kernel): the Boundary is the only wall"
        parts = [f"landlock ABI {self.abi}"]
        if self.dirs:
            parts.append("files: the DIRs " + ("read-write" if self.writable else "read-only"))
            if self.cache is not None:
                parts.append("the search index's cache folder read-write")

        else:
            parts.append("files: not restricted (no DIRs)")
        if ll.net_rights(self.abi):
            parts.append("TCP: no connect, bind only the serving port" if self.listens else "TCP: no bind, no connect")
        else:
            parts.append("TCP: not restricted (ABI < 4)")
        return ", ".join(parts)

    def apply(self, port: int | None = None) -> str:
        """Restrict this process (a no-op when inactive), then run :attr:`then` (what had to wait for it: threads);
        returns :meth:`describe`. Raises :class:`SandboxError`."""
        if not self.active or self.applied:
            self._then()
            return self.describe()
        if not self.loads_later and self.serves:
            _preload(_PRELOAD_HTTP if self.listens else _PRELOAD_STDIO)
        threads = _thread_count()
        if threads != 1:
            raise SandboxError(f"{threads} threads are running; Landlock would leave all but one unrestricted")
        handled_fs = ll.fs_rights(self.abi) if self.dirs else 0
        try:
            with ll.Ruleset(handled_fs, ll.net_rights(self.abi), ll.scopes(self.abi)) as ruleset:
                if handled_fs:
                    grant = _READ | (_WRITE if self.writable else 0)
                    for path in self.dirs:
                        _allow(ruleset, path, grant & handled_fs)
                    for path in _runtime_paths() + (_loader_paths() if self.loads_later else []):
                        _allow(ruleset, path, _READ, missing_ok=True)
                    if self.cache is not None:
                        _allow(ruleset, self.cache, _CACHE & handled_fs)
                    if self.saved_fd is not None:  # by its held fd: no name resolved again
                        ruleset.allow_path(self.saved_fd, _CACHE & handled_fs)
                    _allow(ruleset, Path("/dev/null"), ll.ACCESS_FS_READ_FILE | ll.ACCESS_FS_WRITE_FILE)
                if ruleset.handled_net and self.listens and port is not None:
                    ruleset.allow_port(port, ll.ACCESS_NET_BIND_TCP)
                ruleset.restrict_self()
        except OSError as error:
            raise SandboxError(f"Landlock refused the ruleset ({error.strerror})") from None
        self.applied = True
        self._then()
        return self.describe()

    def _then(self) -> None:
        waiting, self.then = self.then, []
        for call in waiting:
            call()


def _allow(ruleset: ll.Ruleset, path: Path | int, access: int, *, missing_ok: bool = False) -> None:
    """Grant ``access`` beneath ``path``, or beneath the object the fd ``path`` holds (never resolved again: a
    name renamed, removed or swapped for a link since it was opened changes nothing; the fd stays open)."""
    if isinstance(path, int):
        _allow_fd(ruleset, path, access)
        return
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        if missing_ok:
            return
        raise
    try:
        _allow_fd(ruleset, fd, access)
    finally:
        os.close(fd)


def _allow_fd(ruleset: ll.Ruleset, fd: int, access: int) -> None:
    if not stat.S_ISDIR(os.fstat(fd).st_mode):
        access &= ll.FILE_RIGHTS  # a rule on a file may only grant what applies to a file
    ruleset.allow_path(fd, access)


def _runtime_paths() -> list[Path]:
    """What the interpreter may still read: its standard library and packages, never the working directory.

    The working directory, and the script's directory when Python runs a script (what ``sys.path[0]`` is: under
    ``python -m`` it is the working directory, and the module's own folder is not on the path), are skipped by what
    they are, not by their place: a launcher may put its own folders first (the bundle's ``server/main.py`` puts
    ``lib/cp310`` there), and running ``serve`` from a home directory must not leave all of it readable. Under
    ``python -m rootbound`` the main module lies in rootbound's own folder, which stays readable.
    """
    found: list[str] = []
    scheme = sysconfig.get_paths()
    found += [scheme[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in scheme]
    found += [entry for entry in sys.path if entry and os.path.isabs(entry)]
    rootbound = sys.modules["rootbound"].__file__
    if rootbound:  # an editable install's source tree need not be on sys.path
        found.append(str(Path(rootbound).parent))
    skipped = {Path.cwd().resolve()}
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    if getattr(main, "__spec__", None) is None and isinstance(script, str) and os.path.isabs(script):
        skipped.add(Path(script).resolve().parent)
    paths: list[Path] = []
    for entry in found:
        path = Path(entry).resolve()
        if path.is_dir() and path not in paths and path not in skipped:
            paths.append(path)
    return paths


def _loader_paths() -> list[Path]:
    """What the dynamic loader reads to load a native module's libraries (``libstdc++``, ``libssl``, ``libgcc_s``):
    its cache and the directories of the C library already mapped into this process. Public files of the system,
    read-only; needed only when native modules are imported after the restriction (:attr:`Sandbox.loads_later`)."""
    paths = [Path("/etc/ld.so.cache")]
    try:
        with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
            mapped = {line.split(maxsplit=5)[-1].strip() for line in maps if ".so" in line}
    except OSError:
        return paths
    for name in sorted(mapped):
        base = os.path.basename(name)
        if base.startswith(("libc.so", "ld-linux", "libm.so")) and os.path.isabs(name):
            folder = str(Path(name).parent.resolve())
            twin = folder.removeprefix("/usr") if folder.startswith("/usr/") else "/usr" + folder  # unmerged /usr
            for each in (Path(folder), Path(twin)):
                if each not in paths and each != Path("/"):
                    paths.append(each)
    return paths


def _preload(names: Sequence[str]) -> None:
    for name in names:
        with contextlib.suppress(ImportError):  # optional accelerators (httptools, re2) may be absent
            importlib.import_module(name)


def _thread_count() -> int:
    count = task_count()
    if count is None:  # no /proc: trust Python's own count (it cannot see threads C code started)
        import threading

        return threading.active_count()
    return count
