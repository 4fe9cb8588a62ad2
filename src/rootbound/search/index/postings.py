"""Trigram posting lists: which files hold every trigram of a literal. Candidates only; RE2 decides.

Why this shape (``bench/search_engines.py`` compares it with SQLite FTS5 and roaring bitmaps): a file's distinct
trigrams come from three shifted views of its bytes and one ``np.unique`` (C speed, ~1 ns a byte), and a segment of
up to 65,535 files keeps its postings as ``uint16`` file numbers sorted by trigram: two bytes a posting, one binary
search per query trigram. A trigram in nearly every file of a segment narrows nothing, so it is kept only as "dense": a
query counts it as present in every file of that segment. Segments are written to the index's cache
directory and memory-mapped, so the server's RSS does not grow with the tree.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from rootbound.search.index.literals import GRAM

__all__ = ["MAX_SEGMENT_FILES", "Segment", "SegmentBuilder", "file_grams", "holding", "literal_grams"]

MAX_SEGMENT_FILES: Final = 65_535
MAX_SEGMENT_POSTINGS: Final = 4 << 20
"""Postings buffered before a segment is written: bounds the build's memory (~50 MB with the sort's scratch)."""
DENSE_PART: Final = 0.9
"""A trigram in more than this part of a segment's files (of at least :data:`DENSE_MIN_FILES`) is dense. Measured
(``bench/search_engines.py``, the standard library): dense past a quarter of the files saved a quarter of the
postings' bytes and doubled the candidates of common literals (``Error(``: 11,028 files instead of 5,034, of which
4,431 hold it), and every candidate is a file to open."""
DENSE_MIN_FILES: Final = 64

_FOLD = np.arange(256, dtype=np.uint8)
_FOLD[65:91] += 32

U32 = npt.NDArray[np.uint32]


def file_grams(data: bytes) -> U32:
    """The distinct trigrams of ``data``, ASCII letters folded, as sorted ``b0 << 16 | b1 << 8 | b2``."""
    if len(data) < GRAM:
        return np.empty(0, np.uint32)
    folded = _FOLD[np.frombuffer(data, np.uint8)]
    wide = folded.astype(np.uint32)
    grams = (wide[:-2] << 16) | (wide[1:-1] << 8) | wide[2:]
    return np.unique(grams)


def literal_grams(literals: Sequence[bytes]) -> U32:
    """The distinct trigrams of folded literals (:func:`~literals.required_literals`)."""
    return np.unique(np.concatenate([file_grams(literal) for literal in literals]))


class Segment:
    """Postings of up to :data:`MAX_SEGMENT_FILES` files: ``keys`` (sorted trigrams), ``starts`` (offsets into
    ``ids``, one more than keys), ``ids`` (file numbers in the segment), ``dense`` (sorted trigrams in too many
    files to list)."""

    __slots__ = ("count", "dense", "ids", "keys", "starts")

    def __init__(self, count: int, keys: U32, starts: U32, ids: npt.NDArray[np.uint16], dense: U32) -> None:
        self.count, self.keys, self.starts, self.ids, self.dense = count, keys, starts, ids, dense

    def matching(self, grams: U32) -> npt.NDArray[np.uint16] | None:
        """The files of this segment that hold every trigram of ``grams``; ``None``: all of them (every trigram is
        dense)."""
        lists: list[npt.NDArray[np.uint16]] = []
        keys = self.keys
        for gram in grams:
            at = int(np.searchsorted(keys, gram))
            if at < len(keys) and keys[at] == gram:
                lists.append(self.ids[int(self.starts[at]) : int(self.starts[at + 1])])
                continue
            dense = self.dense
            spot = int(np.searchsorted(dense, gram))
            if spot < len(dense) and dense[spot] == gram:
                continue  # in most files: narrows nothing
            return np.empty(0, np.uint16)  # in no file of this segment
        if not lists:
            return None
        lists.sort(key=len)
        found = np.asarray(lists[0])
        for more in lists[1:]:
            if not len(found):
                break
            found = np.intersect1d(found, more, assume_unique=True)
        return found

    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.starts.nbytes + self.ids.nbytes + self.dense.nbytes)


class SegmentBuilder:
    """Files' trigrams in, segments out (written under ``directory`` and memory-mapped, or kept in memory when
    ``directory`` is ``None``)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.parts: list[U32] = []
        self.postings = 0
        self.written = 0

    @property
    def files(self) -> int:
        """Files added to the segment being built."""
        return len(self.parts)

    def add(self, grams: U32) -> tuple[int, int]:
        """Add one file; its ``(segment number, file number in it)``. The segment number is the count of segments
        :meth:`flush` has produced before it."""
        number = len(self.parts)
        self.parts.append(grams)
        self.postings += len(grams)
        return self.written, number

    def full(self) -> bool:
        return len(self.parts) >= MAX_SEGMENT_FILES or self.postings >= MAX_SEGMENT_POSTINGS

    def flush(self) -> Segment | None:
        """The segment of the files added since the last flush (``None`` if none)."""
        parts, self.parts, self.postings = self.parts, [], 0
        if not parts:
            return None
        count = len(parts)
        lengths = np.fromiter((len(part) for part in parts), np.int64, count)
        grams = np.concatenate(parts) if parts else np.empty(0, np.uint32)
        owners = np.repeat(np.arange(count, dtype=np.uint16), lengths)
        order = np.argsort(grams, kind="stable")  # owners stay ascending within a trigram
        grams, owners = grams[order], owners[order]
        del order
        keys, first, counts = np.unique(grams, return_index=True, return_counts=True)
        del grams
        dense_mask = (counts > DENSE_PART * count) & (count >= DENSE_MIN_FILES)
        keep = np.repeat(~dense_mask, counts)
        ids = owners[keep]
        listed = keys[~dense_mask].astype(np.uint32)
        starts = np.zeros(len(listed) + 1, np.uint32)
        np.cumsum(counts[~dense_mask], out=starts[1:])
        dense = keys[dense_mask].astype(np.uint32)
        del first
        segment = Segment(count, listed, starts, ids.astype(np.uint16), dense)
        self.written += 1
        return self._stored(segment) if self.directory is not None else segment

    def _stored(self, segment: Segment) -> Segment:
        """Write the arrays beside each other and map them back (read-only): pages the kernel can drop."""
        assert self.directory is not None
        arrays: Sequence[tuple[str, npt.NDArray[np.generic]]] = (
            ("keys", segment.keys),
            ("starts", segment.starts),
            ("ids", segment.ids),
            ("dense", segment.dense),
        )
        mapped: dict[str, npt.NDArray[np.generic]] = {}
        for name, array in arrays:
            path = self.directory / f"seg{self.written - 1:05d}-{name}.npy"
            with open(path, "wb") as out:
                np.save(out, array)
            mapped[name] = np.load(path, mmap_mode="r") if array.size else array
            os.chmod(path, 0o600)
        return Segment(segment.count, mapped["keys"], mapped["starts"], mapped["ids"], mapped["dense"])  # type: ignore[arg-type]


def holding(segments: Sequence[Segment], literals: Sequence[bytes]) -> npt.NDArray[np.int64]:
    """The numbers of the files of ``segments`` (numbered in order) that hold every trigram of ``literals``."""
    grams = literal_grams(literals)
    found: list[npt.NDArray[np.int64]] = []
    first = 0
    for segment in segments:
        local = segment.matching(grams)
        if local is None:
            found.append(np.arange(first, first + segment.count, dtype=np.int64))
        elif len(local):
            found.append(local.astype(np.int64) + first)
        first += segment.count
    return np.concatenate(found) if found else np.empty(0, np.int64)
