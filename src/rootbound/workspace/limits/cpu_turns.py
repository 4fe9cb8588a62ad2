"""Turns at the interpreter, shared fairly between clients (issue 48: one client's CPU never starves another's).

Why: issue 48's pools bound how many calls a client has *in flight*, but one client may still hold 24 worker
threads, and when each runs Python (tolerant matching, walks, diffs) they take the interpreter lock in turn with
the victim's one thread: a 3-file grep waited 2-14 s behind them on 2 cores (``bench/greedy_client.py``). The lock
itself is not fair between clients, so fairness is added above it.

A call's work takes a *turn* at its first budget check and keeps it to its end; at most ``capacity`` calls hold
one at once (one per CPU by default). A call queued elsewhere (for a write thread) holds none, and a short call that
never checks never waits for one.
A free turn goes to the waiting client holding the fewest turns plus calls waiting, ties to the earliest asker (as
:class:`~rootbound.workspace.limits.call_slots.FairSlots` does with slots). A call hands its turn on at its next
budget check (every CPU loop makes one, ``core.call_budget``) once it has held it for ``slice_s`` and a client with
no more demand than its own waits, then queues again: a backlog yields to a client without one, clients with equal
demand take turns, and a client without a backlog is never made to wait by one. So a client's call waits for about
one slice of one other call to start, and not again.

Turns are advisory, never a new way to hang: while no turn has changed hands for ``max_wait_s`` (a holder blocked
where it cannot check, or on a lock a waiter holds), a waiter runs anyway, counted as holding one. A call is a thread
of work here: a write domain's worker doing part of a call runs under the call's turn (the caller's thread waits
for it meanwhile).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections import Counter
from collections.abc import Hashable, Iterator
from typing import Final

from rootbound.workspace.limits.fairness import usable_cpus

__all__ = ["CpuTurns", "Turn", "default_turns"]

SLICE_S: Final = 0.02
"""How long a call keeps its turn while another client waits (a few interpreter switch intervals)."""
MAX_WAIT_S: Final = 0.5
"""How long no turn may change hands before a waiter runs anyway."""


def default_turns() -> int:
    """One turn per CPU this process may use (at least one)."""
    return usable_cpus()


class Turn:
    """One call's claim on a turn, taken at its first budget check (a call that never checks, a short one, never
    waits) and handed on by :meth:`offer` when it is due. One per call whichever of its threads runs the work."""

    __slots__ = ("_flow", "_holding", "_since", "_turns")

    def __init__(self, turns: CpuTurns, flow: Hashable) -> None:
        self._turns = turns
        self._flow = flow
        self._holding = False
        self._since = 0.0

    def offer(self) -> None:
        """Take a turn if the call has none; hand it on if it has been held for a slice and a client with no more
        demand waits, then queue for one again."""
        if self._holding:
            if time.monotonic() - self._since < self._turns.slice_s or not self._turns.owed(self._flow):
                return
            self._holding = False
            self._turns.release(self._flow)
        self._turns.acquire(self._flow)
        self._holding = True
        self._since = time.monotonic()

    def end(self) -> None:
        if self._holding:
            self._holding = False
            self._turns.release(self._flow)


class CpuTurns:
    """``capacity`` turns, shared between clients least-demand first, handed on every ``slice_s`` to a waiter."""

    def __init__(self, capacity: int, *, slice_s: float = SLICE_S, max_wait_s: float = MAX_WAIT_S) -> None:
        if capacity <= 0 or slice_s <= 0 or max_wait_s <= 0:
            raise ValueError("capacity, slice and wait must be positive")
        self.capacity = capacity
        self.slice_s = slice_s
        self.max_wait_s = max_wait_s
        self.in_use = 0
        self._held: dict[Hashable, int] = {}
        self._waiting: dict[int, Hashable] = {}
        self._granted: set[int] = set()
        self._order = itertools.count()
        self._moved = time.monotonic()  # when a turn last changed hands
        self._lock = threading.Condition(threading.Lock())

    @contextlib.contextmanager
    def turn(self, flow: Hashable) -> Iterator[Turn]:
        """A call of ``flow``'s claim on a turn for the block: taken at its first check, given back at the end."""
        turn = Turn(self, flow)
        try:
            yield turn
        finally:
            turn.end()

    def held(self, flow: Hashable) -> int:
        with self._lock:
            return self._held.get(flow, 0)

    def owed(self, flow: Hashable) -> bool:
        """Whether another client waits whose demand (turns held plus calls waiting) is no more than ``flow``'s."""
        with self._lock:
            queued = Counter(self._waiting.values())
            mine = self._held.get(flow, 0) + queued[flow]
            return any(w != flow and self._held.get(w, 0) + n <= mine for w, n in queued.items())

    def acquire(self, flow: Hashable) -> None:
        with self._lock:
            if not self._waiting and self.in_use < self.capacity:
                self._take(flow)
                return
            ticket = next(self._order)
            self._waiting[ticket] = flow
            self._grant()
            while ticket not in self._granted:
                if time.monotonic() - self._moved > self.max_wait_s:  # stuck holders: run anyway, never hang
                    del self._waiting[ticket]
                    self._take(flow)
                    return
                self._lock.wait(self.max_wait_s / 4)
            self._granted.discard(ticket)

    def release(self, flow: Hashable) -> None:
        with self._lock:
            self._moved = time.monotonic()
            self.in_use -= 1
            left = self._held.get(flow, 0) - 1
            if left > 0:
                self._held[flow] = left
            else:
                self._held.pop(flow, None)  # a client holding nothing is forgotten
            self._grant()

    def _take(self, flow: Hashable) -> None:
        self._moved = time.monotonic()
        self.in_use += 1
        self._held[flow] = self._held.get(flow, 0) + 1

    def _grant(self) -> None:
        granted = False
        while self.in_use < self.capacity and self._waiting:
            queued = Counter(self._waiting.values())
            _, ticket = min((self._held.get(f, 0) + queued[f], t) for t, f in self._waiting.items())
            flow = self._waiting.pop(ticket)
            self._take(flow)
            self._granted.add(ticket)
            granted = True
        if granted:
            self._lock.notify_all()
