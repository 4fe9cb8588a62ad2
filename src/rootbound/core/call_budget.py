"""The running call's budget, reachable from every CPU loop without passing it down (issue 48 #5).

Why: the per-call deadline and a client's cancellation were checked in the walks only; the loops of the writing
tools (edit and patch matching, diffing, directory creation) ran to their end whatever the call's fate, on a
thread that kept its place in a capped pool. A loop in any layer calls :func:`checkpoint` now and then; the tool
layer installs the call's check with :func:`checking` for the call's extent. A thread that runs part of a call
for it (a write domain's worker) runs it in the caller's context (:func:`contextvars.copy_context`), so the same
check applies there. With no check installed (a library caller), :func:`checkpoint` does nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ["checking", "checkpoint"]

_CHECK: ContextVar[Callable[[int], None] | None] = ContextVar("rootbound_call_check", default=None)


def checkpoint(steps: int = 1) -> None:
    """Count ``steps`` units of work for the running call; raises whatever its check raises (deadline passed,
    client cancelled). Cheap enough to call every few thousand steps of a loop."""
    check = _CHECK.get()
    if check is not None:
        check(steps)


@contextlib.contextmanager
def checking(check: Callable[[int], None]) -> Iterator[None]:
    """Install ``check`` as the running call's budget check for the block."""
    token = _CHECK.set(check)
    try:
        yield
    finally:
        _CHECK.reset(token)
