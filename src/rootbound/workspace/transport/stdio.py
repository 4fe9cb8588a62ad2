"""``rootbound serve`` over stdio."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from typing import Any, Final

__all__ = ["serve_stdio"]

_THREAD_GRACE: Final = 5.0
"""On exit, how long a tool still running in a worker thread (a write finishing) may delay the process."""


def serve_stdio(server: Any, *, exit_process: bool = False) -> int:
    """Serve until stdin closes. Pipes and sockets (what MCP hosts use) go through the event-loop transport of
    :mod:`._stdio_transport`; anything else (a terminal, a regular file) through the SDK's thread-backed one.

    ``exit_process``: once the client has gone, end the process at once instead of returning. Interpreter
    teardown of the SDK's ~600 modules and pydantic models takes 0.2-1 s, and hosts restart servers often; there
    is nothing left to clean up but log handlers, flushed here, and worker threads, given a grace period.
    """
    import anyio

    from rootbound.workspace.transport.deep_json import AnsweringTooDeep
    from rootbound.workspace.transport.stdio_loop import pipe_streams, servable

    async def run() -> None:
        if servable():
            async with pipe_streams() as (read, write):
                await server.run(read, write, server.create_initialization_options())
            return
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await server.run(AnsweringTooDeep(read, write), write, server.create_initialization_options())

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run)
    if exit_process:
        _exit_now(0)
    return 0


def _exit_now(code: int) -> None:
    from rootbound.search.index.registry import close_all
    from rootbound.search.scan_helper import close_helpers
    from rootbound.workspace.limits.workers import retire_idle

    close_helpers()  # waited for: none outlives the server holding its stderr
    close_all()  # the search index's cache folders
    retire_idle()  # idle worker threads end now: the grace below is for calls still running
    deadline = time.monotonic() + _THREAD_GRACE
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
