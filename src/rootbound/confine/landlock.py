"""ctypes wrappers for Linux Landlock (``landlock_create_ruleset``, ``landlock_add_rule``, ``landlock_restrict_self``).

Why: Landlock (Linux >= 5.13) lets an unprivileged process take away its own access to the file system (and, from
ABI 4, to TCP bind/connect) for the rest of its life; no later bug in Python code can give it back. Python has no
binding; the PyPI ``landlock`` package is a pre-release (1.0.0.dev5) last published in 2025, and the syscalls are
three numbers and three structs, so ctypes (like ``_openat2``) costs less than a dependency.

Only mechanism lives here: the ABI probe, the rights each ABI knows, and a :class:`Ruleset` that adds rules and
restricts the calling thread. Which paths and ports to allow is policy: ``rootbound.workspace.sandbox``.
Failures raise :class:`OSError` with the kernel's errno.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from typing import Final

__all__ = [
    "ACCESS_FS_READ_DIR",
    "ACCESS_FS_READ_FILE",
    "ACCESS_FS_WRITE_FILE",
    "ACCESS_NET_BIND_TCP",
    "ACCESS_NET_CONNECT_TCP",
    "FILE_RIGHTS",
    "Ruleset",
    "abi_version",
    "fs_rights",
    "net_rights",
    "restrict_thread",
    "scopes",
]

# Filesystem rights (include/uapi/linux/landlock.h), with the ABI that introduced each.
ACCESS_FS_EXECUTE: Final = 1 << 0
ACCESS_FS_WRITE_FILE: Final = 1 << 1
ACCESS_FS_READ_FILE: Final = 1 << 2
ACCESS_FS_READ_DIR: Final = 1 << 3
ACCESS_FS_REMOVE_DIR: Final = 1 << 4
ACCESS_FS_REMOVE_FILE: Final = 1 << 5
ACCESS_FS_MAKE_CHAR: Final = 1 << 6
ACCESS_FS_MAKE_DIR: Final = 1 << 7
ACCESS_FS_MAKE_REG: Final = 1 << 8
ACCESS_FS_MAKE_SOCK: Final = 1 << 9
ACCESS_FS_MAKE_FIFO: Final = 1 << 10
ACCESS_FS_MAKE_BLOCK: Final = 1 << 11
ACCESS_FS_MAKE_SYM: Final = 1 << 12
ACCESS_FS_REFER: Final = 1 << 13  # ABI 2
ACCESS_FS_TRUNCATE: Final = 1 << 14  # ABI 3
ACCESS_FS_IOCTL_DEV: Final = 1 << 15  # ABI 5
ACCESS_NET_BIND_TCP: Final = 1 << 0  # ABI 4
ACCESS_NET_CONNECT_TCP: Final = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET: Final = 1 << 0  # ABI 6
SCOPE_SIGNAL: Final = 1 << 1  # ABI 6

# The rights that make sense on a non-directory; the kernel refuses a rule on a file granting any other.
FILE_RIGHTS: Final = (
    ACCESS_FS_EXECUTE | ACCESS_FS_WRITE_FILE | ACCESS_FS_READ_FILE | ACCESS_FS_TRUNCATE | ACCESS_FS_IOCTL_DEV
)

_CREATE_RULESET_VERSION: Final = 1 << 0
_RULE_PATH_BENEATH: Final = 1
_RULE_NET_PORT: Final = 2
_PR_SET_NO_NEW_PRIVS: Final = 38

# Generic syscall table numbers (every architecture listed here shares them since the tables were unified).
_SYSCALLS: Final = {"create_ruleset": 444, "add_rule": 445, "restrict_self": 446}
_MACHINES: Final = frozenset(
    {"x86_64", "amd64", "aarch64", "arm64", "armv7l", "armv6l", "riscv64", "ppc64le", "ppc64", "s390x", "i686"}
    | {"i386", "loongarch64"}
)


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the uapi header: 12 bytes
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


class _NetPortAttr(ctypes.Structure):
    _fields_ = (("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64))


def _load_libc() -> ctypes.CDLL | None:
    if sys.platform != "linux" or platform.machine().lower() not in _MACHINES:
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - a Linux without a loadable libc
        return None


_libc = _load_libc()


def _call(name: str, *args: object) -> int:
    if _libc is None:
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
    while True:
        result = int(_libc.syscall(ctypes.c_long(_SYSCALLS[name]), *args))
        if result >= 0:
            return result
        err = ctypes.get_errno()
        if err != errno.EINTR:
            raise OSError(err, os.strerror(err))


def abi_version() -> int:
    """The Landlock ABI this kernel offers; 0 when it has none (too old, built without it, or disabled at boot)."""
    try:
        return _call("create_ruleset", None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except OSError:  # ENOSYS: no Landlock; EOPNOTSUPP: compiled in but disabled at boot
        return 0


def fs_rights(abi: int) -> int:
    """Every filesystem right ``abi`` knows: handling all of them means each one not granted is denied."""
    if abi < 1:
        return 0
    rights = (1 << 13) - 1  # ABI 1: EXECUTE .. MAKE_SYM
    if abi >= 2:
        rights |= ACCESS_FS_REFER
    if abi >= 3:
        rights |= ACCESS_FS_TRUNCATE
    if abi >= 5:
        rights |= ACCESS_FS_IOCTL_DEV
    return rights


def net_rights(abi: int) -> int:
    return ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP if abi >= 4 else 0


def scopes(abi: int) -> int:
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0


def restrict_thread(ruleset_fd: int) -> None:
    """Enforce the finished ruleset ``ruleset_fd`` on the calling thread and every thread it starts later;
    irreversible. The fd stays open (other threads may enforce the same ruleset)."""
    if _libc is None:
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
    # Landlock requires no_new_privs (or CAP_SYS_ADMIN): no setuid binary can run with more than we have.
    if _libc.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                   ctypes.c_ulong(0)) != 0:  # fmt: skip
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    _call("restrict_self", ctypes.c_int(ruleset_fd), ctypes.c_uint32(0))


class Ruleset:
    """A Landlock ruleset under construction: what it handles is denied except what its rules grant."""

    def __init__(self, handled_fs: int, handled_net: int = 0, scoped: int = 0) -> None:
        self.handled_fs = handled_fs
        self.handled_net = handled_net
        attr = _RulesetAttr(handled_fs, handled_net, scoped)
        self._fd: int | None = _call(
            "create_ruleset", ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0)
        )

    def _ruleset_fd(self) -> int:
        if self._fd is None:
            raise ValueError("ruleset is closed")
        return self._fd

    def allow_path(self, path_fd: int, access: int) -> None:
        """Grant ``access`` beneath the object ``path_fd`` refers to (an ``O_PATH`` fd is enough)."""
        attr = _PathBeneathAttr(access, path_fd)
        _call(
            "add_rule",
            ctypes.c_int(self._ruleset_fd()),
            ctypes.c_int(_RULE_PATH_BENEATH),
            ctypes.byref(attr),
            ctypes.c_uint32(0),
        )

    def allow_port(self, port: int, access: int) -> None:
        attr = _NetPortAttr(access, port)
        fd = ctypes.c_int(self._ruleset_fd())
        _call("add_rule", fd, ctypes.c_int(_RULE_NET_PORT), ctypes.byref(attr), ctypes.c_uint32(0))

    def restrict_self(self) -> None:
        """Enforce on the calling thread and every thread it starts later; irreversible. Closes the ruleset."""
        try:
            restrict_thread(self._ruleset_fd())
        finally:
            self.close()

    def detach(self) -> int:
        """Hand over the ruleset's fd (the caller closes it): a finished ruleset that several threads, started
        later, each enforce on themselves with :func:`restrict_thread`. Its rules hold the objects they were
        added for, so closing the fds those rules were made from changes nothing."""
        fd, self._fd = self._ruleset_fd(), None
        return fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Ruleset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
