"""The build's reads (``tree_index.py``'s walk, or ``checker.py``'s report of a take up's child): each file opened
beneath the DIR is read once, its trigrams added to the segment being built, its kind and stat recorded."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

from rootbound.search.grep_scan import LineScanner
from rootbound.search.index.view import ALWAYS, BINARY, TOO_LARGE, UNREADABLE

if TYPE_CHECKING:
    from pathlib import Path

    from rootbound.search.index.postings import SegmentBuilder

__all__ = ["Reading", "Stopped"]


class Stopped(Exception):
    """The index was closed while it was being built."""


class Limits(Protocol):
    @property
    def max_file_size(self) -> int: ...


class Built(Protocol):
    """What a :class:`Reading` records into: ``tree_index.TreeIndex`` (the module above this one)."""

    cache: Path | None

    @property
    def limits(self) -> Limits: ...

    kinds: dict[str, str]
    inodes: dict[str, int]
    stats: dict[str, tuple[int, ...]]
    count: int

    def _take(self, builder: SegmentBuilder, names: list[str]) -> None: ...


class Reading:
    """One build's reads into ``index``: a file with more than one link, binary, too large or unreadable gets its
    kind (every query opens it, or none searches it), a text file its number in the segment being built."""

    def __init__(self, index: Built) -> None:
        from rootbound.search.index.postings import SegmentBuilder

        self.index = index
        self.builder = SegmentBuilder(index.cache)
        self.names: list[str] = []
        self.reader = LineScanner(search=None, required=b"-", max_file_size=index.limits.max_file_size)

    def add(self, rel: str, opened: tuple[int, os.stat_result] | None) -> None:
        """The file ``rel``, opened (``None``: it could not be: unreadable, for every query to open)."""
        from rootbound.search.index.postings import file_grams

        index = self.index
        if opened is None:
            index.kinds[rel] = UNREADABLE
            return
        fd, fst = opened
        why: list[str] = []
        try:
            data = self.reader.read(fd, fst.st_size, why.append)
        finally:
            os.close(fd)
        index.inodes[rel] = fst.st_ino
        index.stats[rel] = (fst.st_dev, fst.st_ino, fst.st_size, fst.st_mtime_ns, fst.st_ctime_ns)
        if fst.st_nlink != 1:
            index.kinds[rel] = ALWAYS
            return
        if data is None:
            index.kinds[rel] = {"binary": BINARY, "too_large": TOO_LARGE}.get(why[0] if why else "", UNREADABLE)
            return
        self.builder.add(file_grams(data))
        self.names.append(rel)
        index.count += 1  # its number, told with its segment (``TreeIndex._take``)
        if self.builder.full():
            index._take(self.builder, self.names)
            self.names = []

    def flush(self) -> None:
        """The last segment, however small."""
        self.index._take(self.builder, self.names)
        self.names = []
