"""``resources/subscribe`` through real SDK clients on ``rootbound serve`` (the handshake era, where the method
lives): another process writing a subscribed file reaches the client as ``notifications/resources/updated``; many
sessions subscribing and closing over Streamable HTTP leave no watch thread and no extra fd in the server (counted
in ``/proc``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import IncomingMessage
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

from mcp import Client
from rootbound.core.uri import path_to_uri
from rootbound.mcp import RootsProvider
from tests.helpers.serve_process import http_serve_process

pytestmark = pytest.mark.anyio
DEADLINE = 60  # a bound on waiting, never a measurement


class Updates:
    def __init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[str](100)

    async def __call__(self, message: IncomingMessage) -> None:
        notification = getattr(message, "root", message)
        if isinstance(notification, types.ResourceUpdatedNotification):
            await self.send.send(notification.params.uri)


@asynccontextmanager
async def stdio_client(root: Path, updates: Updates) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rootbound", "serve", str(root)],
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    async with Client(params, mode="legacy", message_handler=updates) as client:
        yield client


def write_in_another_process(path: Path, text: str) -> None:
    subprocess.run([sys.executable, "-c", f"open({str(path)!r}, 'w').write({text!r})"], check=True, timeout=60)


async def test_another_process_writing_a_subscribed_file_reaches_the_client(tmp_path: Path) -> None:
    root = tmp_path.resolve() / "work"
    root.mkdir()
    (root / "watched.txt").write_text("one\n")
    (root / "other.txt").write_text("x\n")
    updates = Updates()
    with anyio.fail_after(DEADLINE):
        async with stdio_client(root, updates) as client:
            assert client.server_capabilities.resources is not None
            assert client.server_capabilities.resources.subscribe is True
            uri = path_to_uri(root / "watched.txt")
            await client.subscribe_resource(uri)
            write_in_another_process(root / "watched.txt", "two\n")
            assert await updates.receive.receive() == uri
            read = await client.read_resource(uri)
            assert isinstance(read.contents[0], types.TextResourceContents) and read.contents[0].text == "two\n"
            await client.unsubscribe_resource(uri)
            await client.subscribe_resource(path_to_uri(root / "other.txt"))
            write_in_another_process(root / "other.txt", "y\n")
            while (got := await updates.receive.receive()) == uri:
                continue  # the rest of watched.txt's own events (one write is several), sent before it left
            assert got == path_to_uri(root / "other.txt")


def watch_threads(pid: int) -> int:
    count = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as comm:
                count += comm.read().strip() == "rootbound-watch"
        except OSError:
            continue
    return count


async def test_sessions_that_subscribe_and_close_leave_nothing_running(tmp_path: Path) -> None:
    root = tmp_path.resolve() / "work"
    (root / "d").mkdir(parents=True)
    (root / "f.txt").write_text("x\n")
    with http_serve_process(["--insecure-no-auth", str(root)]) as (url, process):
        with anyio.fail_after(DEADLINE):
            async with httpx2.AsyncClient(timeout=30) as http:
                async with Client(streamable_http_client(url, http_client=http), mode="legacy") as warm:
                    await warm.list_resources()  # the server's own threads and fds, once warm
                baseline = len(os.listdir(f"/proc/{process.pid}/fd"))
                for _ in range(30):
                    async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                        await client.subscribe_resource(path_to_uri(root / "f.txt"))
                        await client.subscribe_resource(path_to_uri(root / "d"))
                        assert watch_threads(process.pid) == 1
                while watch_threads(process.pid) or len(os.listdir(f"/proc/{process.pid}/fd")) > baseline:
                    await anyio.sleep(0.1)  # sessions end as their DELETE is served; wait for the last
        assert watch_threads(process.pid) == 0


async def test_a_listen_stream_gets_updates_and_its_watches_end_with_it(tmp_path: Path) -> None:
    """2026-07-28: ``subscriptions/listen`` with ``resourceSubscriptions`` (the SDK's own stream, our watches)."""
    root = tmp_path.resolve() / "work"
    root.mkdir()
    (root / "watched.txt").write_text("one\n")
    uri = path_to_uri(root / "watched.txt")
    with http_serve_process(["--insecure-no-auth", str(root)]) as (url, process):
        with anyio.fail_after(DEADLINE):
            async with (
                httpx2.AsyncClient(timeout=30) as http,
                Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client,
            ):
                with pytest.raises(MCPError) as refused:
                    async with client.listen(resource_subscriptions=[path_to_uri(tmp_path.resolve())]):
                        pass
                assert refused.value.error.message == "Resource not found"
                async with client.listen(resource_subscriptions=[uri]) as stream:
                    assert watch_threads(process.pid) == 1
                    write_in_another_process(root / "watched.txt", "two\n")
                    async for event in stream:
                        assert isinstance(event, ResourceUpdated) and event.uri == uri
                        break
                while watch_threads(process.pid):
                    await anyio.sleep(0.1)  # the stream's end reaches the server as its request is cancelled


async def test_roots_narrowing_ends_the_subscriptions_it_leaves_out_and_says_so(tmp_path: Path) -> None:
    """Handshake era, stdio: the client drops one of its two roots (``roots/list_changed``). Its subscription
    there ends at once: it gets a last ``updated`` (a read then answers not found), and a later write there is
    never reported; the subscription in the root it kept goes on."""
    root = tmp_path.resolve() / "work"
    for name in ("kept", "left"):
        (root / name).mkdir(parents=True)
        (root / name / "f.txt").write_text("one\n")
    kept, left = path_to_uri(root / "kept" / "f.txt"), path_to_uri(root / "left" / "f.txt")
    provider = RootsProvider([root / "kept", root / "left"])
    updates = Updates()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rootbound", "serve", str(root)],
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    with anyio.fail_after(DEADLINE):
        async with Client(params, mode="legacy", message_handler=updates, **provider.client_kwargs()) as client:
            await client.subscribe_resource(kept)
            await client.subscribe_resource(left)
            await provider.remove(root / "left")
            while True:  # the roots take effect by the next request at the latest (it fetches them again)
                try:
                    await client.read_resource(left)
                except MCPError as error:
                    assert error.error.message == "Resource not found"
                    break
            assert await updates.receive.receive() == left  # its subscription's last word
            write_in_another_process(root / "left" / "f.txt", "two\n")
            write_in_another_process(root / "kept" / "f.txt", "two\n")
            assert await updates.receive.receive() == kept  # and never left's again
            await client.unsubscribe_resource(kept)
            write_in_another_process(root / "left" / "f.txt", "three\n")
            await client.subscribe_resource(kept)  # a round trip: anything sent for left before it has arrived
            with anyio.move_on_after(0.5):
                while True:
                    assert await updates.receive.receive() == kept, "an update for a root the client dropped"


def remove_in_another_process(path: Path) -> None:
    subprocess.run([sys.executable, "-c", f"import os; os.unlink({str(path)!r})"], check=True, timeout=60)


class ListChanges:
    def __init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[str](100)

    async def __call__(self, message: IncomingMessage) -> None:
        notification = getattr(message, "root", message)
        if isinstance(notification, types.ResourceListChangedNotification):
            await self.send.send("list_changed")


async def test_list_changed_when_a_top_level_entry_comes_or_goes_and_when_roots_change(tmp_path: Path) -> None:
    """Handshake era, stdio: ``listChanged`` is declared; a session that listed resources is told
    ``notifications/resources/list_changed`` when another process creates or removes an entry at a root's top
    level, and when the client drops a root."""
    root = tmp_path.resolve() / "work"
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
    provider = RootsProvider([root / "a", root / "b"])
    changes = ListChanges()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rootbound", "serve", str(root)],
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    with anyio.fail_after(DEADLINE):
        async with Client(params, mode="legacy", message_handler=changes, **provider.client_kwargs()) as client:
            assert client.server_capabilities.resources is not None
            assert client.server_capabilities.resources.list_changed is True
            listed = await client.list_resources()
            assert {r.name for r in listed.resources} == {"a", "b"}
            write_in_another_process(root / "b" / "new.txt", "n\n")
            assert await changes.receive.receive() == "list_changed"
            names = {r.name for r in (await client.list_resources()).resources}
            assert "new.txt" in names
            remove_in_another_process(root / "b" / "new.txt")
            assert await changes.receive.receive() == "list_changed"
            while True:  # drain the rest of those events' notifications
                with anyio.move_on_after(0.5):
                    await changes.receive.receive()
                    continue
                break
            await provider.remove(root / "b")
            await client.list_resources()  # fetches the roots again at the latest: the change is seen by then
            assert await changes.receive.receive() == "list_changed"
            assert {r.name for r in (await client.list_resources()).resources} == {"a"}


@asynccontextmanager
async def modern_client(transport: str, root: Path) -> AsyncIterator[tuple[Client, int | None]]:
    """A 2026-07-28 SDK client of ``rootbound serve root`` over ``transport``, and the server's pid over HTTP."""
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "rootbound", "serve", str(root)],
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        async with Client(params, mode="2026-07-28") as client:
            yield client, None
        return
    with http_serve_process(["--insecure-no-auth", str(root)]) as (url, process):
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client,
        ):
            yield client, process.pid


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_listen_stream_that_asks_for_list_changes_gets_them_and_no_other_stream_does(
    tmp_path: Path, transport: str
) -> None:
    """2026-07-28: ``listChanged: true`` is declared for resources (not for tools or prompts); a
    ``subscriptions/listen`` stream with ``resourcesListChanged`` is acknowledged with it (and without the tools
    list changes this server never sends) and gets ``notifications/resources/list_changed`` when another process
    creates or removes an entry at a root's top level; a stream that asked only for a resource's updates gets
    those and no list change; the watches end with the streams."""
    root = tmp_path.resolve() / "work"
    (root / "sub").mkdir(parents=True)
    (root / "watched.txt").write_text("one\n")
    uri = path_to_uri(root / "watched.txt")
    with anyio.fail_after(DEADLINE):
        async with modern_client(transport, root) as (client, pid):
            declared = (await client.session.send_discover("2026-07-28"))["capabilities"]  # server/discover, raw
            assert declared["resources"].get("listChanged") is True
            assert not declared.get("tools", {}).get("listChanged")
            async with (
                client.listen(resources_list_changed=True, tools_list_changed=True) as lists,
                client.listen(resource_subscriptions=[uri]) as updates,
            ):
                assert lists.honored.resources_list_changed is True
                assert not lists.honored.tools_list_changed  # never sent here: not acknowledged
                if pid is not None:
                    assert watch_threads(pid) == 1
                write_in_another_process(root / "sub" / "deeper.txt", "below the top level: no list change\n")
                write_in_another_process(root / "new.txt", "n\n")
                async for event in lists:
                    assert isinstance(event, ResourcesListChanged), event
                    break
                assert "new.txt" in {r.name for r in (await client.list_resources()).resources}
                remove_in_another_process(root / "new.txt")
                async for event in lists:
                    assert isinstance(event, ResourcesListChanged), event
                    break
                write_in_another_process(root / "watched.txt", "two\n")
                async for event in updates:  # the top level's changes reached the other stream not at all
                    assert isinstance(event, ResourceUpdated) and event.uri == uri, event
                    break
            if pid is not None:
                while watch_threads(pid):
                    await anyio.sleep(0.1)  # the streams' ends reach the server as their requests are cancelled
