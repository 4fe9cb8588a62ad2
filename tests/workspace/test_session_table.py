"""A session table no client can fill (issue 33 #4): sessions kept alive by pings make room for a new client.

A real ``rootbound serve --http`` subprocess; the flood is raw HTTP (``initialize``, ``initialized``, then a
``ping`` per session, as the red team's client did), the new client the real SDK ``Client``.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from rootbound.mcp import RootsProvider
from rootbound.workspace.sessions import useful
from tests.helpers.serve_process import http_serve, text_of
from tests.workspace.test_hardening import ACCEPT, _bare_initialize, serve_url

pytestmark = pytest.mark.anyio

CAP = {"legacy": 256, "2026-07-28": 12}
"""The red team's 256 pinged sessions for handshake-era newcomers; 12 for the stateless era, which needs none."""
PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
NOTE = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _headers(session: str) -> dict[str, str]:
    return {"accept": ACCEPT, "mcp-protocol-version": "2025-11-25", "mcp-session-id": session}


def test_what_counts_as_useful() -> None:
    assert not useful(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    assert not useful(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert not useful(b'{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}')  # an answer to the server
    assert useful(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_roots"}}')
    assert useful(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    assert useful(b"[" * 10 + b"]" * 10)  # not a keep-alive: the SDK answers it
    assert useful(b"x" * 10_000)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_pinged_sessions_never_lock_a_new_client_out(tmp_path: Path, mode: str) -> None:
    cap = CAP[mode]
    args = [str(tmp_path), "--max-sessions", str(cap), "--init-timeout", "120"]
    with http_serve(args) as url, httpx2.Client(timeout=30) as http:
        # One session that does real work, then the flood fills the rest of the table and pings.
        worker = _bare_initialize(http, url)
        assert http.post(url, json=NOTE, headers=_headers(worker)).status_code == 202
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_roots", "arguments": {}}}
        flood = []
        for _ in range(cap - 1):
            session = _bare_initialize(http, url)
            assert http.post(url, json=NOTE, headers=_headers(session)).status_code == 202
            flood.append(session)
        assert http.post(url, json=call, headers=_headers(worker)).status_code == 200  # the most recently useful
        for session in flood:
            assert http.post(url, json=PING, headers=_headers(session)).status_code == 200
        # The table is full of taken-up, kept-alive sessions: new clients still get in, one after another.
        for _ in range(3):
            async with serve_url(url, mode=mode, provider=RootsProvider([tmp_path])) as client:
                error, text = await text_of(client, "list_roots")
                assert not error, text
        for session in flood:  # and the flood keeps pinging
            http.post(url, json=PING, headers=_headers(session))
        assert http.post(url, json=call, headers=_headers(worker)).status_code == 200  # the useful one was kept
        gone = sum(http.post(url, json=PING, headers=_headers(s)).status_code == 404 for s in flood)
    # The first handshake-era client took a pinged session's place; each left with DELETE, freeing its own for the
    # next. 2026-07-28 clients are stateless (the SDK may open one session while it finds the era).
    assert gone == 1 if mode == "legacy" else gone <= 1  # a 2026-07-28 client may probe with initialize once
