"""RootsProvider against the SDK's own lowlevel server: era × transport × mode, asserted on what reached the wire.

For every combination the recording server checks (1) the exact capability object the client declared on every
request that declares one, (2) the number of ``notifications/roots/list_changed`` after a burst of changes, and
(3) that ``set_roots``/``add``/``remove`` mid-session change what the next ``roots/list`` / MRTR answer carries,
byte-exact (raw frames on stdio and HTTP). Set ``ROOTBOUND_WIRE_TABLE=<file>`` to collect a row per case.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp import Client
from rootbound import Root, path_to_uri
from rootbound.mcp.client import RootsProvider
from tests.fixtures.recording_server import (
    LIST_CHANGED,
    Recorder,
    build_server,
    count,
    declared_capabilities,
    declared_in_frames,
)
from tests.helpers.mcp_client import fetch_roots, http_server, remote_snapshot, stdio_params, wait_until

pytestmark = pytest.mark.anyio

Snapshot = Callable[[], Awaitable[dict[str, Any]]]

TRANSPORTS = ["memory", "stdio", "stdio-legacy-only", "http", "http-stateless"]
MODES = ["auto", "legacy", "2026-07-28"]


@asynccontextmanager
async def connect(transport: str, mode: str, provider: RootsProvider) -> AsyncIterator[tuple[Client, Snapshot]]:
    """A connected ``mcp.Client`` using the one-line integration, and a way to read the server's record."""
    recorder = Recorder()

    async def local() -> dict[str, Any]:
        return recorder.snapshot()

    if transport == "memory":
        async with Client(build_server(recorder), mode=mode, **provider.client_kwargs()) as client:
            yield client, local
    elif transport.startswith("stdio"):
        params = stdio_params(legacy_only=transport == "stdio-legacy-only")
        async with Client(params, mode=mode, **provider.client_kwargs()) as client:

            async def remote() -> dict[str, Any]:
                return await remote_snapshot(client)

            yield client, remote
    else:
        with http_server(recorder, stateless=transport == "http-stateless") as url:
            async with Client(url, mode=mode, **provider.client_kwargs()) as client:
                yield client, local


def _combos() -> list[tuple[str, str]]:
    combos = [(t, m) for t in TRANSPORTS for m in MODES]
    # A stateless HTTP server has no back-channel: handshake-era roots cannot work there at all (protocol.md 2);
    # that combination is covered by test_stateless_http_legacy below.
    combos.remove(("http-stateless", "legacy"))
    return combos


def _expected(*roots: tuple[Path, str | None]) -> dict[str, Any]:
    out = []
    for path, name in roots:
        entry: dict[str, Any] = {"uri": path_to_uri(path)}
        if name is not None:
            entry["name"] = name
        out.append(entry)
    return {"roots": out}


def _record_row(row: dict[str, Any]) -> None:
    target = os.environ.get("ROOTBOUND_WIRE_TABLE")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")


def _answer_frames(frames: list[str], in_2026: bool) -> list[tuple[str, Any]]:
    """(raw text, parsed answer) for every raw frame that carried a roots answer."""
    out = []
    for text in frames:
        try:
            message = json.loads(text)
        except ValueError:
            continue
        for item in message if isinstance(message, list) else [message]:
            if in_2026:
                answer = ((item.get("params") or {}).get("inputResponses") or {}).get("roots")
            else:
                result = item.get("result")
                answer = result if isinstance(result, dict) and "roots" in result else None
            if answer is not None:
                out.append((text, answer))
    return out


@pytest.mark.parametrize(("transport", "mode"), _combos())
async def test_wire(transport: str, mode: str, tmp_path: Path) -> None:
    a, b, c, d = tmp_path / "a b", tmp_path / "é", tmp_path / "c", tmp_path / "d"
    provider = RootsProvider(
        [Root.from_path(a, "Alpha"), b, "file://LOCALHOST" + path_to_uri(c)[7:] + "/"], coalesce=0.05
    )
    with anyio.fail_after(30), warnings.catch_warnings():
        warnings.simplefilter("error", MCPDeprecationWarning)
        async with connect(transport, mode, provider) as (client, snapshot):
            negotiated = client.protocol_version
            in_2026 = negotiated in MODERN_PROTOCOL_VERSIONS
            sent = provider.notifications_sent
            first = await fetch_roots(client)
            assert first == _expected((a, "Alpha"), (b, None), (c, None))

            # A burst inside one coalescing window: one notification (handshake era), none on 2026-07-28.
            await provider.set_roots([a, b])
            await provider.add(Root.from_path(d, "Delta"))
            await provider.remove(str(a))
            await provider.flush()
            second = await fetch_roots(client)
            assert second == _expected((b, None), (d, "Delta"))

            if not in_2026:

                async def notified() -> bool:
                    return count((await snapshot())["messages"], LIST_CHANGED) >= 1

                await wait_until(notified)
            await anyio.sleep(0.2)  # longer than the window: a second notification would have arrived by now
            record = await snapshot()
            sent_here = sent(client.session)

    messages = record["messages"]
    declared = declared_capabilities(messages)
    if transport != "memory":
        in_frames = declared_in_frames(record["frames"])
        # The server handled a suffix of what was sent (a refused probe comes first).
        assert in_frames[len(in_frames) - len(declared) :] == declared
        declared = in_frames  # includes a discover probe the server may have refused before handling it
    expected_caps = {"roots": {}} if in_2026 else {"roots": {"listChanged": True}}
    assert declared, "no request declared capabilities"
    for method, caps in declared:
        if in_2026 or method == "initialize":
            assert caps == expected_caps, (method, caps)
        else:  # a 2026-07-28 discover probe that preceded a handshake fallback
            assert caps == {"roots": {}}, (method, caps)
    if not in_2026:
        assert [m for m, _ in declared if m == "initialize"] == ["initialize"]
    if mode == "auto" and transport != "memory":
        assert declared[0] == ("server/discover", {"roots": {}})  # the era probe is enveloped too
    notifications = count(messages, LIST_CHANGED)
    assert notifications == (0 if in_2026 else 1)
    assert sent_here == notifications
    assert record["answers"][:2] == [first, second]

    if transport != "memory":  # byte-based transports: check the raw frames too
        frames = record["frames"]
        answers = _answer_frames(frames, in_2026)
        assert [answer for _, answer in answers][:2] == [first, second]
        for text, answer in answers[:2]:
            for root in answer["roots"]:
                assert root["uri"] in text  # the canonical URI went out verbatim, not re-spelled
        raw_notifications = sum(1 for f in frames if json.loads(f).get("method") == LIST_CHANGED)
        assert raw_notifications == notifications

    _record_row(
        {
            "transport": transport,
            "mode": mode,
            "version": negotiated,
            "capabilities": [f"{method}: {json.dumps(caps)}" for method, caps in _first_per_method(declared)],
            "list_changed": notifications,
        }
    )


def _first_per_method(declared: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    seen: dict[str, Any] = {}
    for method, caps in declared:
        seen.setdefault(method, caps)
    return list(seen.items())


async def test_stateless_http_handshake(tmp_path: Path) -> None:
    """Stateless HTTP + handshake: the capability is still right and list_changed is still POSTed once."""
    recorder = Recorder()
    provider = RootsProvider([tmp_path], coalesce=0.02)
    with anyio.fail_after(20), http_server(recorder, stateless=True) as url:
        async with Client(url, mode="legacy", **provider.client_kwargs()) as client:
            negotiated = client.protocol_version
            assert negotiated not in MODERN_PROTOCOL_VERSIONS
            await provider.add(tmp_path / "x")
            await provider.add(tmp_path / "y")
            await provider.flush()

            async def notified() -> bool:
                return count(recorder.snapshot()["messages"], LIST_CHANGED) >= 1

            await wait_until(notified)
            await anyio.sleep(0.1)
    messages = recorder.snapshot()["messages"]
    assert declared_capabilities(messages) == [("initialize", {"roots": {"listChanged": True}})]
    assert count(messages, LIST_CHANGED) == 1
    _record_row(
        {
            "transport": "http-stateless",
            "mode": "legacy",
            "version": negotiated,
            "capabilities": [f"initialize: {json.dumps({'roots': {'listChanged': True}})}"],
            "list_changed": 1,
        }
    )
