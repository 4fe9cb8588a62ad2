"""Multi-instance deployment: ``rootbound serve --http`` instances behind nginx (Debian package), all on loopback.

Three instances: A1 and A2 share their ``requestState`` keys (``--state-key-env``), B has other keys. One nginx
(its own config, pid, logs and temp paths under the test's tmp dir; ``worker_processes 1`` so round-robin is
exact) in front, with the configuration ``docs/deploy.md`` documents:

* ``/mcp``: 2026-07-28 requests (``MCP-Protocol-Version: 2026-07-28``) round-robin over A1+A2; everything else (the
  handshake era's ``initialize``, its session traffic, GET/DELETE) sticky by client address. ``Host`` is passed
  through (``proxy_set_header Host $http_host``), and the instances accept the proxy's own address in it
  (``--allowed-host 127.0.0.1:PORT``: the Host check compares the port).
* ``/mcp-mixed``: round-robin over A1+B (keys differ).
* ``/mcp-rr``: round-robin over A1+A2 for every request, no stickiness (what not to do for the handshake era).
* ``/mcp-nohost``: like ``/mcp`` but nginx's default ``Host`` (the upstream name): the DNS-rebinding guard's 421.
* ``/mcp-otherport``: ``Host: 127.0.0.1:1``, the instances' address with a port neither they nor the proxy listen
  on: 421 too.

Checks: 200 modern-era ``tools/call`` through ``/mcp`` with 0 errors, every call's two rounds on different
instances (nginx's own access log); a handshake-era session through ``/mcp`` works, through ``/mcp-rr`` it breaks;
a retry whose ``requestState`` was sealed by A1's configuration is accepted by A1 and A2 and rejected by B with a
clean JSON-RPC error (``-32602``, HTTP 400), after which every instance still answers.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary

from mcp import Client
from rootbound import Root, RootSet
from rootbound.core.request_state import encode_request_state
from rootbound.mcp.client import RootsProvider
from rootbound.workspace.server import WorkspaceConfig, build_workspace_server
from tests.helpers.processes import free_port, python_env, report, rootbound_http, stop, table, wait_listening

pytestmark = pytest.mark.timeout(180)

CALLS = 200
KEY_ENV = "ROOTBOUND_TEST_STATE_KEYS"
SHARED_KEYS = ("a" * 64 + "," + "b" * 64).encode().split(b",")
OTHER_KEYS = [b"c" * 64]
MODERN_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "rootbound-deploy-test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
}

NGINX_CONF = """
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 512; }}
http {{
    log_format mcp '$http_mcp_method $http_mcp_name $upstream_addr $request_length $status';
    access_log {tmp}/access.log mcp;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;

    # 2026-07-28 requests are self-contained: any instance (sharing the requestState keys) can serve any round.
    # Everything else is the handshake era, whose session lives in one process: keep a client on one instance.
    map $http_mcp_protocol_version $mcp_pool {{
        "2026-07-28" mcp_modern;
        default      mcp_sessions;
    }}
    upstream mcp_modern   {{ server {a1}; server {a2}; keepalive 16; }}
    upstream mcp_sessions {{ hash $remote_addr consistent; server {a1}; server {a2}; }}
    upstream mcp_mixed    {{ server {a1}; server {b}; }}

    server {{
        listen 127.0.0.1:{port};
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_buffering off;
        proxy_read_timeout 60s;

        location = /mcp {{
            proxy_pass http://$mcp_pool;
            proxy_set_header Host $http_host;
        }}
        location = /mcp-mixed {{
            proxy_pass http://mcp_mixed/mcp;
            proxy_set_header Host $http_host;
        }}
        location = /mcp-rr {{
            proxy_pass http://mcp_modern/mcp;
            proxy_set_header Host $http_host;
        }}
        location = /mcp-nohost {{
            proxy_pass http://mcp_modern/mcp;
        }}
        location = /mcp-otherport {{
            proxy_pass http://mcp_modern/mcp;
            proxy_set_header Host 127.0.0.1:1;
        }}
    }}
}}
"""

FIGURES: list[tuple[str, str]] = []


def nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if found is None:
        pytest.fail("nginx is not installed: run `bash scripts/setup-test-deps.sh` (`make test` does)", pytrace=False)
    return found


@contextlib.contextmanager
def nginx(tmp: Path, port: int, instances: Mapping[str, str]) -> Iterator[str]:
    """nginx in the foreground on ``port`` with its own config, pid, logs and temp dirs; yields its base URL.

    The port is chosen before the instances start: they accept it in ``Host`` only because they were told
    (``--allowed-host 127.0.0.1:PORT``), since the Host check compares the port (issue 48 row 12)."""
    hostport = {name: url.removeprefix("http://").removesuffix("/mcp") for name, url in instances.items()}
    conf = tmp / "nginx.conf"
    conf.write_text(NGINX_CONF.format(tmp=tmp, port=port, **hostport))
    process = subprocess.Popen(
        [nginx_binary(), "-p", str(tmp), "-e", str(tmp / "error.log"), "-c", str(conf), "-g", "daemon off;"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        if not wait_listening(process, port, 15, "nginx"):
            log = (tmp / "error.log").read_text()[-2000:] if (tmp / "error.log").exists() else ""
            raise RuntimeError(f"nginx failed to start on 127.0.0.1:{port}: {log}")
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("deploy")
    workspace = tmp / "workspace"
    workspace.mkdir()
    (workspace / "README").write_text("deployed\n")
    shared = python_env(**{KEY_ENV: b",".join(SHARED_KEYS).decode()})
    other = python_env(**{KEY_ENV: b",".join(OTHER_KEYS).decode()})
    log = tmp / "instances.log"
    proxy_port = free_port()
    args = ("--trust-client-roots", "--state-key-env", KEY_ENV, "--allowed-host", f"127.0.0.1:{proxy_port}")
    with (
        rootbound_http(*args, env=shared, log=log) as a1,
        rootbound_http(*args, env=shared, log=log) as a2,
        rootbound_http(*args, env=other, log=log) as b,
        nginx(tmp, proxy_port, {"a1": a1, "a2": a2, "b": b}) as proxy,
    ):
        yield {"a1": a1, "a2": a2, "b": b, "proxy": proxy, "tmp": tmp, "workspace": workspace}
    report(
        pytestconfig,
        "nginx: two rootbound serve instances (+ one with other keys), round-robin",
        table(("check", "result"), FIGURES),
    )


def access_log(tmp: Path) -> list[list[str]]:
    path = tmp / "access.log"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def post(url: str, body: Mapping[str, Any], headers: Mapping[str, str], timeout: float = 15.0) -> tuple[int, Any]:
    """One POST; the JSON-RPC message from a JSON body or the last SSE ``data:`` line."""
    response = httpx2.post(url, json=dict(body), headers=dict(headers), timeout=timeout)
    text = response.text
    if "text/event-stream" in response.headers.get("content-type", ""):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = data[-1] if data else ""
    try:
        return response.status_code, json.loads(text)
    except ValueError:
        return response.status_code, text  # e.g. the DNS-rebinding guard's plain-text 421


def tools_call(name: str, arguments: Mapping[str, Any], request_id: int, **extra: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": dict(arguments), "_meta": META, **extra},
    }


def leaf(error: BaseException) -> str:
    """The innermost error of an exception group, as ``Type: message``."""
    while isinstance(getattr(error, "exceptions", None), tuple) and error.exceptions:  # type: ignore[attr-defined]
        error = error.exceptions[0]  # type: ignore[attr-defined]
    return f"{type(error).__name__}: {error}"[:90]


def call_headers(name: str) -> dict[str, str]:
    return {**MODERN_HEADERS, "mcp-method": "tools/call", "mcp-name": name}


# --------------------------------------------------------------------------------------------------- tests


@pytest.mark.anyio
async def test_modern_calls_alternate_between_instances(deployment: dict[str, Any]) -> None:
    proxy, tmp, workspace = deployment["proxy"], deployment["tmp"], deployment["workspace"]
    before = len(access_log(tmp))
    provider = RootsProvider([Root.from_path(workspace, "Workspace")])
    errors = 0
    with anyio.fail_after(120):
        async with Client(f"{proxy}/mcp", mode="2026-07-28", **provider.client_kwargs()) as client:
            for _ in range(CALLS):
                try:
                    result = await client.call_tool("list_roots", {})
                except Exception:
                    errors += 1
                    continue
                content = result.content[0] if result.content else None
                if (
                    result.is_error
                    or not isinstance(content, types.TextContent)
                    or workspace.as_uri() not in content.text
                ):
                    errors += 1
    rounds = [line for line in access_log(tmp)[before:] if line[:2] == ["tools/call", "list_roots"]]
    assert len(rounds) == 2 * CALLS, f"{len(rounds)} tools/call rounds logged by nginx"
    statuses = {line[4] for line in rounds}
    pairs = [(rounds[i], rounds[i + 1]) for i in range(0, len(rounds), 2)]
    split = sum(1 for first, second in pairs if first[2] != second[2])
    instances = {line[2] for line in rounds}
    first_sizes = {int(first[3]) for first, _ in pairs}
    retry_sizes = {int(second[3]) for _, second in pairs}
    FIGURES.extend(
        [
            ("modern calls through /mcp (list_roots, 2 rounds each)", f"{CALLS} calls, {errors} errors"),
            ("rounds logged by nginx (tools/call)", f"{len(rounds)}, HTTP statuses {sorted(statuses)}"),
            ("instances serving them", ", ".join(sorted(instances))),
            ("calls whose 2 rounds hit different instances", f"{split}/{CALLS}"),
            ("round sizes (bytes): first / retry", f"{sorted(first_sizes)} / {sorted(retry_sizes)}"),
        ]
    )
    assert errors == 0
    assert statuses == {"200"}
    assert len(instances) == 2
    assert split == CALLS
    assert max(first_sizes) < min(retry_sizes)  # every second round carries inputResponses: the pairing is right


@pytest.mark.anyio
async def test_handshake_sessions_need_stickiness(deployment: dict[str, Any]) -> None:
    proxy, workspace, tmp = deployment["proxy"], deployment["workspace"], deployment["tmp"]
    before = len(access_log(tmp))
    provider = RootsProvider([Root.from_path(workspace)])
    with anyio.fail_after(60):
        async with Client(f"{proxy}/mcp", mode="legacy", **provider.client_kwargs()) as client:
            assert client.protocol_version == "2025-11-25"
            results = [await client.call_tool("list_roots", {}) for _ in range(20)]
    sticky_ok = sum(1 for result in results if not result.is_error)
    upstreams = {line[2] for line in access_log(tmp)[before:]}
    FIGURES.append(
        (
            "handshake-era session through /mcp (sticky by client address)",
            f"20 calls, {20 - sticky_ok} errors, all on {', '.join(sorted(upstreams))}",
        )
    )
    assert sticky_ok == 20
    assert len(upstreams) == 1

    # Without stickiness the session's follow-up requests land on the instance that never saw `initialize`.
    outcome = "no error"
    with anyio.fail_after(60):
        try:
            async with Client(f"{proxy}/mcp-rr", mode="legacy", **provider.client_kwargs()) as client:
                for _ in range(4):
                    await client.call_tool("list_roots", {})
        except Exception as error:
            outcome = f"client error: {leaf(error)}"
    FIGURES.append(("handshake-era session through /mcp-rr (plain round-robin)", outcome))
    assert outcome != "no error"


def test_host_header_must_pass_through(deployment: dict[str, Any]) -> None:
    proxy = deployment["proxy"]
    status, body = post(f"{proxy}/mcp-nohost", tools_call("list_roots", {}, 1), call_headers("list_roots"))
    FIGURES.append(("/mcp-nohost (nginx default Host: the upstream name)", f"HTTP {status}"))
    assert status == 421
    status, body = post(f"{proxy}/mcp-otherport", tools_call("list_roots", {}, 3), call_headers("list_roots"))
    FIGURES.append(("/mcp-otherport (Host: 127.0.0.1 with another port)", f"HTTP {status}"))
    assert status == 421
    status, body = post(f"{proxy}/mcp", tools_call("list_roots", {}, 2), call_headers("list_roots"))
    assert status == 200 and body["result"]["resultType"] == "input_required"


async def seal_like_a1(name: str, arguments: Mapping[str, Any], plaintext: str) -> str:
    """A ``requestState`` exactly as instance A1 would seal it: the ``RequestStateBoundary`` of a workspace server
    built like ``rootbound serve --state-key-env`` with A1's keys (same codec, audience and request binding)."""
    server, _service = build_workspace_server(WorkspaceConfig(state_keys=tuple(SHARED_KEYS)))
    (boundary,) = [m for m in server.middleware if isinstance(m, RequestStateBoundary)]
    ctx: ServerRequestContext[Any, Any] = ServerRequestContext(
        session=cast(Any, None),
        lifespan_context=None,
        protocol_version="2026-07-28",
        method="tools/call",
        params={"name": name, "arguments": dict(arguments), "_meta": META},
        request_id=1,
    )

    async def handler(ctx: ServerRequestContext[Any, Any]) -> Any:
        return types.InputRequiredResult(request_state=plaintext, input_requests={"more": types.ListRootsRequest()})

    sealed = await boundary(ctx, handler)
    assert isinstance(sealed, types.InputRequiredResult) and sealed.request_state is not None
    return sealed.request_state


@pytest.mark.anyio
async def test_state_from_other_keys_is_rejected_cleanly(deployment: dict[str, Any]) -> None:
    proxy, workspace = deployment["proxy"], deployment["workspace"]
    # Roots carried into a later round: the state rootbound's RootsService puts in requestState (sealed).
    carried = encode_request_state(RootSet.of([Root.from_path(workspace, "Carried")]), None)
    assert carried is not None
    state = await seal_like_a1("list_roots", {}, carried)
    retry = tools_call("list_roots", {}, 7, requestState=state)
    outcomes: dict[str, list[str]] = {"/mcp": [], "/mcp-mixed": []}
    for path in outcomes:
        for attempt in range(4):
            send = functools.partial(post, f"{proxy}{path}", {**retry, "id": 100 + attempt}, call_headers("list_roots"))
            with anyio.fail_after(20):
                status, body = await anyio.to_thread.run_sync(send)
            if status == 200 and "result" in body and body["result"].get("resultType", "complete") == "complete":
                text = body["result"]["content"][0]["text"]
                assert workspace.as_uri() in text and "(Carried)" in text
                outcomes[path].append("complete")
            else:
                error = body["error"]
                assert body["id"] == 100 + attempt and "roots" not in json.dumps(error)
                outcomes[path].append(f"HTTP {status} {error['code']} {error['message']}")
    FIGURES.append(
        ("retry with A1-sealed state via /mcp (A1, A2 share keys)", "; ".join(sorted(set(outcomes["/mcp"]))))
    )
    FIGURES.append(("same retry via /mcp-mixed (A1, B: other keys), 4 tries", " | ".join(outcomes["/mcp-mixed"])))
    assert outcomes["/mcp"] == ["complete"] * 4
    assert sorted(outcomes["/mcp-mixed"]) == ["HTTP 400 -32602 Invalid or expired requestState"] * 2 + ["complete"] * 2

    # No crash, no hang: every instance still answers a fresh call directly.
    for name in ("a1", "a2", "b"):
        status, body = post(deployment[name], tools_call("list_roots", {}, 9), call_headers("list_roots"))
        assert status == 200 and body["result"]["resultType"] == "input_required"
    FIGURES.append(("instances alive after the rejections", "A1, A2, B all answer"))
