"""Run the server under test in a sandbox: a hostile server cannot read the auditor's home or write the auditor's
files, while everything the audit judges by stays where the audit looks.

The sandbox is a **command prefix**. :func:`sandboxed` turns the server's argv into
``python -I .../sandbox_exec.py <policy> -- argv``; that entry module (:mod:`rootbound.audit.sandbox_exec`) sets the
sandbox up on itself and then ``execvp``\\ s the server, so the server keeps its pid, its process group and its
stdio, and the audit launches it exactly as before. Two layers:

* **mount namespace** (``unshare(CLONE_NEWNS)`` as root, ``CLONE_NEWUSER | CLONE_NEWNS`` otherwise): each hidden
  directory (by default the auditor's home, from ``$HOME`` and the password database) is covered by a fresh, empty
  tmpfs, and only the shown paths are bound back into it at the same place: the trap, the canaries the audit plants
  beside it (``~/rbaudit-home-*``), the server's cwd and the server's own install when they live there. The tmpfs is
  the server's **private home**: its start-up and state files (``~/.cache``, ``~/.code-index``) land there, never in
  the real home, and vanish with the server; they are noise, not findings. ``$HOME`` keeps its value, so a server that
  grants ``~`` by default still reaches the canary in ``~/rbaudit-home-*``: the escape classes are unchanged.
* **Landlock** (when the kernel has it): the server may read and execute anywhere it can see, and write only in
  the trap, the canaries, its cwd, the temp dir, ``/dev``, ``/proc`` and its private home. The auditor's other files
  (a checkout, a database) cannot be changed.

What differs inside, by design: the auditor's home is empty but for what is shown (the server cannot read
``~/.ssh``, and its writes to ``~`` vanish with it); the trap and canaries under the home are bind mounts, so a
rename or hard link between them and another mount (``/tmp``, a cwd elsewhere) fails with ``EXDEV`` (within the
trap it works; ``shutil.move`` falls back to copying); a fanotify mark on the original *mount* does not see the
server's accesses through a bind mount (inotify and ``FAN_MARK_FILESYSTEM`` do); a server that needs more of the
home (``npx``/``uvx`` caches in ``~/.npm``, ``~/.cache/uv``) fails to start unless those are shown, or the audit runs
with ``--no-sandbox``.

The entry module fails closed: a sandbox that was asked for and cannot be set up ends the process with exit code
:data:`SETUP_FAILED` and one line on stderr (``rootbound sandbox: ...``); the server never runs unconfined by
accident. :func:`sandbox_support` is the cheap probe the caller runs first (once, cached) to decide, and to say in
the report (:func:`report_line`), whether the sandbox is on.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "EXEC_MODULE",
    "SETUP_FAILED",
    "SandboxPolicy",
    "default_policy",
    "install_roots",
    "landlock_reason",
    "policy_args",
    "report_line",
    "sandbox_support",
    "sandboxed",
    "status_line",
]

SETUP_FAILED = 125  # the entry module's exit code when the sandbox cannot be set up (as env(1) and docker use it)
EXEC_MODULE = Path(__file__).with_name("sandbox_exec.py")
_LANDLOCK_FILE = Path(__file__).resolve().parent.parent / "confine" / "landlock.py"
# Always writable under Landlock: device nodes (/dev/null, /dev/shm) and /proc/self (some runtimes write there).
_SYSTEM_WRITABLE = ("/dev", "/proc")


@dataclass(frozen=True)
class SandboxPolicy:
    """What the server sees and may change. Paths are absolute.

    ``hide``: directories each covered by a private, empty tmpfs (the auditor's home); ``show``: paths inside a
    hidden directory bound back at the same place (outside every hidden directory they are visible anyway);
    ``writable``: where Landlock lets the server write (everything visible stays readable); ``landlock``: whether
    to enforce that at all (False: the mount namespace alone)."""

    hide: tuple[Path, ...]
    show: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    landlock: bool = True
    notes: tuple[str, ...] = field(default=(), compare=False)  # why something was left out (for the report)

    def layers(self) -> str:
        return "mount namespace + Landlock" if self.landlock else "mount namespace"


def _real_homes(env: Mapping[str, str]) -> list[Path]:
    homes: list[Path] = []
    candidates = [env.get("HOME", "")]
    with contextlib.suppress(KeyError):  # a uid without a passwd entry
        candidates.append(pwd.getpwuid(os.getuid()).pw_dir)
    for raw in candidates:
        if not raw or not os.path.isabs(raw):
            continue
        home = Path(os.path.realpath(raw))
        if home != Path("/") and home.is_dir() and home not in homes:
            homes.append(home)
    return homes


def _venv_base(venv: Path) -> list[Path]:
    """A venv's base interpreter prefix (``home = .../bin`` in ``pyvenv.cfg``): its standard library lives there."""
    out: list[Path] = []
    cfg = venv / "pyvenv.cfg"
    if cfg.is_file():
        for line in cfg.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and os.path.isabs(value.strip()):
                out.append(Path(os.path.realpath(value.strip())).parent)
    return out


def _package_tree(path: Path) -> list[Path]:
    """What a file of an install needs around it: the directory holding its ``node_modules``, its venv (and the
    venv's base prefix), the prefix of a ``bin/`` it is in, else its own directory."""
    for parent in path.parents:
        if parent.name == "node_modules":
            return [parent.parent]
        if (parent / "pyvenv.cfg").is_file():
            return [parent, *_venv_base(parent)]
    if path.parent.name in ("bin", "sbin") and path.parent.parent != Path("/"):
        return [path.parent.parent]
    return [path.parent]


def _interpreter(path: Path, env: Mapping[str, str]) -> str | None:
    """The interpreter a ``#!`` line names (through ``/usr/bin/env NAME``), or None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    return shutil.which(words[0], path=env.get("PATH", os.defpath)) if words else None


def install_roots(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> list[Path]:
    """The server's own install, as far as its command shows it: for the resolved executable, the interpreter its
    ``#!`` line names, and every argument that names an existing file, the package tree around it (both the path
    as spelled and with links resolved: a venv's ``bin/python`` links to its base). Plus ``PYTHONPATH`` and
    ``NODE_PATH``."""
    if not argv:
        return []
    files: list[Path] = []
    exe = shutil.which(argv[0], path=env.get("PATH", os.defpath))
    if exe is not None:
        files.append(Path(os.path.abspath(exe)))
    for arg in argv[1:]:
        if arg.startswith("-") or "\0" in arg:
            continue
        path = Path(arg) if os.path.isabs(arg) else cwd / arg
        if path.is_file():
            files.append(Path(os.path.abspath(path)))
    for path in list(files):
        shebang = _interpreter(path, env)
        if shebang is not None:
            files.append(Path(os.path.abspath(shebang)))
    roots: list[Path] = []
    for path in files:
        roots += _package_tree(path)
        roots += _package_tree(Path(os.path.realpath(path)))
    for var in ("PYTHONPATH", "NODE_PATH"):
        for entry in env.get(var, "").split(os.pathsep):
            if entry and os.path.isabs(entry) and os.path.exists(entry):
                roots.append(Path(os.path.realpath(entry)))
    return _dedupe(Path(os.path.realpath(r)) for r in roots)


def _dedupe(paths: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        if path not in out:
            out.append(path)
    return out


def landlock_reason() -> str | None:
    """Why Landlock cannot be used here (None: it can). A syscall, no process."""
    try:
        from rootbound.confine import landlock
    except ImportError as exc:  # pragma: no cover - a broken install
        return f"Landlock module unavailable ({exc})"
    return None if landlock.abi_version() >= 1 else "the kernel has no Landlock"


def default_policy(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    trap: Path,
    canaries: Iterable[Path] = (),
    hide: Iterable[Path] | None = None,
    show: Iterable[Path] = (),
    auditor_env: Mapping[str, str] | None = None,
) -> SandboxPolicy:
    """The audit's policy: hide the auditor's home (``$HOME`` of ``auditor_env``, default this process's, and the
    password database's; ``hide`` overrides), show and let the server write the trap, the canary directories and
    its cwd, show its install (read-only under Landlock, found on ``env``'s PATH) and ``show``. The server's own
    ``$HOME`` (``env``) may point elsewhere, e.g. into the trap (``--trap-home``): that is not hidden."""
    planted = [Path(os.path.realpath(p)) for p in (trap, *canaries, cwd)]
    if hide is None:
        homes = _real_homes(os.environ if auditor_env is None else auditor_env)
        hidden = [h for h in homes if not any(p == h or p in h.parents for p in planted)]  # home inside the trap
    else:
        hidden = [Path(os.path.realpath(h)) for h in hide]
    visible = _dedupe([*planted, *install_roots(argv, env, cwd), *(Path(os.path.realpath(p)) for p in show)])
    system = [Path(p) for p in _SYSTEM_WRITABLE]
    writable = _dedupe([*planted, Path(os.path.realpath(tempfile.gettempdir())), *system, *hidden])
    return SandboxPolicy(hide=tuple(hidden), show=tuple(visible), writable=tuple(writable),
                         landlock=landlock_reason() is None)  # fmt: skip


def policy_args(policy: SandboxPolicy) -> list[str]:
    """The entry module's arguments for ``policy`` (everything before ``--``)."""
    args: list[str] = []
    for flag, paths in (("--hide", policy.hide), ("--show", policy.show), ("--write", policy.writable)):
        for path in paths:
            args += [flag, str(path)]
    if not policy.landlock:
        args.append("--no-landlock")
    return args


def _bootstrap() -> list[str]:
    # -I: the server's PYTHON* variables and the user's site-packages do not reach the entry module. The entry
    # module is run by path and loads landlock.py by path: importing the rootbound package is not needed.
    return [sys.executable, "-I", str(EXEC_MODULE), "--landlock-module", str(_LANDLOCK_FILE)]


def sandboxed(argv: Sequence[str], env: Mapping[str, str], policy: SandboxPolicy) -> tuple[list[str], dict[str, str]]:
    """The command that runs ``argv`` inside ``policy``'s sandbox, and its environment (unchanged: ``$HOME`` keeps
    its path, which inside is the private tmpfs). ``argv[0]`` is resolved on ``env``'s PATH here, so that a command
    that does not exist still fails to start (FileNotFoundError) rather than as a server that exits."""
    if not argv:
        raise ValueError("empty command")
    exe = shutil.which(argv[0], path=env.get("PATH", os.defpath))
    if exe is None:
        raise FileNotFoundError(2, "No such file or directory", argv[0])
    return [*_bootstrap(), *policy_args(policy), "--", exe, *argv[1:]], dict(env)


@functools.cache
def sandbox_support() -> str | None:
    """None when this kernel lets the entry module set up the mount namespace (probed once, in a child process that
    does exactly that on a throw-away policy), else the reason, one line."""
    if sys.platform != "linux":
        return f"needs Linux (this is {sys.platform})"
    with tempfile.TemporaryDirectory(prefix="rbaudit-sbprobe-") as scratch:
        hidden = Path(scratch, "home")
        shown = hidden / "shown"
        shown.mkdir(parents=True)
        probe = SandboxPolicy(hide=(hidden,), show=(shown,), writable=(shown,), landlock=False)
        command = [*_bootstrap(), *policy_args(probe), "--", "/bin/true"]
        try:
            done = subprocess.run(command, capture_output=True, timeout=20, cwd=scratch, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"the sandbox probe did not run ({exc})"
    if done.returncode == 0:
        return None
    text = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return (text[-1] if text else f"the sandbox probe exited {done.returncode}").removeprefix("rootbound sandbox: ")


def status_line(off_reason: str | None) -> str:
    """The report's line for a run whose servers were started sandboxed (``off_reason`` None) or not."""
    if off_reason is not None:
        return f"sandbox: off: {off_reason}"
    layers = "mount namespace + Landlock" if landlock_reason() is None else "mount namespace"
    return f"sandbox: on ({layers}): the server saw the trap, the canaries and its own install, not your home"


def report_line(policy: SandboxPolicy | None, off_reason: str | None = None) -> str:
    """The report's line: ``sandbox: on (mount namespace + Landlock)`` or ``sandbox: off: <reason>``."""
    if policy is None:
        return f"sandbox: off: {off_reason or 'not requested (--no-sandbox)'}"
    return f"sandbox: on ({policy.layers()})"
