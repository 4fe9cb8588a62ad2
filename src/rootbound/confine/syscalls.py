"""ctypes wrappers for the Linux calls Python does not expose: ``openat2``, and a mount id (``statx`` or
``name_to_handle_at``), alone or with an object's type, link count and size in one ``statx``.

Why: ``openat2(dirfd, path, {flags, mode, RESOLVE_BENEATH | ...})`` (Linux >= 5.6) makes the kernel refuse any
resolution that leaves ``dirfd`` (``..``, absolute symlinks, magic links, mount crossings) atomically, inside one
path walk, so no check-then-open race exists. ``statx(STATX_MNT_ID)`` (or ``name_to_handle_at`` on kernels before
5.8) gives an object's mount id, which is how the component-walk fallback notices a same-filesystem bind mount
(``st_dev`` cannot).

Both report failures as :class:`OSError` with the kernel's errno; callers decide what an errno means (see
``rootbound.confine.boundary``: ENOSYS means "use the fallback", EXDEV/ELOOP mean deny). Nothing here decides policy.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys
import threading
from typing import Final, NamedTuple

__all__ = [
    "RESOLVE_BENEATH",
    "RESOLVE_IN_ROOT",
    "RESOLVE_NO_MAGICLINKS",
    "RESOLVE_NO_SYMLINKS",
    "RESOLVE_NO_XDEV",
    "Facts",
    "available",
    "mount_id",
    "name_thread",
    "openat2",
    "openat2_packed",
    "packed_how",
    "statx_facts",
]

RESOLVE_NO_XDEV: Final = 0x01
RESOLVE_NO_MAGICLINKS: Final = 0x02
RESOLVE_NO_SYMLINKS: Final = 0x04
RESOLVE_BENEATH: Final = 0x08
RESOLVE_IN_ROOT: Final = 0x10

# openat2 came after the syscall tables were unified, so it is 437 on every architecture listed here. Other
# architectures (alpha, mips ABIs, ...) use other numbers: they simply take the component-walk fallback.
_SYS_OPENAT2: Final = 437
_MACHINES_437: Final = frozenset(
    {"x86_64", "amd64", "aarch64", "arm64", "armv7l", "armv6l", "riscv64", "ppc64le", "ppc64", "s390x", "i686"}
    | {"i386", "loongarch64"}
)
_AT_EMPTY_PATH: Final = 0x1000
_MAX_HANDLE_SZ: Final = 128
_EAGAIN_RETRIES: Final = 4  # a racing rename or mount makes the kernel ask us to retry; bounded, then deny


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


_HOW_SIZE: Final = ctypes.sizeof(_OpenHow)
_HOWS: dict[tuple[int, int, int], bytes] = {}


def _load_libc() -> ctypes.CDLL | None:
    if sys.platform != "linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - a Linux without a loadable libc
        return None


_libc = _load_libc()
_syscall = None
_syscall_fast = None
_name_to_handle_at = None
_statx = None
_EMPTY: Final = ctypes.c_char_p(b"")
if _libc is not None:
    # No argtypes: converting through them costs ~0.7 us per call, a third of an open. Every argument is a small
    # non-negative int (or AT_FDCWD) or bytes: ctypes passes ints as C int, which libffi widens to the full register
    # as these 64-bit ABIs require, and bytes as char *.
    _syscall = _libc.syscall
    _syscall.restype = ctypes.c_long
    _plain = ctypes.CDLL(None)  # libc without use_errno: for the calls whose errno is never read
    _syscall_fast = _plain.syscall  # no errno swap: openat2_packed never reads errno
    _syscall_fast.restype = ctypes.c_long
    _name_to_handle_at = getattr(_libc, "name_to_handle_at", None)
    if _name_to_handle_at is not None:
        _name_to_handle_at.restype = ctypes.c_int
        _name_to_handle_at.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)
    # glibc >= 2.28; arguments are passed as plain ints (no conversion cost), and through a handle without
    # use_errno (its errno is never read: a failure is "unknown"), which saves the errno swap around each call.
    _statx = getattr(_plain, "statx", None)
    if _statx is not None:
        _statx.restype = ctypes.c_int


def openat2(dirfd: int, path: bytes, flags: int, resolve: int, mode: int = 0) -> int:
    """``openat2(2)``: a new fd, or :class:`OSError` with the kernel's errno (EINTR retried, EAGAIN bounded)."""
    how = packed_how(flags, resolve, mode)
    if 0 in path:  # ctypes would silently truncate at the NUL: refuse instead (0, not b"\x00": 10x faster)
        raise ValueError("embedded null byte")
    fd: int = _syscall(_SYS_OPENAT2, dirfd, path, how, _HOW_SIZE)  # type: ignore[misc]
    if fd >= 0:
        return fd
    return _retry(dirfd, path, how)


def openat2_packed(dirfd: int, path: bytes, how: bytes) -> int:
    """The hot path: ``openat2`` with a packed ``open_how`` (:func:`packed_how`) once, no retries. The new fd, or
    ``-1`` on any failure (then call :func:`openat2` for the retries and the error)."""
    if 0 in path:
        return -1
    fd: int = _syscall_fast(_SYS_OPENAT2, dirfd, path, how, _HOW_SIZE)  # type: ignore[misc]
    return fd


def packed_how(flags: int, resolve: int, mode: int = 0) -> bytes:
    """The packed ``open_how`` of ``flags``, ``resolve`` and ``mode`` (for :func:`openat2_packed`, and what
    :func:`openat2` passes); ENOSYS without libc."""
    how = _HOWS.get((flags, mode, resolve))
    return _how(flags, mode, resolve) if how is None else how


def _how(flags: int, mode: int, resolve: int) -> bytes:
    """The packed ``open_how`` for one flag combination, made once (no struct allocation per call)."""
    if _syscall is None:
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
    if flags < 0 or mode < 0 or resolve < 0:
        raise ValueError("negative open_how field")
    how = _HOWS[(flags, mode, resolve)] = bytes(_OpenHow(flags, mode, resolve))
    return how


def _retry(dirfd: int, path: bytes, how: bytes) -> int:
    """After a failed call: retry EINTR, and EAGAIN a bounded number of times; any other errno is final."""
    eagain = 0
    while True:
        err = ctypes.get_errno()
        if err == errno.EINTR:
            pass
        elif err == errno.EAGAIN and eagain < _EAGAIN_RETRIES:
            eagain += 1
        else:
            raise OSError(err, os.strerror(err))
        fd: int = _syscall(_SYS_OPENAT2, dirfd, path, how, _HOW_SIZE)  # type: ignore[misc]
        if fd >= 0:
            return fd


_probe_lock = threading.Lock()
_probed: bool | None = None


def available() -> bool:
    """Whether this process can use ``openat2`` with ``RESOLVE_BENEATH`` (probed once: ENOSYS, seccomp EPERM...)."""
    global _probed
    if _probed is None:
        with _probe_lock:
            if _probed is None:
                _probed = _probe()
    return _probed


def _probe() -> bool:
    if _syscall is None or platform.machine().lower() not in _MACHINES_437:
        return False
    flags = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
    try:
        fd = openat2(-100, b"/", flags, 0)  # AT_FDCWD; an absolute path is fine without RESOLVE_BENEATH
    except OSError:
        return False
    try:
        inner = openat2(fd, b".", flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
    except OSError:
        return False
    finally:
        os.close(fd)
    os.close(inner)
    return True


_tls = threading.local()
_STATX_MNT_ID: Final = 0x1000  # Linux >= 5.8
_STATX_SIZE: Final = 256
_STATX_MNT_OFFSET: Final = 144  # struct statx: stx_mnt_id follows stx_dev_minor


def _statx_buffers() -> tuple[ctypes.Array[ctypes.c_char], ctypes.c_uint32, ctypes.c_uint64]:
    buf = ctypes.create_string_buffer(_STATX_SIZE)  # passed as a pointer (a ctypes array), read through views
    bufs = (buf, ctypes.c_uint32.from_buffer(buf), ctypes.c_uint64.from_buffer(buf, _STATX_MNT_OFFSET))
    _tls.statx = bufs
    return bufs


def mount_id(fd: int) -> int | None:
    """The mount id of the object ``fd`` refers to, or ``None`` when the kernel or filesystem cannot say.

    ``statx(STATX_MNT_ID)`` where the kernel has it (one cheap call: this is on the component walk's hot path),
    else ``name_to_handle_at``. Both report the same (non-unique, reusable) mount id.
    """
    if _statx is not None:
        try:
            buf, mask, mnt = _tls.statx
        except AttributeError:
            buf, mask, mnt = _statx_buffers()
        if _statx(fd, _EMPTY, _AT_EMPTY_PATH, _STATX_MNT_ID, buf) == 0 and mask.value & _STATX_MNT_ID:
            return int(mnt.value)
    return _handle_mount_id(fd)


def _handle_mount_id(fd: int) -> int | None:
    if _name_to_handle_at is None:
        return None
    try:
        size, mnt, handle_ref, mnt_ref = _tls.bufs
    except AttributeError:
        handle = ctypes.create_string_buffer(8 + _MAX_HANDLE_SZ)
        mnt = ctypes.c_int()
        size = ctypes.c_uint.from_buffer(handle)  # handle_bytes: in/out, so reset before every call
        _tls.bufs = (size, mnt, ctypes.addressof(handle), ctypes.addressof(mnt))
        _tls.keep = handle
        size, mnt, handle_ref, mnt_ref = _tls.bufs
    size.value = _MAX_HANDLE_SZ
    if _name_to_handle_at(fd, b"", handle_ref, mnt_ref, _AT_EMPTY_PATH) != 0:
        # EOVERFLOW still fills the mount id, but 128 bytes is MAX_HANDLE_SZ, so any error here is "unknown".
        return None
    return int(mnt.value)


class Facts(NamedTuple):
    """What a typed open needs of an object, from one ``statx`` (:func:`statx_facts`): its type (in ``st_mode``),
    link count, inode and size under ``os.stat_result``'s names, and its mount id (``None``: unknown)."""

    stx_mask: int
    st_nlink: int
    st_mode: int
    st_ino: int
    st_size: int
    mnt_id: int | None


# struct statx: stx_mask, stx_nlink, stx_mode, stx_ino, stx_size and stx_mnt_id, at their offsets (Facts' order).
_STATX_FACTS_LAYOUT: Final = struct.Struct("=I12xI8xH2xQQ96xQ")
_unpack_facts = _STATX_FACTS_LAYOUT.unpack_from
_STATX_FACTS: Final = 0x1 | 0x2 | 0x4 | 0x100 | 0x200  # STATX_TYPE | MODE | NLINK | INO | SIZE
_STATX_FACTS_MNT: Final = _STATX_FACTS | _STATX_MNT_ID
_new_tuple = tuple.__new__


def statx_facts(fd: int) -> Facts | None:
    """The :class:`Facts` of ``fd`` from one ``statx`` call; ``None`` without ``statx`` or when the kernel leaves
    out one of the fields (then ask ``os.fstat`` and :func:`mount_id`). The component walk needs both the type and
    the mount of its final object: one call instead of ``fstat`` plus the mount id's ``statx``."""
    if _statx is None:
        return None
    try:
        buf = _tls.statx[0]  # mount_id's per-thread buffer (ctypes releases the GIL during the call)
    except AttributeError:
        buf = _statx_buffers()[0]
    if _statx(fd, _EMPTY, _AT_EMPTY_PATH, _STATX_FACTS_MNT, buf) != 0:
        return None
    facts: Facts = _new_tuple(Facts, _unpack_facts(buf))
    mask = facts[0]
    if mask & _STATX_FACTS != _STATX_FACTS:
        return None
    if not mask & _STATX_MNT_ID:  # Linux < 5.8
        return facts._replace(mnt_id=_handle_mount_id(fd))
    return facts


_PR_SET_NAME: Final = 15


def name_thread(name: str) -> None:
    """Give the calling thread ``name`` (at most 15 bytes) in the kernel too, as ``ps -L``, ``top -H`` and
    ``/proc/PID/task/TID/comm`` show it (Python sets only its own name before 3.14). Best effort."""
    if _libc is not None:
        _libc.prctl(ctypes.c_int(_PR_SET_NAME), ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)
