"""Per-session fairness for tool work: one session cannot take every worker thread.

Tool calls run in anyio's worker threads (40 by default, shared by the process). Forty slow greps from one session
used all of them and starved every other session for minutes. :class:`SessionSlots` lets each session run at most
:attr:`per_session` calls at once; its further calls wait for one of its own to finish, while other sessions'
calls go ahead. Sessions are keyed by their session object, held weakly, so a closed session leaves nothing.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import AsyncIterator
from typing import Any

import anyio

__all__ = ["SessionSlots"]


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

    @contextlib.asynccontextmanager
    async def slot(self, session: Any) -> AsyncIterator[None]:
        """Hold one of ``session``'s slots for the block (waits while all of them are taken)."""
        try:
            limiter = self._limiter(session)
        except TypeError:  # not weakly referenceable: no per-session bound to apply
            yield
            return
        async with limiter:
            yield
