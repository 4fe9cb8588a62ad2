"""Regular files on held fds: the type and hard-link policy, and bounded reads.

Why its own module: reading (``RootedFS.read_*`` and grep) and writing (``rootbound.confine.write_ops``) share these
steps, and a read has one subtle rule: it trusts ``fstat``'s size only as a hint (files grow). How writes land
(temp name, beneath proof, rename) is ``rootbound.confine.atomic_write``.
"""

from __future__ import annotations

import os
import stat
from typing import Literal, Protocol, TypeAlias

from rootbound.core.errors import HardLinked, IsADirectory, NotAFile, TooLarge

__all__ = ["HardlinkPolicy", "StatLike", "check_file", "read_fd", "read_rest"]

HardlinkPolicy: TypeAlias = Literal["read-only", "refuse", "allow"]


class StatLike(Protocol):
    """What the file checks read of a stat: an ``os.stat_result``, or the walk's ``statx`` facts."""

    @property
    def st_mode(self) -> int: ...
    @property
    def st_nlink(self) -> int: ...
    @property
    def st_size(self) -> int: ...


def check_file(st: StatLike, hardlinks: HardlinkPolicy, *, writing: bool) -> None:
    """The fstat after opening: type must fit, and the hard-link policy applies to regular files."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectory()
    if not stat.S_ISREG(mode):
        raise NotAFile()
    if st.st_nlink > 1 and (hardlinks == "refuse" or (writing and hardlinks == "read-only")):
        raise HardLinked()


def read_fd(fd: int, st: StatLike, limit: int) -> bytes:
    """All of the file ``fd`` (``st`` its fstat), refused past ``limit`` bytes."""
    size = st.st_size
    if size > limit:
        raise TooLarge()
    first = os.read(fd, size + 1 if size < limit else limit + 1)
    if len(first) == size:
        return first  # exactly the size fstat saw: done (the usual case, one read)
    return read_rest(fd, first, limit)


def read_rest(fd: int, first: bytes, limit: int) -> bytes:
    """Keep reading after ``first`` until EOF; more than ``limit`` bytes in all is :class:`TooLarge`."""
    chunks = [first]
    total = len(first)
    while chunks[-1]:
        if total > limit:
            raise TooLarge()
        chunk = os.read(fd, min(limit + 1 - total, 65536))
        total += len(chunk)
        chunks.append(chunk)
    if total > limit:
        raise TooLarge()
    return b"".join(chunks)
