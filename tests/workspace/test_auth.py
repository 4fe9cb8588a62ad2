"""``rootbound serve --http --auth-token-env``: a real server on 127.0.0.1, the real SDK client in both eras
(including the 2026-07-28 round that retries a tool call with the client's roots), and raw HTTP for the 401s."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.server.auth.provider import AccessToken

from mcp import Client
from rootbound import Root
from rootbound.mcp import RootsProvider
from rootbound.workspace.transport.http import is_loopback
from tests.helpers.serve_process import http_serve, serve_cli, text_of

MODES = ("legacy", "2026-07-28")
TOKEN = "t0k3n-" + "a1b2c3d4" * 5
ENV = {"RB_TEST_TOKEN": TOKEN}
ARGS = ["--auth-token-env", "RB_TEST_TOKEN"]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("auth").resolve()
    (base / "app").mkdir()
    (base / "app" / "main.py").write_text("print('hi')\n")
    (base / "lib").mkdir()
    return base


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_authenticated_client_is_served_in_both_eras(work: Path, mode: str) -> None:
    from mcp.client.streamable_http import streamable_http_client

    # The client declares roots: in 2026-07-28 the first tools/call is answered "input required" and the client
    # retries it with its roots (the MRTR round); every request, the retry included, carries the token.
    provider = RootsProvider([Root.from_path(work / "app", "App")])
    sent: list[tuple[str | None, bytes]] = []
    statuses: list[int] = []

    async def on_request(request: httpx2.Request) -> None:
        sent.append((request.headers.get("authorization"), request.content))

    async def on_response(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    hooks: dict[str, list[Callable[..., Any]]] = {"request": [on_request], "response": [on_response]}
    with anyio.fail_after(60), http_serve([str(work), *ARGS], env=ENV) as url:
        async with (
            httpx2.AsyncClient(timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}, event_hooks=hooks) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode, **provider.client_kwargs()) as client,
        ):
            error, text = await text_of(client, "list_roots")
            assert not error
            lines = text.splitlines()
            assert lines[0] == f"{(work / 'app').as_uri()} (App) dir"
            assert lines[-1] == "source: client"
            assert await text_of(client, "read_file", path="main.py") == (False, "print('hi')\n")
    assert {authorization for authorization, _ in sent} == {f"Bearer {TOKEN}"}
    assert 401 not in statuses
    calls = [body for _, body in sent if b'"tools/call"' in body]
    if mode == "2026-07-28":  # list_roots, its retry with the roots, then read_file (roots cached per request: 2)
        assert len(calls) >= 3
        assert any(b"inputResponses" in body for body in calls)
    else:
        assert len(calls) == 2


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("authorization", [None, "Bearer wrong", f"Bearer {TOKEN}x", f"Basic {TOKEN}"])
async def test_sdk_client_without_the_token_is_refused(work: Path, mode: str, authorization: str | None) -> None:
    from mcp.client.streamable_http import streamable_http_client

    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    headers = {"Authorization": authorization} if authorization else None
    with http_serve([str(work), *ARGS], env=ENV) as url:
        async with httpx2.AsyncClient(timeout=10, headers=headers, event_hooks={"response": [record]}) as http:
            with anyio.fail_after(30), pytest.raises(Exception):  # noqa: B017, PT011 - the SDK wraps it its own way
                async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                    await client.call_tool("list_roots", {})
    assert statuses and set(statuses) == {401}  # every request the SDK made was refused, none got through


@pytest.mark.anyio
async def test_401_reveals_nothing(work: Path) -> None:
    with http_serve([str(work), *ARGS], env=ENV) as url:
        async with httpx2.AsyncClient(timeout=10) as http:
            answers = []
            for method, headers in [
                ("POST", {}),
                ("POST", {"Authorization": "Bearer nope"}),
                ("POST", {"Authorization": f"Bearer {TOKEN[:-1]}"}),
                ("POST", {"Authorization": f"Bearer  {TOKEN}"}),
                ("POST", {"Authorization": TOKEN}),
                ("POST", {"Authorization": f"Token {TOKEN}"}),
                ("GET", {}),
                ("DELETE", {"Mcp-Session-Id": "abc"}),
            ]:
                response = await http.request(method, url, json=INITIALIZE, headers={**ACCEPT, **headers})
                answers.append((response.status_code, response.headers.get("www-authenticate"), response.text))
                assert TOKEN[:8] not in response.text
            for path in ("/", "/other", "/mcp/"):  # every path, not only the endpoint
                response = await http.get(url.removesuffix("/mcp") + path)
                answers.append((response.status_code, response.headers.get("www-authenticate"), response.text))
            assert set(answers) == {
                (
                    401,
                    'Bearer error="invalid_token", error_description="Authentication required"',
                    '{"error": "invalid_token", "error_description": "Authentication required"}',
                )
            }
            # The same request with the token gets through to MCP (and "bearer" is case-insensitive).
            ok = await http.post(url, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"bearer {TOKEN}"})
            assert ok.status_code == 200
            assert "serverInfo" in ok.text


@pytest.mark.parametrize("address", ["0.0.0.0:0", "[::]:0", "192.0.2.1:0", "example.invalid:0"])
def test_non_loopback_without_a_token_refuses_to_start(work: Path, address: str) -> None:
    done = serve_cli(str(work), "--http", address)
    assert done.returncode == 2
    assert done.stderr == (
        "rootbound serve: refusing to serve a non-loopback address without --auth-token-env (or --insecure-no-auth)\n"
    )


def test_token_flag_errors(work: Path) -> None:
    short = serve_cli(str(work), "--http", "127.0.0.1:0", *ARGS, env={"RB_TEST_TOKEN": "short"})
    unset = serve_cli(str(work), "--http", "127.0.0.1:0", "--auth-token-env", "RB_TEST_UNSET_TOKEN")
    stdio = serve_cli(str(work), *ARGS, env=ENV)
    assert [d.returncode for d in (short, unset, stdio)] == [2, 2, 2]
    assert short.stderr == "rootbound serve: environment variable RB_TEST_TOKEN must hold a token of 32+ characters\n"
    assert TOKEN not in short.stderr + unset.stderr + stdio.stderr
    assert unset.stderr == (
        "rootbound serve: environment variable RB_TEST_UNSET_TOKEN must hold a token of 32+ characters\n"
    )
    assert stdio.stderr == "rootbound serve: --auth-token-env needs --http\n"


def test_startup_line_says_authenticated(work: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "rootbound", "serve", str(work), "--http", "127.0.0.1:0", *ARGS],
        env={**os.environ, **ENV},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
    finally:
        process.terminate()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()
    assert "/mcp (auth: bearer token; sandbox: " in line


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("[::1]", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("[::]", False),
        ("10.0.0.1", False),
        ("localhost.example", False),
        ("", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


class AudienceVerifier:
    """An operator's OAuth verifier (introspection or JWT in real life): knows two tokens, for two resources."""

    async def verify_token(self, token: str) -> AccessToken | None:
        audiences = {"for-this-server": "http://127.0.0.1/mcp", "for-another-server": "http://elsewhere.example/mcp"}
        if token not in audiences:
            return None
        return AccessToken(token=token, client_id="oauth-client", scopes=["files"], resource=audiences[token])


@pytest.mark.anyio
async def test_oauth_resource_server_hooks(work: Path) -> None:
    """The Python API path an operator with an authorization server takes: their verifier, the token's audience
    checked by the SDK, RFC 9728 metadata served without a token and announced in the 401."""
    import socket

    import uvicorn
    from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
    from pydantic import AnyHttpUrl

    from rootbound.workspace.server import WorkspaceConfig, build_workspace_server
    from rootbound.workspace.transport.http import http_app

    resource = AnyHttpUrl("http://127.0.0.1/mcp")
    metadata = build_resource_metadata_url(resource)
    server, _ = build_workspace_server(WorkspaceConfig(dirs=(work,)))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = http_app(
        server,
        allowed_hosts=[f"127.0.0.1:{port}"],
        token_verifier=AudienceVerifier(),
        resource_server_url=str(resource),
        resource_metadata_url=str(metadata),
        public_routes=create_protected_resource_routes(resource, [AnyHttpUrl("https://auth.example")]),
    )
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    base = f"http://127.0.0.1:{port}"
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg, httpx2.AsyncClient(timeout=10) as http:
            tg.start_soon(lambda: web.serve(sockets=[sock]))
            while not web.started:
                await anyio.sleep(0.01)
            try:
                meta = await http.get(base + metadata.path)  # type: ignore[operator]
                assert meta.status_code == 200
                assert meta.json()["authorization_servers"] == ["https://auth.example/"]
                refused = await http.post(base + "/mcp", json=INITIALIZE, headers=ACCEPT)
                assert refused.status_code == 401
                assert f'resource_metadata="{metadata}"' in refused.headers["www-authenticate"]
                wrong = {**ACCEPT, "Authorization": "Bearer for-another-server"}
                assert (await http.post(base + "/mcp", json=INITIALIZE, headers=wrong)).status_code == 401
                right = {**ACCEPT, "Authorization": "Bearer for-this-server"}
                answer = await http.post(base + "/mcp", json=INITIALIZE, headers=right)
                assert answer.status_code == 200
                assert "serverInfo" in answer.text
            finally:
                web.should_exit = True
