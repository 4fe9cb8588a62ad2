"""How many roots a client may make the server hold open: a cap per snapshot and a global descriptor budget.

Each effective root is held by an open descriptor for as long as its snapshot lives (a handshake-era session's
whole life), so roots are a resource a client spends on the server's behalf. One HTTP session declaring 1,024
file roots pinned 1,023 fds at the common 1,024 limit: ``accept()`` failed and every other client went
unanswered. Two limits, each refusing with a clear message instead of failing somewhere later:

* :attr:`RootBudget.max_roots` roots per snapshot (``--max-roots``): a larger snapshot is refused whole (taking
  some and silently dropping the rest would serve a different workspace than the client declared);
* a process-wide budget: a new snapshot is taken in only while the open descriptors stay below
  :attr:`RootBudget.fraction` of ``RLIMIT_NOFILE``, so sockets, files being read and the listener keep room.

At start the soft ``RLIMIT_NOFILE`` is raised to the hard limit (:func:`raise_fd_limit`), as servers usually do.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from typing import Final

__all__ = ["RootBudget", "RootsRefused", "open_fds", "raise_fd_limit"]

FDS_PER_ROOT: Final = 2
"""A file root holds its parent directory and the file; a directory root one fd (the worst case is counted)."""


class RootsRefused(Exception):
    """A snapshot the server will not hold; the message is fixed text safe to show the client."""


def open_fds() -> int:
    """Descriptors this process has open now."""
    for directory in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(directory)) - 1  # the listing's own descriptor
        except OSError:
            continue
    return 0


def fd_limit() -> int:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def raise_fd_limit(cap: int = 65_536) -> int:
    """Raise the soft ``RLIMIT_NOFILE`` towards the hard limit (at most ``cap``); the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft
        return target
    return soft


@dataclass(frozen=True)
class RootBudget:
    max_roots: int = 256
    fraction: float = 0.75

    def __post_init__(self) -> None:
        if self.max_roots <= 0 or not 0 < self.fraction <= 1:
            raise ValueError("max_roots must be positive and fraction in (0, 1]")

    def admit(self, roots: int) -> None:
        """Raise :class:`RootsRefused` unless a new snapshot of ``roots`` roots may be taken in now."""
        if roots > self.max_roots:
            raise RootsRefused(
                f"refused: the client declared {roots} roots; this server holds at most {self.max_roots} per "
                "client (--max-roots)"
            )
        budget = int(fd_limit() * self.fraction)
        if open_fds() + FDS_PER_ROOT * roots > budget:
            raise RootsRefused(
                "refused: the server is holding as many roots as its file-descriptor budget allows; "
                "try again later or declare fewer roots"
            )
