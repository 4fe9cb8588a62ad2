"""The take up's walk in a child process (issue 51): a new server's saved index is checked while the SDK loads.

Why a process: a stdio server imports the SDK (~0.7 s) right after it starts its index, and in one process the take
up's walk with its per-file checks gets the interpreter only between the imports' long C calls (pydantic-core builds
its validators holding it): it ended 0.2-0.4 s after the first grep had come. So :meth:`Checker.fork` forks a child
before any thread starts (after the sandbox: the child is under it too). The child walks the DIR as the build does,
adds each directory's watch to the index's inotify instance *before* it lists it (the instance is shared across the
fork: the child only adds watches, the parent reads the events), takes every regular file's ``lstat``, records in
the same walk the two views a new session's first grep makes (from the top, with and without the ignore files:
``both_views.py``), and sends all of it back over a pipe (:class:`Report`), then exits.

Why it can be trusted: it is the same walk with the same watch-before-list rule, so every change after the child saw
a directory or a file is in the inotify queue, drained (views marked, files made dirty) before any query uses what
the child saw (:func:`adopt`). A file is kept only if its reported stat matches the saved record by the rule
:func:`~rootbound.search.index.kept_files.vouches` says (for the whole report at once: ``vouched_rows``); every
other file is opened beneath the DIR by the parent and read. The pipe's write end exists only in the child. Its
report is refused whole on any fault (the child failed, was killed, exceeded the walk's cap, or the report does not
parse or fit its shape): the parent then drops the child's watches (a new inotify instance) and walks itself, as it
did before this module.
"""

from __future__ import annotations

import array
import contextlib
import functools
import itertools
import marshal
import os
import signal
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from rootbound.confine.boundary import LIST, Boundary
from rootbound.confine.fd_access import lstat_entry, task_count
from rootbound.confine.inotify import Inotify
from rootbound.confine.rooted_files import RootedFiles
from rootbound.core.errors import LimitExceeded, RootsError
from rootbound.search.ignore_rules import PathFilter, filter_key
from rootbound.search.ignore_walk import READ_FILE, WalkLimits
from rootbound.search.index.both_views import walk_both
from rootbound.search.index.kept_files import TreeIndex, known_of, vouched_rows
from rootbound.search.index.reading import Reading, Stopped
from rootbound.search.index.saved import KINDS
from rootbound.search.index.view import TEXT, View

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from rootbound.search.index.kept_files import Known
    from rootbound.search.index.saved import Snapshot

__all__ = ["Checker", "Report", "Taken", "Taking", "adopt", "keep_reported", "take_child", "take_report", "walk_ahead"]

VERSION: Final = 2
MAX_REPORT: Final = 512 << 20
"""Bytes a report may take (200,000 entries of long paths, three times over, stay far below)."""


class _Limits(Protocol):
    @property
    def max_entries(self) -> int: ...


class Taking(TreeIndex, Protocol):
    """What a report is taken into: ``tree_index.TreeIndex`` (the module above this one)."""

    watches: dict[int, str]
    boundary: Boundary | None

    @property
    def limits(self) -> _Limits: ...

    ahead: bool

    def _keep(self, key: tuple[object, ...], view: View, checking: bool = False) -> None: ...

    def plan(
        self,
        fs: RootedFiles,
        start: object,
        start_rel: str,
        where: PathFilter,
        where_key: tuple[object, ...],
        walk_limits: WalkLimits,
        check: Callable[[int], None] | None,
        pattern: tuple[str, bool, bool] | None = None,
    ) -> object: ...

    def pace(self) -> None: ...

    def lower_priority(self) -> None: ...

    from_child: int

    done: int
    numbers: dict[str, int]
    inodes: dict[str, int]
    stats: dict[str, tuple[int, ...]]
    kinds: dict[str, str]
    reused: int


STAT_FIELDS: Final = 6
"""A reported file's ``lstat``: dev, ino, size, mtime_ns, ctime_ns, links (one row of :attr:`Report.stats`)."""


@dataclass(frozen=True)
class Report:
    """What the child saw: the DIR's ``(dev, ino)``, its watches ``(wd, path)``, every regular file's path in walk
    order (``names``) with its ``lstat`` (``stats``, one row of :data:`STAT_FIELDS` each: sent as one array, so
    neither process makes an object per number), and the first grep's two views."""

    identity: tuple[int, int]
    watches: list[tuple[int, str]]
    names: list[str]
    stats: npt.NDArray[np.int64]
    views: list[tuple[bool, View]]
    changed: list[int] = field(default_factory=list)
    """The places in ``names`` of those not kept (:func:`keep_reported`): read by the build."""
    kept: list[tuple[list[str], npt.NDArray[np.int64]]] = field(default_factory=list)
    """The kept files and their stats, recorded for the next save by the build (:func:`take_report`), not before
    the index is usable: a first query does not wait for them."""


class Checker:
    """A forked child walking one DIR for its index's take up; :meth:`report` waits for it and reads what it sent."""

    def __init__(self, pid: int, read_fd: int, notify: Inotify) -> None:
        self.pid, self.read_fd, self.notify = pid, read_fd, notify
        try:  # signalled through it: a child reaped meanwhile, its pid reused, is never the one killed
            self.pidfd: int | None = os.pidfd_open(pid)
        except (OSError, AttributeError):
            self.pidfd = None

    def running(self) -> bool:
        """Whether the child is still walking (it has not exited)."""
        try:
            if self.pidfd is not None:
                return os.waitid(os.P_PIDFD, self.pidfd, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
            return self.pid > 0 and os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
        except (ChildProcessError, OSError, AttributeError):
            return False

    def stop(self) -> None:
        """Kill the child now (a query wants the index before the child is done: this process walks instead)."""
        with contextlib.suppress(OSError, AttributeError):
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            elif self.pid > 0:
                os.kill(self.pid, signal.SIGKILL)

    def release(self) -> None:
        """The pidfd, once nothing may signal the child any more (the index is closing)."""
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None

    @classmethod
    def fork(cls, path: Path, max_entries: int) -> Checker | None:
        """The child, started now; ``None`` where it cannot be (another thread runs: a fork would copy a process
        whose locks that thread may hold; inotify or fork unavailable): the take up then walks in this process."""
        if threading.active_count() != 1 or task_count() not in (1, None):
            return None
        try:
            notify = Inotify()
        except OSError:
            return None
        try:
            read_fd, write_fd = os.pipe()  # both close-on-exec (Python's default): nothing but the child holds them
        except OSError:
            notify.close()
            return None
        try:
            pid = os.fork()
        except OSError:
            for fd in (read_fd, write_fd):
                os.close(fd)
            notify.close()
            return None
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(read_fd)
                _quiet(keep=(write_fd, notify.fd))
                code = _walk_and_send(path, notify, write_fd, max_entries)
            except BaseException:  # the child says nothing and ends; the parent walks itself
                code = 1
            finally:
                os._exit(code)
        os.close(write_fd)
        return cls(pid, read_fd, notify)

    def report(self) -> Report | None:
        """What the child sent, once it has ended; ``None`` on any fault (the parent walks itself)."""
        chunks: list[bytes] = []
        size = 0
        try:
            while True:
                chunk = os.read(self.read_fd, 1 << 20)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_REPORT:
                    return None
                chunks.append(chunk)
        except OSError:
            return None
        finally:
            os.close(self.read_fd)
            self.read_fd = -1
            status = self._reap()
        if status != 0:
            return None
        try:
            # Written only by this process's own child (the pipe's write end exists nowhere else): no outside input.
            return _parse(marshal.loads(b"".join(chunks)))  # noqa: S302
        except (EOFError, ValueError, TypeError, IndexError, KeyError):
            return None

    def close(self) -> None:
        """Stop the child if it still runs (the index closed before it was read), and reap it."""
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1
        if self.pid > 0:
            self.stop()
            self._reap()
        self.release()

    def _reap(self) -> int:
        if self.pid <= 0:
            return -1
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            status = -1
        self.pid = -1
        return os.waitstatus_to_exitcode(status) if status >= 0 else -1


def _quiet(keep: tuple[int, ...]) -> None:
    """The child holds nothing of the server's but what it uses: stdin and stdout (a host's pipes: the host sees
    their end when the server ends, not when this child does), the scan helper's socket, the held DIRs and the saved
    folder all closed; stderr kept (it says nothing, but a crash of the interpreter would)."""
    os.closerange(0, 2)
    low = 3
    for fd in sorted(keep):
        if fd > low:
            os.closerange(low, fd)
        low = max(low, fd + 1)
    os.closerange(low, 1 << 20)


def _walk_and_send(path: Path, notify: Inotify, out: int, max_entries: int) -> int:
    """The child's work: the build's walk (without the ignore files, as the build reads) recorded as that view and,
    in the same walk, the view with the ignore files (``both_views.py``); each directory watched as it is met
    (before it is listed) and each regular file's ``lstat`` taken; one marshalled report."""
    watches: list[tuple[int, str]] = []
    names: list[str] = []
    stats = array.array("q")  # a number past its range fails the child: the parent walks

    def watch(rel: str, dir_fd: int, name: str) -> None:
        watches.append((notify.watch_entry(dir_fd, name), rel))

    def take_stat(rel: str, dir_fd: int, name: str) -> None:
        try:
            fst = lstat_entry(dir_fd, name)
        except OSError:
            return  # gone or unreadable: no record, so every query opens it (it has no kind)
        if stat.S_ISREG(fst.st_mode):
            names.append(rel)
            stats.extend((fst.st_dev, fst.st_ino, fst.st_size, fst.st_mtime_ns, fst.st_ctime_ns, fst.st_nlink))

    with Boundary([path]) as boundary:
        fs = RootedFiles(boundary, read_only=True)
        with boundary.open(str(path), LIST) as top:
            st = top.fstat()
            identity = (st.st_dev, st.st_ino)
            watches.append((notify.watch_entry(top.fd), ""))
        both = walk_both(fs, str(path), WalkLimits(max_entries=max_entries), take_stat, watch)
    views = [
        (gitignore, (view.entries, view.dirs, view.files, sorted(view.unentered), view.listed))
        for gitignore, view in zip((False, True), both, strict=True)
    ]
    data = memoryview(marshal.dumps((VERSION, identity, watches, names, stats.tobytes(), views)))
    while data:
        data = data[os.write(out, data) :]
    return 0


def _parse(raw: Any) -> Report | None:
    """The report's shape checked once, here; what does not fit refuses it whole."""
    import numpy as np

    version, identity, watches, names, stats, views = raw
    if version != VERSION or not isinstance(identity, tuple) or len(identity) != 2:
        return None
    if not all(isinstance(wd, int) and isinstance(rel, str) for wd, rel in watches):
        return None
    if not isinstance(names, list) or not set(map(type, names)) <= {str} or not isinstance(stats, bytes):
        return None
    if len(stats) != len(names) * STAT_FIELDS * 8:
        return None
    shown: list[tuple[bool, View]] = []
    for gitignore, (entries, dirs, found, unentered, listed) in views:
        if not isinstance(dirs, dict) or not isinstance(listed, int):
            return None
        view = View("", entries=list(entries), dirs=dirs, files=list(found), unentered=set(unentered), listed=listed)
        shown.append((bool(gitignore), view))
    numbers = np.frombuffer(stats, np.int64).reshape(len(names), STAT_FIELDS)
    return Report((int(identity[0]), int(identity[1])), list(watches), names, numbers, shown)


@dataclass(frozen=True)
class Taken:
    """What a take up starts from when its child ran: the saved index read meanwhile, the inotify instance (the
    child's watches in it when its report holds), and what to do with the saved records before any query may use
    them (``None``: nothing held, this process walks)."""

    snap: Snapshot | None
    notify: Inotify
    report: Report | None
    first: Callable[[], None] | None
    known: Known | None = None
    """The saved records by path (``kept_files.known_of``), made while the child walked."""


def take_child(index: Taking, checker: Checker) -> Taken:
    """Read the saved index while the child walks, then its report: a report of another directory, or none, drops
    the child's watches (a new inotify instance) and leaves the walk to this process, as before."""
    saved, identity = index.saved, index.identity
    snap = saved.load(index.path, identity) if saved is not None and identity is not None else None
    known = known_of(snap) if snap is not None else None  # meanwhile too: records by path, and each one's row
    if known is None:
        snap = None
    rows = dict(zip(snap.names, range(len(snap.names)), strict=True)) if snap is not None else {}
    report = checker.report()
    if report is None or report.identity != identity:
        checker.notify.close()  # the child's watches with it
        return Taken(snap, Inotify(), None, None, known)
    adopt(index, report)
    index.from_child = len(report.names)
    keep = None if snap is None else functools.partial(keep_reported, index, report, snap, rows)
    return Taken(snap, checker.notify, report, keep, known)


def adopt(index: Taking, report: Report) -> None:
    """Take the child's watches and views into ``index`` (held by the parent, its identity the child's: checked by
    the caller), then drain what the kernel queued since the child added them: a change the child may have missed
    is applied to what it saw before anything uses it."""
    limits = WalkLimits(max_entries=index.limits.max_entries)  # as the child walked them
    with index.lock:
        for wd, rel in report.watches:
            index.watches[wd] = rel
        for gitignore, view in report.views:
            index._keep(("", filter_key((), (), gitignore), limits, False), view)
        index._drain_locked()


def keep_reported(index: Taking, report: Report, snap: Snapshot, rows: dict[str, int]) -> None:
    """Every file of the child's report whose stat matches its saved record, kept at once (the rule
    :func:`~rootbound.search.index.kept_files.vouched_rows` says, over the whole report in numpy; ``rows``: each
    saved path's row in ``snap``), before any query may use the index: a first query then opens only what changed.
    What is not kept is left in ``report.changed`` for the build to read (:func:`take_report`)."""
    import numpy as np

    names, now = report.names, report.stats
    at = np.fromiter(map(rows.get, names, itertools.repeat(-1)), np.int64, len(names))
    held = vouched_rows(snap, at, now)
    report.changed.extend(np.flatnonzero(~held).tolist())
    kept_names = list(itertools.compress(names, held.tolist()))
    records, stats = snap.records[at[held]], now[held]
    text = records[:, 5] == KINDS.index(TEXT)
    index.numbers.update(zip(itertools.compress(kept_names, text.tolist()), records[text, 6].tolist(), strict=True))
    index.inodes.update(zip(kept_names, stats[:, 1].tolist(), strict=True))
    report.kept.append((kept_names, stats))
    index.kinds.update(zip(kept_names, map(KINDS.__getitem__, records[:, 5].tolist()), strict=True))
    index.reused += len(kept_names)


def take_report(index: Taking, report: Report, reading: Reading) -> None:
    """The build's loop over the files the child saw changed (:func:`keep_reported` kept the rest): each opened
    beneath the DIR (its directory by name through the index's boundary, the file itself without following links)
    and read, at the build's lowered priority."""
    boundary = index.boundary
    assert boundary is not None
    for names, stats in report.kept:
        index.stats.update(zip(names, map(tuple, stats[:, :5].tolist()), strict=True))
    if report.changed:
        index.lower_priority()
    index.done += len(report.names) - len(report.changed)
    for at in report.changed:
        if index.state != "building":
            raise Stopped
        index.pace()
        rel, ino = report.names[at], int(report.stats[at, 1])
        parent, _, name = rel.rpartition("/")
        try:
            with boundary.open(str(index.path / parent) if parent else str(index.path), LIST) as handle:
                opened = handle.entry_opener()(handle.fd, name, ino, READ_FILE)
        except (OSError, RootsError, LimitExceeded):
            opened = None
        reading.add(rel, opened)


def walk_ahead(index: Taking) -> None:
    """Record now, once the index is ready, the walks a new session's first grep or search_files makes (from the
    DIR's top, with and without the ignore files) where no child recorded them: its first query then opens its
    candidates and walks nothing. A query meeting them waits (``TreeIndex.ahead``); a query holding the index, or a
    walk that fails, leaves it to the queries, as before."""
    boundary = index.boundary
    if boundary is None:
        return
    fs = RootedFiles(boundary, read_only=True)
    index.ahead = True
    try:
        for gitignore in (True, False):
            if index.state != "ready":
                return
            where = PathFilter(gitignore=gitignore)
            with contextlib.suppress(OSError, RootsError, LimitExceeded):
                index.plan(fs, str(index.path), "", where, filter_key((), (), gitignore), WalkLimits(), None)
    finally:
        index.ahead = False
