"""The calls under way in one server (grep, search_files), so its index builds make way for them.

Why: a build (or a saved index's take up) is Python in a thread of the server's own process, so it competes with a
call for the interpreter's lock as well as for the CPU; at a low priority the kernel may also stop it while it holds
that lock, and the call waits for it (issue 51: the first grep of a new server ran 2-5x slower than the same work
alone). A build therefore stops between files while any call runs (:meth:`Calls.wait_idle`), and goes on after.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

__all__ = ["Calls"]

PAUSE: Final = 0.002
"""Seconds a build sleeps between looks while a call runs."""


class Calls:
    """How many calls are under way (:meth:`running`), read by the builds (:meth:`wait_idle`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0

    @contextmanager
    def running(self) -> Iterator[None]:
        """One call under way for the block's length."""
        with self.lock:
            self.count += 1
        try:
            yield
        finally:
            with self.lock:
                self.count -= 1

    def wait_idle(self, stop: Callable[[], bool]) -> None:
        """Return once no call runs, or ``stop()`` says so (the index is closing)."""
        while self.count and not stop():
            time.sleep(PAUSE)
