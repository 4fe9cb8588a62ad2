"""Rate-limited logging: an error storm costs a few lines a window, not the disk.

A server's stderr is a host's log file. Some failures repeat as fast as the event loop can spin: ``accept()`` out
of file descriptors logs one traceback per retry (3,400 tracebacks, 1.4 MB, in three seconds), and a hostile
client can make every request fail the same way. :class:`RateLimit` lets the first :attr:`burst` records of
each kind (logger, level, message template) through per :attr:`window`, and at most :attr:`total` records of all
kinds; the first record let through in a later window says how many were suppressed. Message *templates* are the
key, never the formatted text, so varying arguments cannot mint new kinds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["RateLimit", "install"]


@dataclass
class RateLimit(logging.Filter):
    """A ``logging.Filter`` for handlers: per-kind and global budgets per window, with a suppression count."""

    burst: int = 5
    total: int = 50
    window: float = 10.0
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    _counts: dict[tuple[str, int, str], int] = field(default_factory=dict, repr=False)
    _suppressed: int = 0
    _started: float = field(default=-1.0, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        super().__init__()

    def filter(self, record: logging.LogRecord) -> bool:
        now = self.clock()
        key = (record.name, record.levelno, str(record.msg)[:200])
        with self._lock:
            if self._started < 0 or now - self._started >= self.window:
                self._started = now
                self._counts.clear()
                suppressed, self._suppressed = self._suppressed, 0
            else:
                suppressed = 0
            seen = self._counts.get(key, 0)
            allowed = seen < self.burst and sum(self._counts.values()) < self.total
            if len(self._counts) < 4 * self.total or key in self._counts:
                self._counts[key] = seen + 1
            if not allowed:
                self._suppressed += 1
                return False
        if suppressed:
            record.msg = f"{record.msg} [{suppressed} similar log records suppressed in the previous window]"
        return True


def install(logger: logging.Logger | None = None, limit: RateLimit | None = None) -> RateLimit:
    """Put one :class:`RateLimit` on every handler of ``logger`` (the root logger by default)."""
    limit = limit or RateLimit()
    for handler in (logger or logging.getLogger()).handlers:
        handler.addFilter(limit)
    return limit
