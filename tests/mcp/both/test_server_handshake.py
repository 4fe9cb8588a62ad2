"""RootsService in the handshake era on BOTH SDK majors: the lowlevel ``Server`` and the major's decorator
framework (mcp 2.x ``MCPServer``, mcp 1.x ``FastMCP``), the SDK's ``ClientSession`` in memory and against a real
stdio subprocess. ``roots/list`` requests are counted on the client side, where caching, single flight and
debounce matter: on the wire.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from rootbound.mcp import RootsService
from tests.mcp.both.server_harness import (
    KINDS,
    TRANSPORTS,
    ClientRoots,
    Conn,
    RpcError,
    build,
    connect,
    raw_connection,
)

pytestmark = pytest.mark.anyio

DEBOUNCE = 0.05
BURST_DEBOUNCE = 1.0  # a burst must land inside one window for "one refresh per burst"; generous on 2 loaded cores


class Env:
    """One server flavour reachable over one transport; ``service`` is None for the stdio subprocess (its own)."""

    def __init__(self, kind: str, transport: str, debounce: float, **service_kwargs: Any) -> None:
        self.kind = kind
        self.transport = transport
        self.debounce = debounce
        self.service_kwargs = service_kwargs
        service = RootsService(debounce=debounce, warn_deprecated=False, **service_kwargs)
        self.server, _ = build(kind, service)
        self.service = None if transport == "stdio" else service

    def connect(self, roots: ClientRoots | None) -> contextlib.AbstractAsyncContextManager[Conn]:
        args = ["--debounce", str(self.debounce)]
        if "timeout" in self.service_kwargs:
            args += ["--timeout", str(self.service_kwargs["timeout"])]
        if self.service_kwargs.get("fallback"):
            args += ["--fallback", *map(str, self.service_kwargs["fallback"])]
        return connect(self.transport, self.server, roots, kind=self.kind, stdio_args=args)


ENVS = [(kind, transport) for kind in KINDS for transport in TRANSPORTS]


@pytest.fixture(params=ENVS, ids=["-".join(pair) for pair in ENVS])
def env(request: pytest.FixtureRequest) -> Env:
    kind, transport = request.param
    return Env(kind, transport, DEBOUNCE)


@contextlib.asynccontextmanager
async def guarded(seconds: float = 60) -> AsyncIterator[None]:
    with anyio.fail_after(seconds):  # a hang guard, never a timing assertion
        yield


def denial(kind: str, fixed: str) -> str:
    """What the model reads for a rootbound denial raised in the ``roots`` tool, whatever the server ``kind``: its
    fixed text alone. ``MCPServer`` (mcp 2.x) and FastMCP 1.x put "Error executing tool NAME: " before a tool's
    error; rootbound strips it from its own denials on both majors (issue 35)."""
    return fixed


async def test_roots_are_fetched_once_and_cached(env: Env) -> None:
    roots = ClientRoots(["file:///work/a", "file:///work/b/"])
    async with guarded(), env.connect(roots) as client:
        for _ in range(5):
            assert await client.text("roots") == "file:///work/a\nfile:///work/b"
    assert roots.calls == 1


async def test_100_concurrent_first_calls_send_one_roots_list(env: Env) -> None:
    roots = ClientRoots()
    roots.delay = 0.2  # every call arrives while the first roots/list is still in flight
    results: list[str] = []
    async with guarded(), env.connect(roots) as client:

        async def one() -> None:
            results.append(await client.text("roots"))

        async with anyio.create_task_group() as tg:
            for _ in range(100):
                tg.start_soon(one)
    assert results == ["file:///work/a"] * 100
    assert roots.calls == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_followers_get_the_leaders_failure(kind: str) -> None:
    env = Env(kind, "memory", DEBOUNCE)
    roots = ClientRoots(["file://remote.example/share"])  # the SDK client lets a host through; rootbound does not
    roots.delay = 0.2
    results: list[tuple[bool, str]] = []
    async with guarded(), env.connect(roots) as client:

        async def one() -> None:
            results.append(await client.call("roots"))

        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(one)
    assert roots.calls == 1
    fixed = "invalid roots answer (root uri is not a valid local file URI)"
    assert results == [(True, denial(kind, fixed))] * 5


async def test_no_roots_capability_is_32021(env: Env) -> None:
    async with guarded(), env.connect(None) as client:
        with pytest.raises(RpcError) as info:
            await client.call("roots")
    assert info.value.error.code == -32021
    assert info.value.error.data == {"requiredCapabilities": {"roots": {}}}


async def test_fallback_is_used_when_the_client_declares_no_roots(env: Env) -> None:
    env = Env(env.kind, env.transport, DEBOUNCE, fallback=["/srv/allowed"])
    async with guarded(), env.connect(None) as client:
        assert await client.text("roots") == "file:///srv/allowed"
        assert await client.text("check", path="/srv/allowed/x") == "inside"


async def test_list_changed_invalidates_immediately_and_refetches(env: Env) -> None:
    roots = ClientRoots(["file:///work/a"])
    async with guarded(), env.connect(roots) as client:
        assert await client.text("roots") == "file:///work/a"
        roots.uris = ["file:///work/c"]
        await client.notify_changed()
        assert await client.text("roots") == "file:///work/c"  # no sleep: the very next call sees the new set


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_debounce_refreshes_once_per_burst(transport: str) -> None:
    env = Env("lowlevel", transport, BURST_DEBOUNCE)
    roots = ClientRoots(["file:///work/a"])
    async with guarded(), env.connect(roots) as client:
        await client.text("roots")
        assert roots.calls == 1
        for _ in range(50):
            await client.notify_changed()
        await anyio.sleep(BURST_DEBOUNCE * 2)
        assert roots.calls == 2  # one trailing refresh for the whole burst
        assert await client.text("roots") == "file:///work/a"
        assert roots.calls == 2  # the refresh filled the cache


async def test_failed_refresh_leaves_the_cache_empty_never_the_old_set(env: Env) -> None:
    roots = ClientRoots(["file:///work/a", "file:///work/b"])
    async with guarded(), env.connect(roots) as client:
        assert await client.text("check", path="/work/b/x") == "inside"
        roots.fail = True
        await client.notify_changed()
        await anyio.sleep(DEBOUNCE * 6)  # the refresh runs and fails (and whether it ran yet does not matter)
        is_error, text = await client.call("check", path="/work/b/x")
        assert is_error and "roots are unavailable" in text
        roots.fail = False
        roots.uris = ["file:///work/a"]
        assert await client.text("check", path="/work/b/x") == "outside"


async def test_narrowing_200_times_without_sleep_never_serves_a_stale_root(env: Env) -> None:
    """Client declares {A, B}; a call under B is inside; the client drops B and notifies; the next call is
    denied. Any reordering of the notification behind the call would serve the old set and fail."""
    roots = ClientRoots()
    async with guarded(180), env.connect(roots) as client:
        for _ in range(200):
            roots.uris = ["file:///work/a", "file:///work/b"]
            await client.notify_changed()
            assert await client.text("check", path="/work/b/secret") == "inside"
            roots.uris = ["file:///work/a"]
            await client.notify_changed()
            assert await client.text("check", path="/work/b/secret") == "outside"


@pytest.mark.parametrize("kind", KINDS)
async def test_roots_list_timeout_is_a_tool_error_and_the_server_keeps_serving(kind: str) -> None:
    """A client that never answers (a raw peer: mcp 1.x's ``ClientSession`` runs its roots callback inside its
    receive loop, so a hanging callback would stall the client itself, not the server)."""
    env = Env(kind, "memory", DEBOUNCE, timeout=0.3)
    async with guarded(), raw_connection(env.server, answer=None) as silent:
        response = await silent.call_tool("roots")
        fixed = "roots are unavailable (the client did not answer roots/list within 0.3 s)"
        assert response["result"]["isError"] is True
        assert response["result"]["content"][0]["text"] == denial(kind, fixed)
        assert silent.roots_requests == 1
    async with guarded(), env.connect(ClientRoots(["file:///work/ok"])) as client:
        assert await client.text("roots") == "file:///work/ok"


@pytest.mark.parametrize("kind", KINDS)
async def test_client_error_answer_is_a_generic_tool_error(kind: str) -> None:
    env = Env(kind, "memory", DEBOUNCE)
    roots = ClientRoots()
    roots.fail = True
    async with guarded(), env.connect(roots) as client:
        is_error, text = await client.call("roots")
    assert is_error
    assert text == denial(kind, "roots are unavailable (client answered with an error)")
    assert "no roots today" not in text  # the client's own message is never echoed


@pytest.mark.parametrize("kind", KINDS)
async def test_cache_entries_die_with_their_connections(kind: str) -> None:
    env = Env(kind, "memory", DEBOUNCE)
    assert env.service is not None
    for _ in range(3):
        async with guarded(), env.connect(ClientRoots()) as client:
            await client.text("roots")
            assert env.service.cache_size == 1
        assert env.service.cache_size == 0
