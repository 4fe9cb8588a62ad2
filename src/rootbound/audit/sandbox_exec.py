"""The sandbox's entry module: set the sandbox up on this process, then ``execvp`` the server (see
:mod:`rootbound.audit.sandbox`, which builds the command line)::

    python -I sandbox_exec.py --landlock-module PATH [--hide DIR]... [--show PATH]... [--write PATH]...
                              [--no-landlock] -- SERVER ARGV...

Run by path, with the standard library only (landlock.py is loaded from its file): nothing of the server's
environment or of the rootbound package is imported before the server starts. Any failure to set up what was
asked ends the process with exit code 125 and one line on stderr, ``rootbound sandbox: <what>: <why>``: the server
never runs with less confinement than asked.

Steps: a mount namespace (``CLONE_NEWNS`` as root, with ``CLONE_NEWUSER`` otherwise, mapping our uid and gid to
themselves), every mount made private (nothing propagates back); each shown path under a hidden directory opened
(``O_PATH``) before that directory is covered by an empty tmpfs, then bound back at the same place through
``/proc/self/fd/N``; the cwd entered again (so it is the bound one); Landlock (read and execute beneath ``/``,
every right beneath the writable paths); then the server runs as this process's child (``fork``, ``execvp``), and
when it ends its exit status is the last line on stderr, ``rootbound sandbox: the server exited with status N``
(or ``... was killed by signal N``), and this process's exit code.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import importlib.util
import os
import signal
import stat
import sys
from pathlib import Path
from typing import Any, NoReturn

SETUP_FAILED = 125
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
O_PATH = getattr(os, "O_PATH", 0o10000000)


class SetupError(Exception):
    """One step of the set-up failed: the message is the whole line after ``rootbound sandbox: ``."""


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"rootbound sandbox: {message}\n")
    sys.stderr.flush()
    os._exit(SETUP_FAILED)


def _libc() -> ctypes.CDLL:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError as exc:  # pragma: no cover - a Linux without a loadable libc
        raise SetupError(f"no libc to call unshare/mount ({exc})") from exc


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(err)} ({errno.errorcode.get(err, err)})")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def unshare_mounts(libc: ctypes.CDLL) -> str:
    """A private mount namespace for this process; returns how (``mount`` or ``user+mount``)."""
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0 and libc.unshare(ctypes.c_int(CLONE_NEWNS)) == 0:
        how = "mount"
    else:
        _check(libc.unshare(ctypes.c_int(CLONE_NEWUSER | CLONE_NEWNS)), "cannot create a user and mount namespace")
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        except OSError as exc:
            raise SetupError(f"cannot map the user namespace's ids: {exc.strerror}") from exc
        how = "user+mount"
    flags = ctypes.c_ulong(MS_REC | MS_PRIVATE)
    _check(libc.mount(None, b"/", None, flags, None), "cannot make the mounts private")
    return how


def _under(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def _plan(hide: list[Path], show: list[Path]) -> list[tuple[Path, list[Path]]]:
    """For each hidden directory, the shown paths under it (outermost only). A shown path that would reveal a
    hidden directory (it is one, or holds one) is a bad policy."""
    plan: list[tuple[Path, list[Path]]] = []
    for hidden in hide:
        if hidden == Path("/"):
            raise SetupError("bad policy: cannot hide /")
        if not hidden.is_dir():
            raise SetupError(f"bad policy: hidden directory {hidden} does not exist")
        for other in hide:
            if other != hidden and _under(hidden, other):
                raise SetupError(f"bad policy: hidden directory {hidden} is inside hidden {other}")
        inside: list[Path] = []
        for path in show:
            if _under(hidden, path):
                raise SetupError(f"bad policy: shown {path} would reveal the hidden directory {hidden}")
            if _under(path, hidden) and not any(_under(path, p) for p in inside):
                inside = [p for p in inside if not _under(p, path)] + [path]
        plan.append((hidden, inside))
    return plan


def cover(libc: ctypes.CDLL, hidden: Path, shown: list[Path]) -> None:
    """An empty tmpfs over ``hidden`` (same owner and mode), then each of ``shown`` bound back at its place."""
    fds: list[tuple[Path, int, bool]] = []
    try:
        for path in shown:
            try:
                fd = os.open(path, O_PATH | os.O_CLOEXEC)
            except OSError as exc:
                raise SetupError(f"bad policy: cannot open shown {path}: {exc.strerror}") from exc
            fds.append((path, fd, stat.S_ISDIR(os.fstat(fd).st_mode)))
        st = os.stat(hidden)
        options = f"mode={stat.S_IMODE(st.st_mode):o}".encode()
        _check(libc.mount(b"tmpfs", os.fsencode(hidden), b"tmpfs", ctypes.c_ulong(MS_NOSUID | MS_NODEV), options),
               f"cannot cover {hidden} with a tmpfs")  # fmt: skip
        for path, fd, is_dir in fds:
            parent = hidden
            for part in path.relative_to(hidden).parts[:-1]:
                parent = parent / part
                if not parent.exists():
                    os.mkdir(parent, 0o755)
            if is_dir:
                os.mkdir(path, 0o755)
            else:
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
            source = f"/proc/self/fd/{fd}".encode()
            flags = ctypes.c_ulong(MS_BIND | MS_REC)
            _check(libc.mount(source, os.fsencode(path), None, flags, None), f"cannot show {path}")
    finally:
        for _path, fd, _is_dir in fds:
            os.close(fd)


def _load_landlock(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("_rootbound_landlock", path)
    if spec is None or spec.loader is None:
        raise SetupError(f"cannot load the Landlock module {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (OSError, ImportError, SyntaxError) as exc:
        raise SetupError(f"cannot load the Landlock module {path} ({exc})") from exc
    return module


def confine_writes(landlock: Any, writable: list[Path]) -> None:
    """Landlock: read and execute beneath ``/``, every right beneath each of ``writable`` (existing paths only)."""
    abi = int(landlock.abi_version())
    if abi < 1:
        raise SetupError("Landlock asked for, but the kernel has no Landlock (--no-landlock to go without)")
    handled = int(landlock.fs_rights(abi))
    read = landlock.ACCESS_FS_READ_FILE | landlock.ACCESS_FS_READ_DIR | 1  # 1: ACCESS_FS_EXECUTE
    try:
        ruleset = landlock.Ruleset(handled)
    except OSError as exc:
        raise SetupError(f"cannot create a Landlock ruleset: {exc.strerror}") from exc
    with ruleset:
        for path, rights in [(Path("/"), read), *((p, handled) for p in writable)]:
            try:
                fd = os.open(path, O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # a writable path that does not exist (yet) grants nothing
            except OSError as exc:
                raise SetupError(f"cannot open {path} for a Landlock rule: {exc.strerror}") from exc
            try:
                if not stat.S_ISDIR(os.fstat(fd).st_mode):
                    rights &= int(landlock.FILE_RIGHTS)
                ruleset.allow_path(fd, rights)
            except OSError as exc:
                raise SetupError(f"cannot add a Landlock rule for {path}: {exc.strerror}") from exc
            finally:
                os.close(fd)
        try:
            ruleset.restrict_self()
        except OSError as exc:
            raise SetupError(f"cannot enforce Landlock: {exc.strerror}") from exc


def _parse(argv: list[str]) -> tuple[dict[str, list[Path]], bool, str, list[str]]:
    lists: dict[str, list[Path]] = {"--hide": [], "--show": [], "--write": []}
    landlock, module = True, ""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            command = argv[i + 1 :]
            if not command:
                raise SetupError("bad policy: no command after --")
            return lists, landlock, module, command
        if arg == "--no-landlock":
            landlock = False
            i += 1
            continue
        if arg not in (*lists, "--landlock-module") or i + 1 >= len(argv):
            raise SetupError(f"bad policy: unexpected argument {arg!r}")
        value = argv[i + 1]
        if arg == "--landlock-module":
            module = value
        elif not os.path.isabs(value):
            raise SetupError(f"bad policy: {arg} {value!r} is not an absolute path")
        else:
            lists[arg].append(Path(os.path.normpath(value)))
        i += 2
    raise SetupError("bad policy: no '--' before the command")


def setup(argv: list[str]) -> list[str]:
    """Set the sandbox up on this process; returns the command to exec."""
    lists, use_landlock, module, command = _parse(argv)
    plan = _plan(lists["--hide"], lists["--show"])
    landlock = _load_landlock(module) if use_landlock else None
    if landlock is None and use_landlock:
        raise SetupError("bad policy: Landlock asked for without --landlock-module")
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    libc = _libc()
    unshare_mounts(libc)
    for hidden, shown in plan:
        cover(libc, hidden, shown)
    if cwd is not None:
        try:
            os.chdir(cwd)  # the path again: inside a hidden directory, it is now the bound directory (or nothing)
        except OSError as exc:
            raise SetupError(f"the working directory {cwd} is hidden and not shown ({exc.strerror})") from exc
    if landlock is not None:
        confine_writes(landlock, lists["--write"])
    return command


EXITED = "rootbound sandbox: the server exited with status "
KILLED = "rootbound sandbox: the server was killed by signal "
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _exec(command: list[str]) -> NoReturn:
    try:
        os.execvp(command[0], command)  # noqa: S606 - the server's own argv, as the audit would run it
    except OSError as exc:
        _fail(f"cannot execute {command[0]}: {exc.strerror}")


def run_and_report(command: list[str]) -> NoReturn:
    """Run the server as this process's child (in the sandbox already set up) and wait for it; when it ends, its
    exit status (or the signal that ended it) is the last line on stderr and this process's own exit code. The
    client that started this process owns it, not the server: without this line a server that fails to start is
    reported without its status. No copy of the server's stdin or stdout stays open here (the client sees end of
    file when the server exits); a signal sent to this process is passed on to the server."""
    sys.stdout.flush()
    try:
        pid = os.fork()
    except OSError as exc:
        _fail(f"cannot start the server: {exc.strerror}")
    if pid == 0:
        _exec(command)
    for fd in (0, 1):
        os.close(fd)

    def forward(signum: int, _frame: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for signum in _FORWARDED:
        signal.signal(signum, forward)
    _, status = os.waitpid(pid, 0)  # retried on EINTR (PEP 475): a forwarded signal does not end the wait
    if os.WIFSIGNALED(status):
        line, code = f"{KILLED}{os.WTERMSIG(status)}", 128 + os.WTERMSIG(status)
    else:
        code = os.waitstatus_to_exitcode(status)
        line = f"{EXITED}{code}"
    with contextlib.suppress(OSError):
        os.write(2, (line + "\n").encode())
    os._exit(code)


def main(argv: list[str] | None = None) -> NoReturn:
    try:
        command = setup(sys.argv[1:] if argv is None else argv)
    except SetupError as exc:
        _fail(str(exc))
    run_and_report(command)


if __name__ == "__main__":
    main()
