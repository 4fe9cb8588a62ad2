"""``resources/subscribe`` from the kernel: inotify watches on the directories that hold subscribed resources, one
reader thread while any watch exists, ``notifications/resources/updated`` to each subscriber.

Why a module of its own: the watches are shared by every session of the process (the kernel gives one watch per
directory inode, so two subscribers to files of one directory share it), counted (per session and per process,
:data:`MAX_PER_SESSION`, :data:`MAX_PER_PROCESS`), and everything ends with the last subscriber: the watch is
removed when the last subscription on its directory leaves, the reader thread and the inotify fd when the last
watch does. A session that ends drops all of its subscriptions (:meth:`Watches.drop_session`).

What is watched is chosen beneath the roots: the caller hands over a directory fd opened through
:meth:`Boundary.open` and the watch is added through that fd (``/proc/self/fd/N``), never by name. An inotify
queue overflow (events lost) is said to every subscriber: each gets an ``updated`` for what it subscribed to.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from rootbound.confine.fd_access import name_thread
from rootbound.confine.inotify import Inotify
from rootbound.workspace.limits.workers import Workers

__all__ = ["BOOKKEEPING", "MAX_PER_PROCESS", "MAX_PER_SESSION", "Notify", "Subscription", "Watches", "WatchesFull"]

MAX_PER_SESSION: Final = 64
"""Subscriptions one session may hold at once."""
MAX_PER_PROCESS: Final = 1024
"""inotify watches the process holds for subscriptions (the kernel's per-user default is 8192, shared with the
search index's)."""
_BATCH: Final = 4096
THREAD_NAME: Final = "rootbound-watch"
BOOKKEEPING: Final = Workers(4, name="rootbound-watches")
"""Threads for the handlers' calls into :class:`Watches` off the event loop (unsubscribing, a stream's end, roots
narrowing): they may wait for the lock or join a reader thread. Idle ones end after 1 s (anyio's stayed 10 s)."""

Notify = Callable[[str], None]
"""Sends ``notifications/resources/updated`` for a URI to one session (from the reader thread; must not block)."""


class WatchesFull(Exception):
    """A subscription over a bound: the text says which and how to make room."""


@dataclass(frozen=True)
class Subscription:
    """One session's subscription: the URI it subscribed to (canonical) and, for a file, its name in the watched
    directory (``""``: the directory itself is the resource)."""

    session: object
    uri: str
    name: str


@dataclass
class _Watch:
    wd: int
    subscribers: dict[tuple[object, str], Subscription] = field(default_factory=dict)


class Watches:
    """The process's subscription watches (one instance per server)."""

    def __init__(self, *, per_session: int = MAX_PER_SESSION, per_process: int = MAX_PER_PROCESS) -> None:
        self.per_session = per_session
        self.per_process = per_process
        self._lock = threading.Lock()
        self._inotify: Inotify | None = None
        self._thread: threading.Thread | None = None
        self._wake: tuple[int, int] | None = None
        self._by_wd: dict[int, _Watch] = {}
        self._by_key: dict[tuple[object, str], int] = {}  # (session, uri) -> wd
        self._notify: dict[object, Notify] = {}
        self._counts: dict[object, int] = {}
        self._ending: list[tuple[Inotify, threading.Thread, tuple[int, int]]] = []

    # -- what the handlers call ------------------------------------------------------------------------------------

    def subscribe(self, session: object, notify: Notify, dir_fd: int, subscription: Subscription) -> None:
        """Watch the directory ``dir_fd`` (held by the caller, opened beneath a root) for ``subscription``; raises
        :class:`WatchesFull` over a bound, :class:`OSError` when the kernel refuses the watch."""
        try:
            with self._lock:
                self._add(session, notify, dir_fd, subscription)
        finally:
            self._finish()

    def unsubscribe(self, session: object, uri: str) -> bool:
        """Drop one subscription (``False``: there was none)."""
        try:
            with self._lock:
                found = self._remove((session, uri))
                self._stop_if_idle()
                return found
        finally:
            self._finish()

    def drop_session(self, session: object) -> None:
        """A session ended: every subscription it held goes, and whatever only it needed stops."""
        try:
            with self._lock:
                for key in [key for key in self._by_key if key[0] == session]:
                    self._remove(key)
                self._notify.pop(session, None)
                self._stop_if_idle()
        finally:
            self._finish()

    def subscribed(self, session: object) -> list[str]:
        """The URIs ``session`` is subscribed to now."""
        with self._lock:
            return [uri for who, uri in self._by_key if who == session]

    def end(self, session: object, uris: list[str]) -> None:
        """End these subscriptions of ``session`` and say so: each gets a last ``updated`` (a read of it now answers
        what it is, not found once it has left the roots), then it is gone."""
        try:
            with self._lock:
                notify = self._notify.get(session)
                ended = [uri for uri in uris if self._remove((session, uri))]
                self._stop_if_idle()
        finally:
            self._finish()
        if notify is not None:
            for uri in ended:
                notify(uri)

    def counts(self) -> tuple[int, int, bool]:
        """``(subscriptions, watches, reader thread running)`` now: what a test counts back to zero."""
        with self._lock:
            return len(self._by_key), len(self._by_wd), self._thread is not None

    # -- the watches -----------------------------------------------------------------------------------------------

    def _add(self, session: object, notify: Notify, dir_fd: int, subscription: Subscription) -> None:
        key = (session, subscription.uri)
        if key in self._by_key:
            return  # already subscribed: subscribing again changes nothing
        if self._counts.get(session, 0) >= self.per_session:
            raise WatchesFull(f"at most {self.per_session} subscriptions per session: unsubscribe from one first")
        inotify = self._start()
        try:
            wd = inotify.watch_entry(dir_fd)
        except OSError:
            self._stop_if_idle()
            raise
        watch = self._by_wd.get(wd)
        if watch is None:
            if len(self._by_wd) >= self.per_process:
                inotify.unwatch(wd)
                self._stop_if_idle()
                raise WatchesFull(
                    f"this server already watches {self.per_process} directories for subscriptions (its bound): "
                    "try again once others unsubscribe"
                )
            watch = self._by_wd[wd] = _Watch(wd)
        watch.subscribers[key] = subscription
        self._by_key[key] = wd
        self._notify[session] = notify
        self._counts[session] = self._counts.get(session, 0) + 1

    def _remove(self, key: tuple[object, str]) -> bool:
        wd = self._by_key.pop(key, None)
        if wd is None:
            return False
        session = key[0]
        left = self._counts.get(session, 1) - 1
        if left:
            self._counts[session] = left
        else:
            self._counts.pop(session, None)
            self._notify.pop(session, None)
        watch = self._by_wd.get(wd)
        if watch is not None:
            watch.subscribers.pop(key, None)
            if not watch.subscribers:
                del self._by_wd[wd]
                if self._inotify is not None:
                    self._inotify.unwatch(wd)
        return True

    def _start(self) -> Inotify:
        if self._inotify is None:
            self._inotify = Inotify()
            self._wake = os.pipe()
            named = threading.Event()
            self._thread = threading.Thread(
                target=self._read, args=(self._inotify, self._wake[0], named), name=THREAD_NAME, daemon=True
            )
            self._thread.start()
            named.wait()  # named in the kernel too before the first subscription is answered: what ps shows is true
        return self._inotify

    def _stop_if_idle(self) -> None:
        """With no watch left: the reader thread is told to end and the inotify fd closes once it has (called under
        the lock; the join waits outside it, in :meth:`_finish`, as the reader may be waiting for the lock)."""
        if self._by_wd or self._inotify is None:
            return
        inotify, thread, wake = self._inotify, self._thread, self._wake
        self._inotify = self._thread = self._wake = None
        assert wake is not None
        assert thread is not None
        os.write(wake[1], b"x")
        self._ending.append((inotify, thread, wake))

    def _finish(self) -> None:
        """Join the reader threads told to end and close their fds (never under the lock)."""
        while True:
            with self._lock:
                if not self._ending:
                    return
                inotify, thread, wake = self._ending.pop()
            if thread is not threading.current_thread():
                thread.join()
            inotify.close()
            os.close(wake[0])
            os.close(wake[1])

    def _read(self, inotify: Inotify, wake: int, named: threading.Event) -> None:
        try:
            name_thread(THREAD_NAME)  # the kernel's name too: what /proc/PID/task/TID/comm shows (and a test counts)
        finally:
            named.set()
        poller = select.poll()
        poller.register(inotify.fd, select.POLLIN)
        poller.register(wake, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if wake in ready:
                return
            events, overflowed = inotify.read(_BATCH)
            sends: dict[tuple[object, str], Notify] = {}
            with self._lock:
                if overflowed:  # events were lost: every subscriber is told its resource may have changed
                    targets = [sub for watch in self._by_wd.values() for sub in watch.subscribers.values()]
                else:
                    targets = []
                    for event in events:
                        watch = self._by_wd.get(event.wd)
                        if watch is None:
                            continue
                        targets += [s for s in watch.subscribers.values() if not s.name or s.name == event.name]
                for sub in targets:
                    notify = self._notify.get(sub.session)
                    if notify is not None:
                        sends[(sub.session, sub.uri)] = notify
            for (_, uri), notify in sends.items():  # outside the lock: a send must not hold up subscribing
                notify(uri)
