"""Fairness for tool work: one session cannot take every worker thread, and tree walks cannot take every core.

Tool calls run in anyio's worker threads (40 by default, shared by the process). Forty slow greps from one session
used all of them and starved every other session for minutes. :class:`SessionSlots` lets each session run at most
:attr:`per_session` calls at once; its further calls wait for one of its own to finish, while other sessions'
calls go ahead. Sessions are keyed by their session object, held weakly, so a closed session leaves nothing.

Walks (grep, search, listings, trees) are CPU-bound for their length. Four at once on two cores delayed another
session's trivial call by 140-230 ms (``bench/hardening.py``). At most one walk fewer than there are CPUs
(:func:`default_max_walks`, ``--max-walks``) leaves the event loop and the cheap calls a core: under 60 ms.
Waiting walks queue in arrival order, and the wait counts against their per-call deadline.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from typing import Any

import anyio

__all__ = ["SessionSlots", "Token", "default_max_walks", "usable_cpus"]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform tells it), at least one."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_max_walks() -> int:
    """Walks that may run at once by default: the CPUs this process may use, less one (at least one)."""
    return max(1, usable_cpus() - 1)


class SessionSlots:
    def __init__(self, per_session: int = 4) -> None:
        if per_session <= 0:
            raise ValueError("per_session must be positive")
        self.per_session = per_session
        self._limiters: weakref.WeakKeyDictionary[Any, anyio.CapacityLimiter] = weakref.WeakKeyDictionary()

    def _limiter(self, session: Any) -> anyio.CapacityLimiter:
        limiter = self._limiters.get(session)
        if limiter is None:
            limiter = self._limiters[session] = anyio.CapacityLimiter(self.per_session)
        return limiter

    def slot(self, session: Any) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold one of ``session``'s slots for the block (waits while all of them are taken)."""
        try:
            limiter = self._limiter(session)
        except TypeError:  # not weakly referenceable: no per-session bound to apply
            return contextlib.nullcontext()
        return Token(limiter)


class Token(contextlib.AbstractAsyncContextManager[None]):
    """``async with Token(limiter)``: a token of ``limiter`` for the block. A free token is taken at once; anyio's
    own ``async with limiter`` also yields to the event loop first (a loop pass, ~10 us), on every tool call."""

    __slots__ = ("_limiter",)

    def __init__(self, limiter: anyio.CapacityLimiter) -> None:
        self._limiter = limiter

    async def __aenter__(self) -> None:
        try:
            self._limiter.acquire_nowait()
        except anyio.WouldBlock:
            await self._limiter.acquire()  # waits in arrival order, cancellable

    async def __aexit__(self, *exc_info: object) -> None:
        self._limiter.release()
