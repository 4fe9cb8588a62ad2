"""Capacity per client, and slots held until the work has stopped (issue 48 #1, #2, #3).

Why: a tool call's thread was abandoned when its call ended (deadline, cancellation): the answer went out, the
thread went on, and its pool slot was handed to the next call, so one client's abandoned edits kept every write
thread and every worker. And the pools were first come, first served across the process, counted per session at
best, so more sessions or stateless requests got more of the server.

Now:

* :func:`run_to_end` runs a call's work on a worker thread and, when the call is cancelled, tells the work to stop
  (its budget) and waits for it: the call ends when its work has ended (trio's rule), and every slot the call holds
  is released then, never when an answer was sent. Every CPU loop checks the budget (``core.call_budget``).
* :class:`FairSlots`: a pool shared between *flows* (clients). A free slot goes to the waiting flow with the least
  demand (slots held plus calls waiting), ties to the call that asked first: a flow with a backlog yields to one
  without, and flows with equal demand take turns (round robin). The last ``reserve`` free slots go only to a flow
  holding none: flows with backlogs, however many, together hold at most ``capacity - reserve``, so a client's
  first call finds a reserved slot free (or waits for one call of another newcomer), never for a backlog.
* Worker threads are our own (:class:`~.workers.Workers`): an idle one ends after 1 s by itself, where anyio's
  stayed 10 s and ended only on the pool's next use (issue 49's threads back to the baseline within 10 s).
* :func:`client_of`: a flow is the request's token (its principal) where requests are authenticated; else a
  handshake-era session's connection-scoped session (over HTTP its ``mcp-session-id``; over stdio or in memory its
  connection: mcp 2.x makes a ``ServerSession`` per request, so counting those made every call a client of its own
  and one client could take all 32 workers); else (2026-07-28 stateless requests) the peer's address.
"""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter
from collections.abc import AsyncIterator, Callable, Hashable
from typing import Any, Final, TypeVar

import anyio

from rootbound.workspace.limits.workers import Workers

__all__ = ["WORKERS", "CallSlots", "FairSlots", "client_of", "run_to_end"]

T = TypeVar("T")

WORKERS: Final = 32
"""Worker threads for tool calls in the whole process (anyio's own default is 40, first come first served)."""
WRITES: Final = 16  # as many as the process has write threads (``confine.write_domain.MAX_THREADS``)


class FairSlots:
    """``capacity`` slots shared by flows: free slots go to the waiting flow with the least demand (held plus
    waiting; then the earliest asker); one flow holds at most ``capacity - reserve``. Lives on one event loop."""

    def __init__(self, capacity: int, reserve: int = 0) -> None:
        if capacity <= 0 or not 0 <= reserve < capacity:
            raise ValueError("capacity must be positive and reserve below it")
        self.capacity = capacity
        self.reserve = reserve
        self.per_flow = capacity - reserve
        self.in_use = 0
        self._held: dict[Hashable, int] = {}
        self._waiting: dict[int, tuple[Hashable, anyio.Event]] = {}
        self._order = itertools.count()

    def held(self, flow: Hashable) -> int:
        return self._held.get(flow, 0)

    @contextlib.asynccontextmanager
    async def hold(self, flow: Hashable) -> AsyncIterator[None]:
        await self._acquire(flow)
        try:
            yield
        finally:
            self._release(flow)

    def _may_take(self, flow: Hashable) -> bool:
        """A free slot for ``flow``: under its own bound, and the reserved share only for a flow holding none (so
        several clients with backlogs together never take the share a newcomer's first call finds)."""
        held = self.held(flow)
        free = self.capacity - self.in_use
        return free > 0 and held < self.per_flow and (held == 0 or free > self.reserve)

    async def _acquire(self, flow: Hashable) -> None:
        if not self._waiting and self._may_take(flow):
            self._take(flow)
            return
        ticket = next(self._order)
        event = anyio.Event()
        self._waiting[ticket] = (flow, event)
        self._grant()
        try:
            await event.wait()
        except BaseException:
            if self._waiting.pop(ticket, None) is None:  # granted as we were cancelled: give it back
                self._release(flow)
            raise

    def _take(self, flow: Hashable) -> None:
        self.in_use += 1
        self._held[flow] = self.held(flow) + 1

    def _release(self, flow: Hashable) -> None:
        self.in_use -= 1
        left = self.held(flow) - 1
        if left:
            self._held[flow] = left
        else:
            self._held.pop(flow, None)  # a flow holding nothing is forgotten: no entry outlives its calls
        self._grant()

    def _grant(self) -> None:
        while self.in_use < self.capacity and self._waiting:
            queued = Counter(flow for flow, _ in self._waiting.values())
            allowed = [(self.held(f) + queued[f], t) for t, (f, _) in self._waiting.items() if self._may_take(f)]
            if not allowed:
                return
            _, ticket = min(allowed)
            flow, event = self._waiting.pop(ticket)
            self._take(flow)
            event.set()


class CallSlots:
    """The process's pools for tool calls, each shared fairly between clients with a reserved share no one client
    may take: worker threads (32, one client at most 24), write slots (16, at most 12), walk slots (``max_walks``
    for one client, one more kept for the others: a client's first walk never queues behind another's backlog)."""

    def __init__(self, max_walks: int, workers: int = WORKERS, writes: int = WRITES) -> None:
        self.workers = FairSlots(workers, workers // 4)
        self.walks = FairSlots(max_walks + 1, 1)
        self.writes = FairSlots(writes, writes // 4)
        self.threads = Workers(workers)  # never the one that waits: the fair pool admits first

    @contextlib.asynccontextmanager
    async def hold(self, flow: Hashable, *, walks: bool, writes: bool) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if walks:
                await stack.enter_async_context(self.walks.hold(flow))
            if writes:
                await stack.enter_async_context(self.writes.hold(flow))
            await stack.enter_async_context(self.workers.hold(flow))
            yield


async def run_to_end(function: Callable[[], T], stop: Callable[[], None], threads: Workers) -> T:
    """``function()`` on one of ``threads``. If the caller is cancelled meanwhile, ``stop()`` is called and the
    thread is still waited for: this returns (or the cancellation is raised) only once the work has ended."""
    outcome: list[T] = []

    async def watch() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            stop()  # also at the normal end, when the work is over: harmless

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(watch)
        try:
            outcome.append(await threads.run(function))
        finally:
            tasks.cancel_scope.cancel()
    return outcome[0]


def client_of(ctx: Any) -> Hashable:
    """The flow a request is counted to: its token's principal, else its handshake-era session, else its peer."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict):  # stdio or in memory: the one connection (mcp 2.x makes a session per request)
        session = getattr(ctx, "session", None)
        return ("connection", id(getattr(session, "_connection", session)))
    token = getattr(scope.get("user"), "access_token", None)
    principal = getattr(token, "client_id", None)
    if isinstance(principal, str):
        return ("token", principal)
    headers = dict(scope.get("headers") or ())
    if b"mcp-session-id" in headers:
        return ("session", headers[b"mcp-session-id"])
    client = scope.get("client")
    return ("peer", client[0] if client else None)
