"""A saved index taken up by a new server (issue 51): which of its records still hold, and the index saved again.

Kept apart from :mod:`tree_index` (the build calls these three): :func:`load_known` takes a saved index's segments
and records, :func:`kept` checks one walked file against its record by the kernel's times, :func:`save_index` writes
the index for the next server once a build ends ready. A query made during the take up checks the files the take up
has not reached itself (:class:`Vouched`), so it opens only the changed ones. See :mod:`saved` for why this can be
trusted.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from itertools import compress
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

from rootbound.confine.fd_access import lstat_entry
from rootbound.search.index.saved import KINDS, RACY_NS, Snapshot
from rootbound.search.index.view import ALWAYS, TEXT, UNREADABLE

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from rootbound.search.index.postings import Segment
    from rootbound.search.index.saved import SavedStore

__all__ = ["Known", "TreeIndex", "Vouched", "kept", "known_of", "load_known", "save_index", "vouched_rows", "vouches"]

Known = dict[str, tuple[tuple[int, ...], str, int]]
"""A saved index's records by path: ``(dev, ino, size, mtime_ns, ctime_ns)``, the kind, the file number."""


class TreeIndex(Protocol):
    """What these take of :class:`~rootbound.search.index.tree_index.TreeIndex` (the module above this one)."""

    path: Path
    saved: SavedStore | None
    identity: tuple[int, int] | None
    lock: threading.Lock
    state: str
    segments: list[Segment]
    names: list[list[str]]
    count: int
    bytes: int
    loaded: bool
    checking: bool
    reused: int
    known: Known
    kinds: dict[str, str]
    inodes: dict[str, int]
    numbers: dict[str, int]
    stats: dict[str, tuple[int, ...]]
    dirty: set[str]

    def _drain_locked(self) -> bool: ...


_UNCHECKED: Final = (-1, -1, -1, -1, -1)
"""The record of a file changed since it was read: it matches no stat, so the next server reads it again."""


_LOAD: Final = object()


def _fresh(records: npt.NDArray[np.int64], saved_ns: int) -> npt.NDArray[np.bool_]:
    """Which records may vouch for their file: changed (ctime) more than :data:`RACY_NS` before the save; a write
    in the same clock tick as the read leaves the times alone, so the others are read again."""
    fresh: npt.NDArray[np.bool_] = records[:, 4] < saved_ns - RACY_NS
    return fresh


def known_of(snap: Snapshot) -> Known | None:
    """A saved index's records by path (``(stat, kind, number)``), each to be checked against the kernel's before it
    is kept (:func:`kept`), those changed too close to the save left out; ``None`` when it holds more numbers of
    files gone or changed than of files (it is then built afresh, to stay compact)."""
    records = snap.records
    fresh = _fresh(records, snap.saved_ns)
    if snap.total > 2 * max(1, int((fresh & (records[:, 5] == KINDS.index(TEXT))).sum())):
        return None
    # By path, built in C (zip, map: no Python code per file; a first query waits for this).
    stats = map(tuple, records[:, :5].tolist())
    kinds = map(KINDS.__getitem__, records[:, 5].tolist())
    rows: Iterable[tuple[tuple[int, ...], str, int]] = zip(stats, kinds, records[:, 6].tolist(), strict=True)
    names: Iterable[str] = snap.names
    if not fresh.all():
        keep = fresh.tolist()
        names, rows = compress(names, keep), compress(rows, keep)
    return dict(zip(names, rows, strict=True))


def load_known(
    index: TreeIndex,
    snap: Snapshot | object | None = _LOAD,
    first: Callable[[], None] | None = None,
    known: Known | None = None,
) -> Known:
    """The saved index of this DIR, if one is kept and passes :func:`~saved.decode`: its segments taken as
    this index's first ones, and its records by path (:func:`known_of`, unless given: ``known``). Empty when there
    is none, or when :func:`known_of` refuses it."""
    saved, identity = index.saved, index.identity
    if saved is None or identity is None:
        return {}
    if snap is _LOAD:  # else read already (``snap``: while the take up's child walked, ``checker.py``)
        snap = saved.load(index.path, identity)
    if not isinstance(snap, Snapshot):
        return {}
    if known is None:
        known = known_of(snap)
        if known is None:
            return {}
    index.segments = list(snap.segments)
    index.names = [[] for _ in snap.segments]
    index.count = snap.total
    index.bytes = sum(segment.nbytes() for segment in snap.segments)
    index.known = known  # before the flag: a query taking the saved postings checks files by these
    if first is not None:  # what is already known to hold (a take up's child checked every file: checker.py)
        first()
    with index.lock:  # queries may use it from now on: every file not yet checked is opened (it has no kind)
        index.loaded = index.checking = True
    return known


_NEVER_VOUCHED: Final = (UNREADABLE, ALWAYS)
"""Kinds the saved postings do not answer for: such a file is opened by every query."""


def vouches(record: tuple[tuple[int, ...], str, int], now: tuple[int, ...], links: int) -> bool:
    """Whether the file an lstat found (``now``: its ``(dev, ino, size, mtime_ns, ctime_ns)``, and ``links``) is
    the one ``record`` describes: as recorded, one link, a kind the saved postings answer for. The one rule of the
    take up (:func:`kept`), a query's own check (:class:`Vouched`) and the take up's child (``checker.py``)."""
    stat_of, kind, _ = record
    return now == stat_of and links == 1 and kind not in _NEVER_VOUCHED


_NEVER_CODES: Final = tuple(KINDS.index(kind) for kind in _NEVER_VOUCHED)


def vouched_rows(snap: Snapshot, rows: npt.NDArray[np.int64], now: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """:func:`vouches` for many files at once (a take up's child reports every file: ``checker.py``), with the
    fresh rule :func:`known_of` applies: ``rows`` their records' places in ``snap`` (-1: none), ``now`` their
    ``lstat`` (one row each: dev, ino, size, mtime_ns, ctime_ns, links)."""
    import numpy as np

    if not len(snap.records):  # nothing recorded: nothing held (and no row to look at)
        return np.zeros(len(rows), np.bool_)
    records = snap.records[np.maximum(rows, 0)]
    held: npt.NDArray[np.bool_] = (
        (rows >= 0)
        & _fresh(records, snap.saved_ns)
        & (records[:, :5] == now[:, :5]).all(axis=1)
        & (now[:, 5] == 1)
        & ~np.isin(records[:, 5], _NEVER_CODES)
    )
    return held


def _now(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def kept(index: TreeIndex, known: Known, rel: str, dir_fd: int, name: str) -> bool:
    """Whether the file ``rel`` (``name`` in ``dir_fd``) is as the saved index recorded it, by the kernel's
    ``(dev, ino, size, mtime_ns, ctime_ns)`` and one link: then kept as recorded, without a read."""
    record = known.get(rel)
    if record is None:
        return False
    try:
        st = lstat_entry(dir_fd, name)
    except OSError:
        return False
    now = _now(st)
    if not vouches(record, now, st.st_nlink):
        return False
    _, kind, number = record
    if kind == TEXT:  # the number first: a query reading these meanwhile takes the kind as "searchable now"
        index.numbers[rel] = number
    index.inodes[rel] = st.st_ino
    index.stats[rel] = now
    index.kinds[rel] = kind
    index.reused += 1
    return True


class Vouched:
    """One query's own check of the files the take up has not reached yet (issue 51): as its walk lists each file
    (:meth:`check`, with the directory fd the walk holds), one ``lstat`` beneath that fd against the saved record;
    a file that matches is answered from the saved postings, every other one is opened by the query. What it finds
    is kept with the query only (:attr:`kinds`, :attr:`numbers`: the take up's so far, and these): the take up has
    not watched these directories yet, so what one query saw vouches for nothing later (the next checks again)."""

    def __init__(self, known: Known, kinds: dict[str, str], numbers: dict[str, int]) -> None:
        self.known = known
        self.kinds, self.numbers = dict(kinds), dict(numbers)  # copies: the take up adds to its own meanwhile

    def check(self, rel: str, dir_fd: int, name: str) -> None:
        """The file ``rel`` (its path in the index; ``name`` in ``dir_fd``), as the walk lists it."""
        record = self.known.get(rel)
        if record is None or rel in self.kinds:
            return
        try:
            st = lstat_entry(dir_fd, name)
        except OSError:
            return  # gone or unreadable: opened by the query, which counts it as a full scan would
        if vouches(record, _now(st), st.st_nlink):
            _, kind, number = record
            if kind == TEXT:
                self.numbers[rel] = number
            self.kinds[rel] = kind


def save_index(index: TreeIndex) -> None:
    """Keep this index for the next server (a build that ended ready, with nothing lost): every file as read,
    those changed since (dirty) or too close to now recorded as unchecked."""
    saved, identity = index.saved, index.identity
    if saved is None or identity is None or (index.loaded and index.reused == len(index.stats) and not index.dirty):
        index.stats = {}
        return
    import numpy as np

    with index.lock:
        if index.state != "ready" or not index._drain_locked():
            return
        now = time.time_ns()
        names = list(index.stats)
        code = {kind: at for at, kind in enumerate(KINDS)}
        dirty = index.dirty
        rows = [
            (*(_UNCHECKED if rel in dirty else index.stats[rel]), code[index.kinds[rel]], index.numbers.get(rel, -1))
            for rel in names
        ]
        segments = list(index.segments)
        count = index.count
    index.stats = {}
    records = np.array(rows, np.int64).reshape(len(rows), 7)
    saved.save(
        Snapshot(str(index.path), identity, now, names, records, segments, count), lambda: index.state == "closed"
    )
