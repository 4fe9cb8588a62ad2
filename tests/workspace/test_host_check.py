"""Host and Origin matched whole (issue 33 #6): ``HOST:*`` is a port number and nothing after it.

The rule on its own, then over a real ``rootbound serve --http`` subprocess with the headers a rebinding page (or
a hand-made client) could send.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from rootbound.workspace.transport.host_origin import host_matches
from tests.helpers.serve_process import http_serve

ALLOWED = ["127.0.0.1:8765", "127.0.0.1:*", "localhost:8765", "[::1]:*"]
ORIGINS = ["http://127.0.0.1:*", "https://127.0.0.1:*", "http://localhost:8765"]


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("127.0.0.1:8765", True),
        ("127.0.0.1:1", True),
        ("127.0.0.1:65535", True),
        ("LOCALHOST:8765", True),
        ("[::1]:9000", True),
        ("127.0.0.1:8765@evil.example", False),
        ("127.0.0.1:8765.evil.example", False),
        ("127.0.0.1:65536", False),
        ("127.0.0.1:", False),
        ("127.0.0.1:80 ", False),
        ("127.0.0.1:١٢٣", False),  # digits, but not ASCII ones
        ("127.0.0.1", False),
        ("localhost:87650", False),
        ("evil.example", False),
    ],
)
def test_hosts_are_matched_whole(value: str, allowed: bool) -> None:
    assert host_matches(value, ALLOWED) is allowed


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("http://127.0.0.1:8765", True),
        ("https://127.0.0.1:443", True),
        ("http://localhost:8765", True),
        ("http://127.0.0.1:8765.evil.example", False),
        ("http://127.0.0.1:8765@evil.example", False),
        ("http://127.0.0.1:8765/", False),
        ("http://evil.example", False),
        ("null", False),
    ],
)
def test_origins_are_matched_whole(value: str, allowed: bool) -> None:
    assert host_matches(value, ORIGINS) is allowed


def test_serve_refuses_look_alike_hosts_and_origins(tmp_path: Path) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = "application/json, text/event-stream"
    with http_serve([str(tmp_path)]) as url, httpx2.Client(timeout=30) as http:
        port = url.rsplit(":", 1)[1].split("/")[0]

        def status(host: str, origin: str | None = None) -> int:
            headers = {"host": host, "accept": accept, "mcp-protocol-version": "2025-11-25"}
            if origin is not None:
                headers["origin"] = origin
            code: int = http.post(url, json=ping, headers=headers).status_code
            return code

        assert status(f"127.0.0.1:{port}@evil.example") == 421
        assert status(f"127.0.0.1:{port}.evil.example") == 421
        assert status(f"127.0.0.1:{port}", origin=f"http://127.0.0.1:{port}.evil.example") == 403
        assert status(f"127.0.0.1:{port}", origin="http://evil.example") == 403
        good = status(f"127.0.0.1:{port}", origin=f"http://127.0.0.1:{port}")
        assert good not in (421, 403), good
        assert status(f"localhost:{port}") not in (421, 403)
