"""The per-connection roots cache of the handshake era as a pure state machine (no I/O, no clock, no SDK).

The adapter (``rootbound.mcp._handshake``) asks :meth:`ConnectionRoots.next_step` what to do, performs the
``roots/list`` round trip or the wait itself, and reports back. The rules live here:

* **generation**: ``notifications/roots/list_changed`` bumps it and drops the cached set *synchronously, on
  receipt*; an answer is stored only if no notification arrived while it was being fetched, so no call that
  starts after a notification can be served the old set. The callers that led or followed that fetch are still
  served its answer (:meth:`ConnectionRoots.followed`): it was asked for after they started, so it is the client's
  roots at a moment during their call, and a notification storm cannot make them fetch again and again;
* **single flight**: one ``roots/list`` per generation at a time; other callers follow it. A follower of a
  failed fetch gets the same failure; a follower of an abandoned (cancelled) or background fetch tries again;
* **warm-up**: a fetch made before any call asked (at ``notifications/initialized``) is never waited on by a call:
  a call that finds one in flight leads its own fetch on its request's stream, so a warm-up that the transport
  cannot deliver yet (no standalone stream) delays nothing;
* **listed**: whether any answer of the connection's client ever held a root, whatever became of it (an answer
  overtaken by ``list_changed`` still showed what the client listed);
* **debounce**: after a burst of notifications only the last one refreshes, and only if nothing fetched since;
* **change**: each stored set is compared with the connection's previous one (:class:`~rootbound.RootsChange`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rootbound.core.errors import RootsError, RootsUnavailable
from rootbound.core.roots import RootsChange, RootSet

__all__ = ["MAX_ATTEMPTS", "ConnectionRoots", "Flight", "Follow", "Lead"]

MAX_ATTEMPTS = 4
"""Flights a caller follows before giving up when each was abandoned (its leader cancelled) before answering."""


@dataclass(eq=False)
class Flight:
    """One ``roots/list`` in progress for ``generation``; ``done`` once its leader reported back."""

    generation: int
    background: bool = False
    warm: bool = False
    result: RootSet | None = None
    error: RootsError | None = None
    abandoned: bool = False
    done: bool = False


@dataclass(frozen=True)
class Lead:
    """Send ``roots/list`` now and report with :meth:`ConnectionRoots.landed` / ``failed`` / ``abandoned``."""

    flight: Flight


@dataclass(frozen=True)
class Follow:
    """Wait for ``flight`` to be done, then ask :meth:`ConnectionRoots.followed`."""

    flight: Flight


class ConnectionRoots:
    """What one handshake-era connection knows about its client's roots."""

    __slots__ = ("cached", "cached_generation", "closed", "flights", "generation", "last", "listed")

    def __init__(self) -> None:
        self.generation = 0
        self.cached: RootSet | None = None
        self.cached_generation = -1
        self.flights: dict[int, Flight] = {}
        self.closed = False
        self.last: RootSet | None = None
        """The last set stored, kept across invalidation: what a change is measured against."""
        self.listed = False
        """Whether any answer on this connection held at least one root."""

    def invalidate(self) -> None:
        """On receipt of ``list_changed``: from here on nothing older may be served."""
        self.generation += 1
        self.cached = None

    def close(self) -> None:
        """The connection ended: nothing is stored or refreshed any more."""
        self.closed = True
        self.cached = None

    def fresh(self) -> RootSet | None:
        """The cached set, if it belongs to the current generation."""
        return self.cached if self.cached_generation == self.generation else None

    def next_step(
        self, *, force: bool = False, background: bool = False, warm: bool = False
    ) -> RootSet | Lead | Follow | None:
        """The cached set, or the flight to lead or to follow. ``force``: skip the cache (an explicit refresh).
        ``warm``: a warm-up, which leads only where nothing is cached or in flight (``None``: nothing to do)."""
        if not force:
            cached = self.fresh()
            if cached is not None:
                return None if warm else cached
        flight = self.flights.get(self.generation)
        if flight is not None:
            if warm:
                return None
            if not (flight.warm and not background):
                return Follow(flight)
            # A call never waits on a warm-up: it leads its own fetch; the warm-up still lands (same generation).
        flight = self.flights[self.generation] = Flight(self.generation, background or warm, warm)
        return Lead(flight)

    def landed(self, flight: Flight, roots: RootSet) -> RootsChange | None:
        """The leader's fetch answered: store it (if still current) and say how the roots changed, if they did."""
        flight.result = roots
        self.listed = self.listed or bool(roots)
        self._end(flight)
        if flight.generation != self.generation or self.closed:
            return None
        self.cached, self.cached_generation = roots, flight.generation
        previous, self.last = self.last, roots
        return RootsChange.between(previous, roots)

    def failed(self, flight: Flight, error: RootsError) -> None:
        """The leader's fetch failed. Followers of a tool call's fetch share the failure; a background refresh's
        followers try themselves (nothing is cached either way: fail closed)."""
        if flight.background:
            flight.abandoned = True
        else:
            flight.error = error
        self._end(flight)

    def abandoned(self, flight: Flight) -> None:
        """The leader was cancelled: followers try again and one of them leads."""
        flight.abandoned = True
        self._end(flight)

    def followed(self, flight: Flight) -> RootSet | None:
        """After waiting on ``flight``: its set, ``None`` to try again, or its leader's failure (a fresh copy)."""
        if flight.error is not None:
            raise type(flight.error)(flight.error.reason)
        if flight.abandoned:
            return None
        return flight.result

    def current(self, generation: int) -> bool:
        """Whether an answer fetched in ``generation`` may still be served (no notification since)."""
        return generation == self.generation

    def refresh_due(self, noticed: int) -> bool:
        """The debounce decision, after the window that followed a notification seen at generation ``noticed``:
        refresh only if it was the last of its burst, the connection lives, and nothing fetched since."""
        return self.generation == noticed and not self.closed and self.fresh() is None

    @staticmethod
    def gave_up() -> RootsUnavailable:
        """The error for a caller whose :data:`MAX_ATTEMPTS` flights were all abandoned before answering."""
        return RootsUnavailable("every roots/list this call waited on was cancelled before the client answered")

    def _end(self, flight: Flight) -> None:
        flight.done = True
        if self.flights.get(flight.generation) is flight:
            del self.flights[flight.generation]
