"""``rootbound serve`` as a real subprocess, over stdio or Streamable HTTP on 127.0.0.1, with a real SDK client."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import httpx2
import mcp_types as types
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from rootbound.mcp import RootsProvider

__all__ = ["http_serve", "http_serve_process", "proc_counts", "serve", "serve_cli", "text_of"]


def serve_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``rootbound serve ARGS`` run to its end with no input (start-up refusals, ``--help``): its exit and output."""
    return subprocess.run(
        [sys.executable, "-m", "rootbound", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )


def listening_url(process: subprocess.Popen[str]) -> str:
    """The URL a ``serve --http`` subprocess prints on stderr once it listens (after its policy line)."""
    assert process.stderr is not None
    lines: list[str] = []
    match = None
    while match is None and len(lines) < 20:
        lines.append(process.stderr.readline())
        match = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", lines[-1])
        if not lines[-1]:
            break
    assert match is not None, lines
    return match.group(1)


@contextlib.contextmanager
def http_serve(
    args: Sequence[str], *, env: dict[str, str] | None = None, launcher: Sequence[str] = ("-m", "rootbound")
) -> Iterator[str]:
    """``rootbound serve --http 127.0.0.1:0`` as a subprocess; yields the URL it prints once listening.

    ``env`` adds environment variables; ``launcher`` replaces ``-m rootbound`` (a test's own entry point).
    """
    with http_serve_process(args, env=env, launcher=launcher) as (url, _process):
        yield url


@contextlib.contextmanager
def http_serve_process(
    args: Sequence[str], *, env: dict[str, str] | None = None, launcher: Sequence[str] = ("-m", "rootbound")
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """:func:`http_serve` that also yields the process (its pid: thread and fd counts in ``/proc``)."""
    process = subprocess.Popen(
        [sys.executable, *launcher, "serve", "--http", "127.0.0.1:0", *args],
        env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield listening_url(process), process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


@contextlib.asynccontextmanager
async def serve(
    transport: str,
    args: Sequence[str],
    *,
    mode: str,
    provider: RootsProvider | None,
    env: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    launcher: Sequence[str] = ("-m", "rootbound"),
) -> AsyncIterator[Client]:
    """A real SDK client on ``rootbound serve`` (``headers`` go on every HTTP request, e.g. Authorization)."""
    kwargs: dict[str, Any] = dict(provider.client_kwargs()) if provider is not None else {}
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable,
            args=[*launcher, "serve", *args],
            env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})},
        )
        async with Client(params, mode=mode, **kwargs) as client:
            yield client
        return
    with http_serve(args, env=env, launcher=launcher) as url:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300), headers=headers) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode, **kwargs) as client,
        ):
            yield client


async def text_of(client: Client, tool: str, **arguments: Any) -> tuple[bool, str]:
    result = await client.call_tool(tool, arguments)
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return bool(result.is_error), content.text


def proc_counts(pid: int) -> tuple[int, int]:
    """The write threads (named ``rootbound-write`` in the kernel) and open fds of process ``pid`` now."""
    writers = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as comm:
                writers += comm.read().strip() == "rootbound-write"
        except OSError:
            continue  # ended meanwhile
    return writers, len(os.listdir(f"/proc/{pid}/fd"))
