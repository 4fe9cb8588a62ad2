"""The scan helper: a second process that reads and searches the chunks of a grep's walk (:mod:`chunk_scan`), so
the first grep of a tree uses both cores (issue 36).

Why a process: one Python process cannot use two cores for this work (the per-file code holds the GIL; two threads
measured slower than one). Why spawned, not forked: a server forks nothing once threads run, and a spawned
interpreter inherits no fd but its socket and the stop flag: it holds no root, and can open only names beneath the
directory fds a chunk carries (``SCM_RIGHTS``), with the walk's own opener (:func:`~resolvers.listed_opener`: no
link followed, the listed inode, the root's mount). ``serve`` starts it through ``rootbound.workspace.scan_process``,
which first applies the server's Landlock rules read-only, so the helper is walled at least as the server is.

Fairness (trio's rule, the worst case bounded): one helper a server, taken by one call at a time without waiting
(:meth:`ScanHelper.take`); a call that finds it busy scans alone. A call that ends early (a cap, a cancellation, an
error) raises the shared stop flag and waits, bounded, for its chunks' answers before the helper is free again, so
no answer reaches the wrong call. A helper that dies, hangs or answers nonsense is killed; its chunks are searched
by the caller (their fds were kept), so the answer is still a full scan's. Messages are ``marshal`` data (no code
is loaded from the helper's answers).
"""

from __future__ import annotations

import array
import atexit
import contextlib
import json
import marshal
import mmap
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

from rootbound.search.chunk_scan import IN_FLIGHT, ChunkStopped, Event, Item, Job, Searcher, search_items

__all__ = ["ScanHelper", "close_helpers", "serve"]

_HEADER: Final = struct.Struct("<I")
MAX_MESSAGE: Final = 64 << 20
"""The largest message either side accepts (a chunk's answer holds at most its caps' lines)."""
STOP_WAIT: Final = 10.0
"""Seconds a call waits for the helper to give up its chunks once told to stop; past that it is killed."""
STALL_WINDOW: Final = 2.0
"""Seconds a helper holding a call's chunks may make no progress at all (no chunk taken, no file begun, no search
window, no answer) before it is taken for stopped (SIGSTOP) or wedged: it is retired and the call searches the chunks
it held itself (issue 48 row 10). A working helper moves its counter every file and every search window (about a
millisecond apart), so only a helper the kernel does not run for two seconds is mistaken for one, and that costs
its server the second core from then on, never an answer."""
START_WAIT: Final = 30.0
"""Seconds a helper has to say it is ready before it is taken for dead (an interpreter's start, imports)."""
_MAX_FDS: Final = 253  # SCM_MAX_FD
_FLAG_SIZE: Final = 8
"""The shared page's bytes: the stop flag (byte 0), and the helper's progress counter (:data:`_PROGRESS`, at 4)."""
_PROGRESS: Final = struct.Struct("<I")


class HelperGone(Exception):
    """The helper closed its socket, or sent what is not an answer."""


def _send(sock: socket.socket, value: Any, fds: Sequence[int] = ()) -> None:
    body = marshal.dumps(value)
    header = _HEADER.pack(len(body))
    if fds:
        sock.sendmsg([header, body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        sock.sendall(header + body)


def _exactly(sock: socket.socket, size: int, into: bytearray) -> None:
    while len(into) < size:
        part = sock.recv(size - len(into))
        if not part:
            raise HelperGone()
        into += part


def _receive(sock: socket.socket, fds: list[int] | None = None) -> Any:
    """One message (and, with ``fds``, the descriptors sent with it, appended there)."""
    head = bytearray()
    if fds is None:
        _exactly(sock, _HEADER.size, head)
    else:
        data, ancillary, flags, _ = sock.recvmsg(
            _HEADER.size, socket.CMSG_SPACE(_MAX_FDS * 4), getattr(socket, "MSG_CMSG_CLOEXEC", 0)
        )
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                got = array.array("i")
                got.frombytes(payload[: len(payload) - len(payload) % got.itemsize])
                fds.extend(got)
        if not data or flags & socket.MSG_CTRUNC:
            raise HelperGone()
        head += data
        _exactly(sock, _HEADER.size, head)
    (size,) = _HEADER.unpack(head)
    if size > MAX_MESSAGE:
        raise HelperGone()
    body = bytearray()
    _exactly(sock, size, body)
    try:
        return marshal.loads(body)  # noqa: S302 - loads no code; the shape is checked (answer_fits)
    except (EOFError, ValueError, TypeError):
        raise HelperGone() from None


# -- the helper's side -------------------------------------------------------------------------------------------


def serve(sock_fd: int, flag_fd: int) -> int:
    """The helper's loop: search each chunk received, answer it; return when the server closes the socket (a
    server that ended before the helper was ready included: nothing is printed, the server's stderr is a host's
    log). Ctrl-C in a terminal reaches the whole process group: the server decides, the helper follows its
    socket."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=sock_fd)
    flag = mmap.mmap(flag_fd, _FLAG_SIZE)
    os.close(flag_fd)
    try:
        _send(sock, ("ready", os.getpid()))
        return _loop(sock, flag)
    except OSError:  # the server is gone
        return 0


def _loop(sock: socket.socket, flag: mmap.mmap) -> int:
    searcher: Searcher | None = None
    stopped, check = _checks(flag, None)
    while True:
        fds: list[int] = []
        try:
            ticket, job, items = _receive(sock, fds)
        except (HelperGone, OSError, ValueError, TypeError):
            for fd in fds:
                os.close(fd)
            return 0
        _moved(flag)
        try:
            if searcher is None or searcher.job != job:
                searcher = Searcher(job)
                stopped, check = _checks(flag, job[-1])
            events = search_items(searcher, items, fds, check=check, deadline=job[-1], stopped=stopped)
        except (ValueError, TypeError):  # not a job this module sent: a helper trusts its server no further
            return 1
        finally:
            for fd in fds:
                os.close(fd)
        try:
            _send(sock, (ticket, events))
        except OSError:
            return 0


def _checks(flag: mmap.mmap, deadline: float | None) -> tuple[Callable[[], bool], Callable[[int], None]]:
    """The helper's checks for one call: between files (``stopped``) and between search windows (``check``):
    the server raised the stop flag, or the call's deadline passed."""

    def stopped() -> bool:
        _moved(flag)
        return flag[0] != 0 or (deadline is not None and time.monotonic() > deadline)

    def check(steps: int) -> None:
        if stopped():
            raise ChunkStopped("stop" if flag[0] else "late")

    return stopped, check


def _moved(flag: mmap.mmap) -> None:
    """One step of progress, for the server to see (:data:`STALL_WINDOW`)."""
    _PROGRESS.pack_into(flag, 4, (_PROGRESS.unpack_from(flag, 4)[0] + 1) & 0xFFFFFFFF)


# -- the server's side -------------------------------------------------------------------------------------------

_BOOT: Final = (
    "import json, runpy, sys; module = sys.argv[2]; sys.path[:] = json.loads(sys.argv[1]); del sys.argv[1:3]; "
    "runpy.run_module(module, run_name='__main__', alter_sys=True)"
)


def child_argv(module: str, args: Sequence[str]) -> list[str]:
    """``python -m module args`` started the way this interpreter was: its isolation flags and its ``sys.path``
    as it is now. A bundle's entry point adds its ``server/lib`` to the path at run time under ``-I``; a plain
    ``-m`` child would import none of it (issue 50: the helper failed to start in every bundle)."""
    flags = sys.flags
    argv = [sys.executable]
    if flags.isolated:
        argv.append("-I")
    else:
        argv += ["-E"] if flags.ignore_environment else []
        argv += ["-s"] if flags.no_user_site else []
    argv += ["-B"] if flags.dont_write_bytecode else []
    argv += ["-O"] * flags.optimize
    return [*argv, "-c", _BOOT, json.dumps(sys.path), module, *args]


_LIVE: set[ScanHelper] = set()


def close_helpers() -> None:
    """End every helper still running: a server that leaves with ``os._exit`` (which runs no ``atexit`` hook) calls
    this first, so no helper outlives it holding its stderr (a host waits for that pipe's end; issue 50)."""
    for helper in list(_LIVE):
        helper.close()


atexit.register(close_helpers)  # a library user's interpreter exiting normally


class ScanHelper:
    """One helper process and the socket to it; :meth:`take` lends it to one call at a time.

    ``command``: the module to run (``python -m``) and its arguments after the two fds; the default runs this
    module, unsandboxed (a library caller's own process is not sandboxed either). ``holds``: fds the child is
    given as they are (the same numbers), their numbers appended to its arguments: ``serve`` passes its held DIRs,
    from which the helper builds its wall (``workspace/scan_process.py``).
    """

    def __init__(self, command: Sequence[str] = ("rootbound.search.scan_helper",), holds: Sequence[int] = ()) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        flag_fd = os.memfd_create("rootbound-scan-stop", os.MFD_CLOEXEC)
        try:
            os.ftruncate(flag_fd, _FLAG_SIZE)
            self._flag = mmap.mmap(flag_fd, _FLAG_SIZE)
            module, *rest = command
            self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
                child_argv(module, [str(theirs.fileno()), str(flag_fd), *rest, *(str(fd) for fd in holds)]),
                pass_fds=(theirs.fileno(), flag_fd, *holds),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
            os.close(flag_fd)
        self._sock = ours
        _LIVE.add(self)
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self.ready = False
        self.alive = True
        self.pid = self._process.pid

    @contextlib.contextmanager
    def take(self) -> Iterator[_Lease | None]:
        """The helper for this call, or ``None`` (busy with another call, not ready yet, or gone): never waits."""
        if not self.alive or not self._lock.acquire(blocking=False):
            if not self.alive:
                self._reap()
            yield None
            return
        try:
            if not self.ready and not self._await_ready():
                yield None
                return
            lease = _Lease(self)
            try:
                yield lease
            finally:
                if lease.out:
                    lease.stop(set(lease.out))
        finally:
            self._lock.release()

    def _await_ready(self) -> bool:
        try:
            if select.select([self._sock], [], [], 0)[0]:
                message = _receive(self._sock)
                if isinstance(message, tuple) and message[:1] == ("ready",):
                    self.ready = True
                    return True
                self.kill()
            elif time.monotonic() - self._started > START_WAIT:
                self.kill()
        except (HelperGone, OSError):
            self.kill()
        return False

    def kill(self) -> None:
        """Retire the helper: calls scan alone from here (it is not replaced: a sandboxed server may not start an
        interpreter). Without waiting: its socket closed and the stop flag raised (then unmapped here, so nothing
        lowers it again), it ends at its next file or send, or when it is let go if it was stopped. It is also sent
        SIGKILL, which a sandboxed server may not be allowed to send (Landlock's signal scope: the helper restricted
        itself, in a domain of its own). The next :meth:`take` after it ended reaps it, as does :meth:`close`."""
        self.alive = False
        self.set_stop(True)
        with contextlib.suppress(OSError):
            self._sock.close()
        process = self._process
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()
        self._flag.close()
        self._reap()

    def _reap(self) -> None:
        """Collect a retired helper's exit status once it has ended (no zombie is left for the process's life)."""
        process = self._process
        if process is not None and process.poll() is not None:
            self._process = None
            _LIVE.discard(self)

    def progress(self) -> int:
        """The helper's progress counter (moves every chunk taken, file begun and search window); 0 once retired."""
        try:
            return int(_PROGRESS.unpack_from(self._flag, 4)[0])
        except ValueError:  # unmapped: retired or closed
            return 0

    def close(self) -> None:
        """End the helper: its socket closed, it exits (at once when idle, after its chunk when busy); waited for
        briefly, then sent SIGKILL."""
        _LIVE.discard(self)
        self.alive = False
        process, self._process = self._process, None
        with contextlib.suppress(OSError):
            self._sock.close()
        if process is not None:
            try:
                process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    process.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=5)
        self._flag.close()

    def set_stop(self, on: bool) -> None:
        """Raise or clear the flag the helper reads between files and search windows (nothing once it is gone)."""
        with contextlib.suppress(ValueError):  # closed by close() or kill()
            self._flag[0] = 1 if on else 0


class _Lease:
    """The helper as one call uses it (:class:`~chunk_scan.Lease`)."""

    def __init__(self, helper: ScanHelper) -> None:
        self.helper = helper
        self.out: set[int] = set()  # tickets sent and not answered
        self._mark = 0  # the helper's progress counter when last seen moving (or when chunks went out)
        self._since = 0.0  # when that was

    @property
    def alive(self) -> bool:
        return self.helper.alive

    def free(self) -> bool:
        return len(self.out) < IN_FLIGHT

    def send(self, ticket: int, job: Job, items: list[Item], fds: list[int]) -> bool:
        if not self.helper.alive:
            return False
        if not self.out:  # its clock starts with the first chunk it holds
            self._mark, self._since = self.helper.progress(), time.monotonic()
        try:
            _send(self.helper._sock, (ticket, job, items), fds)
        except (OSError, ValueError):
            self.helper.kill()
            return False
        self.out.add(ticket)
        return True

    def answers(self, wait: float) -> list[tuple[int, list[Event]]]:
        helper, got = self.helper, []
        timeout = wait
        try:
            while self.out and helper.alive and select.select([helper._sock], [], [], timeout)[0]:
                message = _receive(helper._sock)
                if not (isinstance(message, tuple) and len(message) == 2 and message[0] in self.out):
                    raise HelperGone()
                ticket, events = message
                self.out.discard(ticket)
                got.append((ticket, events))
                timeout = 0.0
        except (HelperGone, OSError, ValueError):
            helper.kill()
        if self.out and helper.alive:
            self._watch(bool(got))
        return got

    def _watch(self, answered: bool) -> None:
        """Retire a helper that holds chunks and made no progress for :data:`STALL_WINDOW` (stopped or wedged):
        the caller then searches what it held (:meth:`~chunk_scan.Driver._collect`)."""
        mark, now = self.helper.progress(), time.monotonic()
        if answered or mark != self._mark:
            self._mark, self._since = mark, now
        elif now - self._since > STALL_WINDOW:
            self.helper.kill()

    def fail(self) -> None:
        self.helper.kill()
        self.out.clear()

    def stop(self, tickets: set[int]) -> None:
        helper = self.helper
        helper.set_stop(True)
        try:
            ends = time.monotonic() + STOP_WAIT
            while self.out & tickets and helper.alive:
                left = ends - time.monotonic()
                if left <= 0:
                    helper.kill()
                    break
                self.answers(min(left, 0.1))
        finally:
            helper.set_stop(False)
        self.out.clear()


if __name__ == "__main__":
    sys.exit(serve(int(sys.argv[1]), int(sys.argv[2])))
