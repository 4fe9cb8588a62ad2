"""The index kept between server processes (issue 51): one file per DIR, per user, checked before it is trusted.

Why it can be trusted at all: it never answers by itself. A new server loads it, then walks the DIR as a build
would (watching every directory before listing it) and keeps a recorded file only when the kernel's
``(dev, ino, size, mtime_ns, ctime_ns)`` for it are those recorded, with one link; every other file is read again.
ctime cannot be set back by a user, and a file whose ctime is within :data:`RACY_NS` of the save is recorded as
unchecked (a write in the same clock tick as the read leaves the times alone). While the check runs, a query uses
the saved postings for the files already checked and opens every other file, so an answer is never less than a
full scan's (``TreeIndex.usable``).

The file (:func:`encode`, :func:`decode`): ``MAGIC``, the format version, the body's length and its SHA-256, then
the body: a JSON header (the DIR's path and identity, when it was saved, where each array is) and the arrays,
8-aligned, of fixed types. Anything that does not fit exactly (length, checksum, version, another DIR, an array out
of bounds, unsorted keys, a file number out of range, a path that is not a plain relative path) is refused with a
reason and the server builds afresh. A checksum stops bytes flipped or cut off, not a process of the same user that
rewrites the file whole: such a process can change the DIR's files too.

Where: ``$ROOTBOUND_CACHE_HOME/rootbound/index/saved`` (else ``$XDG_CACHE_HOME``; ``confine/cache_folder``:
reached one component at a time, no link followed, 0700, this user's), held open from start; at most
:data:`MAX_SAVED` files and :data:`MAX_SAVED_BYTES` bytes, the least recently used evicted first.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from rootbound.confine.cache_folder import open_saved, remove_under, saved_entries, touch, write_saved

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from rootbound.search.index.postings import Segment

__all__ = ["KINDS", "MAX_SAVED", "MAX_SAVED_BYTES", "RACY_NS", "Refused", "SavedStore", "Snapshot", "decode", "encode"]

MAGIC: Final = b"RBINDEX\n"
VERSION: Final = 1
_HEAD: Final = struct.Struct("<8sIIQ32s")
MAX_SAVED: Final = 16
"""DIRs whose index is kept on disk (per user); the least recently used goes first."""
MAX_SAVED_BYTES: Final = 2 << 30
"""Bytes all kept indexes take together (2 GiB); the least recently used go first."""
RACY_NS: Final = 2_000_000_000
"""A file changed this close to the save (ns) is recorded as unchecked: read again by the next server."""
KINDS: Final = ("t", "b", "L", "u", "h")
"""The kind codes a record holds: text, binary, too large, unreadable, more than one link (``view``'s kinds)."""
_FIELDS: Final = 7  # dev, ino, size, mtime_ns, ctime_ns, kind code, file number (-1: not an indexed text file)
_SEGMENT_ARRAYS: Final = (("keys", "<u4"), ("starts", "<u4"), ("ids", "<u2"), ("dense", "<u4"))
_MAX_SEGMENT_FILES: Final = 65_535


class Stopped(Exception):
    """A save given up because the index is closing (the temporary file is removed)."""


class Refused(Exception):
    """A saved index that is not used, and why (a fixed text, never the file's content)."""


@dataclass
class Snapshot:
    """What one saved index holds: the DIR (canonical path, ``(dev, ino)``), when it was saved (``time_ns``), the
    recorded files' paths and their :data:`_FIELDS` records, the segments and how many file numbers they use."""

    dir: str
    identity: tuple[int, int]
    saved_ns: int
    names: list[str]
    records: npt.NDArray[np.int64]
    segments: list[Segment]
    total: int


def _bytes_of(array: npt.NDArray[Any], kind: str) -> memoryview:
    """``array``'s bytes as ``kind``, without a copy when it already is (a segment's mapped pages: no memory of
    the server's own for them while they are written)."""
    import numpy as np

    return np.ascontiguousarray(array.astype(kind, copy=False)).data.cast("B")


def encode(snap: Snapshot, stop: Callable[[], bool] | None = None) -> Iterator[bytes | memoryview]:
    """The file's bytes, in pieces (the head first: its checksum is over the body, computed before). ``stop``:
    checked between pieces; raises :class:`Stopped` when it says so (the server is closing the index)."""
    blobs: list[tuple[str, bytes | memoryview]] = [
        ("names", "\0".join(snap.names).encode("utf-8", "surrogateescape")),
        ("records", _bytes_of(snap.records, "<i8")),
    ]
    for at, segment in enumerate(snap.segments):
        for name, kind in _SEGMENT_ARRAYS:
            blobs.append((f"{at}.{name}", _bytes_of(getattr(segment, name), kind)))
    places: dict[str, list[int]] = {}
    offset = 0
    for name, blob in blobs:
        places[name] = [offset, len(blob)]
        offset += _aligned(len(blob))
    meta = {
        "dir": snap.dir,
        "dev": snap.identity[0],
        "ino": snap.identity[1],
        "saved_ns": snap.saved_ns,
        "files": len(snap.names),
        "total": snap.total,
        "segments": [segment.count for segment in snap.segments],
        "blobs": places,
    }
    header = json.dumps(meta, separators=(",", ":")).encode()
    lead = struct.pack("<Q", len(header)) + header
    lead += b"\0" * (_aligned(len(lead)) - len(lead))
    pieces: list[bytes | memoryview] = [lead]
    for _, blob in blobs:
        pieces.append(blob)
        pieces.append(b"\0" * (_aligned(len(blob)) - len(blob)))
    digest = hashlib.sha256()
    for piece in pieces:
        if stop is not None and stop():
            raise Stopped
        digest.update(piece)
    yield _HEAD.pack(MAGIC, VERSION, 0, sum(len(p) for p in pieces), digest.digest())
    for piece in pieces:
        if stop is not None and stop():
            raise Stopped
        yield piece


def _aligned(size: int) -> int:
    return (size + 7) & ~7


def decode(data: Any, directory: str, identity: tuple[int, int]) -> Snapshot:
    """The snapshot in ``data`` (a buffer: bytes, an mmap) for the DIR ``directory`` with ``identity``; raises
    :class:`Refused` on anything that does not fit exactly (the arrays are views of ``data``, never copied)."""
    import numpy as np

    from rootbound.search.index.postings import Segment

    view = memoryview(data)
    if len(view) < _HEAD.size:
        raise Refused("truncated")
    magic, version, _, length, checksum = _HEAD.unpack_from(view)
    if magic != MAGIC:
        raise Refused("not a saved index")
    if version != VERSION:
        raise Refused("another format version")
    body = view[_HEAD.size :]
    if length != len(body):
        raise Refused("truncated or extended")
    if hashlib.sha256(body).digest() != checksum:
        raise Refused("checksum mismatch")
    meta = _header(body)
    if meta.get("dir") != directory or (meta.get("dev"), meta.get("ino")) != identity:
        raise Refused("saved for another directory")
    start = _aligned(8 + _int(struct.unpack_from("<Q", body)[0], len(body)))
    blobs = body[start:]
    places = meta.get("blobs")
    if not isinstance(places, dict):
        raise Refused("malformed header")

    def array(name: str, kind: str) -> npt.NDArray[Any]:
        place = places.get(name)
        if not isinstance(place, list) or len(place) != 2:
            raise Refused("malformed header")
        offset, size = _int(place[0], len(blobs)), _int(place[1], len(blobs))
        width = np.dtype(kind).itemsize
        if offset % 8 or size % width or offset + size > len(blobs):
            raise Refused("an array out of bounds")
        return np.frombuffer(blobs, kind, size // width, offset)

    files, total = _int(meta.get("files"), 1 << 32), _int(meta.get("total"), 1 << 32)
    names_place = places.get("names")
    if not isinstance(names_place, list) or len(names_place) != 2:
        raise Refused("malformed header")
    raw = bytes(array("names", "u1"))
    names = raw.decode("utf-8", "surrogateescape").split("\0") if files else []
    if len(names) != files or (files and not _all_plain(raw)) or len(set(names)) != files:
        raise Refused("malformed file names")
    records = array("records", "<i8")
    if len(records) != files * _FIELDS:
        raise Refused("malformed records")
    records = records.reshape(files, _FIELDS)
    counts = meta.get("segments")
    if not isinstance(counts, list) or len(counts) > (1 << 20):
        raise Refused("malformed header")
    segments = [_segment(Segment, array, at, _int(count, _MAX_SEGMENT_FILES + 1)) for at, count in enumerate(counts)]
    if sum(segment.count for segment in segments) != total:
        raise Refused("file numbers do not add up")
    kinds, numbers = records[:, 5], records[:, 6]
    if len(records) and (kinds.min() < 0 or kinds.max() >= len(KINDS)):
        raise Refused("an unknown kind")
    text = numbers[kinds == 0]
    if (numbers[kinds != 0] != -1).any() or (len(text) and (text.min() < 0 or text.max() >= total)):
        raise Refused("a file number out of range")
    ordered = np.sort(text)  # not np.unique: its first call imports numpy.ma (~30 ms of a first query)
    if (ordered[1:] == ordered[:-1]).any():
        raise Refused("a file number used twice")
    saved_ns = _int(meta.get("saved_ns"), 1 << 63)
    return Snapshot(directory, identity, saved_ns, names, records, segments, total)


def _header(body: memoryview) -> dict[str, Any]:
    if len(body) < 8:
        raise Refused("truncated")
    size = _int(struct.unpack_from("<Q", body)[0], len(body) - 8)
    try:
        meta = json.loads(bytes(body[8 : 8 + size]))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise Refused("malformed header") from None
    if not isinstance(meta, dict):
        raise Refused("malformed header")
    return meta


def _int(value: object, limit: int) -> int:
    """``value`` if it is an int in ``[0, limit]``, else refused (JSON may hold anything)."""
    if type(value) is not int or not 0 <= value <= limit:
        raise Refused("malformed header")
    return value


def _plain(name: str) -> bool:
    """A path the index may hold: relative, no empty, ``.`` or ``..`` component."""
    return bool(name) and not name.startswith("/") and all(part not in ("", ".", "..") for part in name.split("/"))


def _all_plain(raw: bytes) -> bool:
    """:func:`_plain` of every name of ``raw`` (the names joined by NUL) at once, in C: each name becomes
    ``/name/`` between NULs, so an empty name, a leading or trailing ``/`` or an empty component shows as ``//``,
    and a ``.`` or ``..`` component as ``/./`` or ``/../`` (``/`` and ``.`` are ASCII: the UTF-8 decoding
    with surrogate escapes that gives the names maps no other byte to them)."""
    framed = b"/" + raw.replace(b"\0", b"/\0/") + b"/"
    return b"//" not in framed and b"/./" not in framed and b"/../" not in framed


def _segment(make: type[Segment], array: Any, at: int, count: int) -> Segment:
    """Segment ``at``, checked: its keys strictly rising, its offsets rising from 0 to the ids' end, every id a
    file of the segment (what :meth:`Segment.matching` assumes)."""
    import numpy as np

    parts = {name: array(f"{at}.{name}", kind) for name, kind in _SEGMENT_ARRAYS}
    keys, starts, ids, dense = parts["keys"], parts["starts"], parts["ids"], parts["dense"]
    if count == 0 or len(starts) != len(keys) + 1 or int(starts[0]) != 0 or int(starts[-1]) != len(ids):
        raise Refused("a malformed segment")
    if (np.diff(keys.astype(np.int64)) <= 0).any() or (np.diff(dense.astype(np.int64)) <= 0).any():
        raise Refused("a malformed segment")
    if (np.diff(starts.astype(np.int64)) < 0).any() or (len(ids) and int(ids.max()) >= count):
        raise Refused("a malformed segment")
    return make(count, keys, starts, ids, dense)


def saved_name(directory: str) -> str:
    """The file one DIR's index is kept in (its canonical path's digest: one file per DIR)."""
    return hashlib.sha256(directory.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".rbi"


class SavedStore:
    """The folder of saved indexes (``dir_fd``, held open from start; see the module's docstring)."""

    def __init__(self, dir_fd: int, *, max_files: int = MAX_SAVED, max_bytes: int = MAX_SAVED_BYTES) -> None:
        self.dir_fd = dir_fd
        self.max_files, self.max_bytes = max_files, max_bytes
        self.lock = threading.Lock()
        self.refused: list[str] = []  # why saved indexes were not used (for tests and the status)

    def close(self) -> None:
        with self.lock:
            if self.dir_fd >= 0:
                os.close(self.dir_fd)
                self.dir_fd = -1

    def has(self, directory: Path) -> bool:
        opened = open_saved(self.dir_fd, saved_name(str(directory)), self.max_bytes)
        if opened is None:
            return False
        os.close(opened[0])
        return True

    def load(self, directory: Path, identity: tuple[int, int]) -> Snapshot | None:
        """The DIR's saved index, checked (:func:`decode`), or ``None`` (none, or refused: the reason kept)."""
        opened = open_saved(self.dir_fd, saved_name(str(directory)), self.max_bytes)
        if opened is None:
            return None
        fd, size = opened
        try:
            if size == 0:
                raise Refused("empty")
            mapped = mmap.mmap(fd, size, prot=mmap.PROT_READ)
            snap = decode(mapped, str(directory), identity)
            touch(fd)
            return snap
        except (Refused, OSError, ValueError) as exc:
            self.refused.append(str(exc) if isinstance(exc, Refused) else type(exc).__name__)
            return None
        finally:
            os.close(fd)

    def save(self, snap: Snapshot, stop: Callable[[], bool] | None = None) -> None:
        """Write ``snap`` over the DIR's saved index (atomically), then evict past the bounds. Errors are
        swallowed: a server that cannot save builds afresh next time. ``stop``: give up (the server is closing)."""
        name = saved_name(snap.dir)
        with self.lock:
            try:
                write_saved(self.dir_fd, name, encode(snap, stop))
                self._evict(keep=name)
            except (OSError, Stopped):
                return

    def _evict(self, keep: str) -> None:
        entries = saved_entries(self.dir_fd)
        now = time.time_ns()
        for entry in entries:  # a temporary file of a server killed while writing, an hour old
            if entry.name.startswith(".") and now - entry.used_ns > 3600 * 10**9:
                remove_under(self.dir_fd, entry.name)
        kept = sorted((e for e in entries if e.name.endswith(".rbi")), key=lambda e: e.used_ns, reverse=True)
        total = count = 0
        for entry in kept:
            total, count = total + entry.size, count + 1
            if entry.name != keep and (count > self.max_files or total > self.max_bytes):
                remove_under(self.dir_fd, entry.name)
                total, count = total - entry.size, count - 1

    def clear(self) -> int:
        """``--clear-index``: every saved index; how many."""
        removed = 0
        for entry in saved_entries(self.dir_fd):
            remove_under(self.dir_fd, entry.name)
            removed += 1
        return removed
