"""The calls under way in one server (grep, search_files), so its index builds make way for them.

Why: a build (or a saved index's take up) is Python in a thread of the server's own process, so it competes with a
call for the interpreter's lock as well as for the CPU; at a low priority the kernel may also stop it while it holds
that lock, and the call waits for it (issue 51: the first grep of a new server ran 2-5x slower than the same work
alone). A build therefore stops between files while any call runs (:meth:`Calls.wait_idle`), and goes on after.
Also here: the one line a build's failure says on stderr (:func:`say_once`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

__all__ = ["Calls", "import_failure", "say_once"]

PAUSE: Final = 0.05
"""Seconds between a waiting build's looks at whether its index is closing."""
_SAID: set[str] = set()
_log = logging.getLogger("rootbound.search.index.tree_index")  # where they were said first


def say_once(line: str) -> None:
    """One line on stderr (the log's warning) the first time this process meets ``line``'s failure."""
    if line not in _SAID:
        _SAID.add(line)
        _log.warning("%s", line)


def import_failure(exc: ImportError) -> str:
    """What could not be imported, in one short line: the module's name and the message's last line (numpy's
    own message is many lines of advice, its cause last)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    detail = lines[-1][:160] if lines else type(exc).__name__
    return f"cannot import {exc.name or 'numpy'} ({detail})"


class Calls:
    """How many calls are under way (:meth:`running`), read by the builds (:meth:`wait_idle`)."""

    def __init__(self) -> None:
        self.idle = threading.Condition()
        self.count = 0

    @contextmanager
    def running(self) -> Iterator[None]:
        """One call under way for the block's length."""
        with self.idle:
            self.count += 1
        try:
            yield
        finally:
            with self.idle:
                self.count -= 1
                if not self.count:
                    self.idle.notify_all()

    def wait_idle(self, stop: Callable[[], bool]) -> None:
        """Return once no call runs, or ``stop()`` says so (looked at every :data:`PAUSE` seconds: the index is
        closing). The wait holds no interpreter lock: the call runs alone."""
        if not self.count:
            return
        with self.idle:
            while self.count and not stop():
                self.idle.wait(PAUSE)
