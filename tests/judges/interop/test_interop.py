"""Interop with the TypeScript SDK v2 (``@modelcontextprotocol/client`` 2.4.0, ``/server`` 2.4.0, ``/node`` 2.1.2,
pinned in ``tests/judges/interop/package-lock.json``), on the system Node (>= 20).

* TS client → ``rootbound serve`` (stdio and Streamable HTTP, handshake era and 2026-07-28): the tools see the TS
  client's roots, and after the client narrows them (``sendRootsListChanged()`` in the handshake era; simply the
  next answer in 2026-07-28) the very next call sees the narrowed set and the dropped root is denied.
* rootbound ``RootsProvider`` (``mcp.Client``) → a TS server (``ts_server.mjs``) that asks for roots
  (``roots/list`` in the handshake era, ``inputRequired.listRoots()`` in 2026-07-28): the TS tool receives the
  provider's roots, the declared capability is era-correct, and ``provider.add()`` reaches it (with exactly one
  ``notifications/roots/list_changed`` in the handshake era, none in 2026-07-28).

The matrix (direction × transport × era) is printed into the pytest output.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from rootbound import Root
from rootbound.mcp.client import RootsProvider
from tests.helpers.processes import (
    DEPS,
    listening,
    python_env,
    report,
    require,
    rootbound_command,
    rootbound_http,
    table,
)

HERE = Path(__file__).resolve().parent
TS_CLIENT = HERE / "ts_client.mjs"
TS_SERVER = HERE / "ts_server.mjs"
TIMEOUT = 60.0

MATRIX: list[tuple[str, str, str, str, str]] = []


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail("node (>= 20) is not on PATH: the TypeScript SDK interop tests need it", pytrace=False)
    return found


@pytest.fixture(scope="module", autouse=True)
def interop_deps(pytestconfig: pytest.Config) -> Iterator[None]:
    require(DEPS / "interop" / "node_modules" / "@modelcontextprotocol" / "client", "@modelcontextprotocol/client")
    require(HERE / "node_modules", "tests/judges/interop/node_modules (link to .deps/interop/node_modules)")
    yield
    header = ("direction", "transport", "era", "result", "evidence")
    report(pytestconfig, "TypeScript SDK v2 interop matrix", table(header, sorted(MATRIX)))


@contextlib.contextmanager
def matrix_row(direction: str, transport: str, era: str) -> Iterator[dict[str, str]]:
    """Record one matrix row: PASS with the evidence the test filled in, or FAIL with the error."""
    row = {"era": era, "evidence": ""}
    try:
        yield row
    except BaseException as error:
        MATRIX.append((direction, transport, row["era"], "FAIL", f"{type(error).__name__}: {error}"[:100]))
        raise
    MATRIX.append((direction, transport, row["era"], "PASS", row["evidence"]))


# ---------------------------------------------------------------------------------------------- TS → rootbound


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "secret.txt").write_text("from a\n")
    (b / "kept.txt").write_text("from b\n")
    return a, b


def run_ts_client(era: str, roots: list[Path], narrow_to: list[Path], read: Path, target: list[str]) -> list[Any]:
    argv = [
        node(),
        str(TS_CLIENT),
        "--era",
        era,
        "--roots",
        ",".join(root.as_uri() for root in roots),
        "--narrow-to",
        ",".join(root.as_uri() for root in narrow_to),
        "--read",
        str(read),
        *target,
    ]
    done = subprocess.run(
        argv, capture_output=True, env=python_env(TS_CLIENT_TIMEOUT_MS="45000"), timeout=TIMEOUT, check=False
    )
    assert done.returncode == 0, f"ts_client failed ({done.returncode}): {done.stderr.decode()[-3000:]}"
    return [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]


def steps(lines: list[Any], step: str, tool: str) -> dict[str, Any]:
    (found,) = [line for line in lines if line.get("step") == step and line.get("tool") == tool]
    return dict(found)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_ts_client_to_rootbound_serve(transport: str, era: str, workspace: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = workspace
    with matrix_row("TS client → rootbound serve", transport, era) as row:
        check_ts_client_to_rootbound(transport, era, a, b, tmp_path / "serve.log", row)


def check_ts_client_to_rootbound(transport: str, era: str, a: Path, b: Path, log: Path, row: dict[str, str]) -> None:
    with contextlib.ExitStack() as stack:
        if transport == "stdio":
            target = ["--stdio", *rootbound_command(), "--trust-client-roots"]  # the TS client's roots are in tmp
        else:
            target = ["--http", stack.enter_context(rootbound_http("--trust-client-roots", log=log))]
        lines = run_ts_client(era, [a, b], [b], a / "secret.txt", target)
    version = row["era"] = lines[0]["protocolVersion"]
    assert version == ("2026-07-28" if era == "modern" else "2025-11-25")
    initial = steps(lines, "initial", "list_roots")
    assert not initial["isError"]
    assert a.as_uri() in initial["text"] and b.as_uri() in initial["text"]
    assert "source: client" in initial["text"]
    assert steps(lines, "initial", "read_file") == {
        "step": "initial",
        "tool": "read_file",
        "isError": False,
        "text": "from a\n",
    }
    narrowed = steps(lines, "narrowed", "list_roots")
    assert b.as_uri() in narrowed["text"] and a.as_uri() not in narrowed["text"]
    denied = steps(lines, "narrowed", "read_file")
    assert denied["isError"] and "outside" in denied["text"] and "from a" not in denied["text"]
    calls = lines[-1]["rootsListCalls"]
    how = "sendRootsListChanged → next call narrowed" if era == "legacy" else "next request's answer narrowed"
    row["evidence"] = f"roots seen; {how}; read outside denied; roots/list answered {calls}×"


# ---------------------------------------------------------------------------------------------- rootbound → TS


@contextlib.asynccontextmanager
async def ts_client_session(
    transport: str, mode: str, provider: RootsProvider, url: str | None
) -> AsyncIterator[Client]:
    target: Any
    if transport == "stdio":
        target = StdioServerParameters(command=node(), args=[str(TS_SERVER), "--stdio"], cwd=str(HERE))
    else:
        target = url
    async with Client(target, mode=mode, **provider.client_kwargs()) as client:
        yield client


async def tool_json(client: Client, name: str) -> Any:
    result = await client.call_tool(name, {})
    assert not result.is_error, result
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return json.loads(content.text)


@pytest.fixture(scope="module")
def ts_http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("ts-server") / "ts_server.log"
    with listening([node(), str(TS_SERVER), "--http", "0"], cwd=HERE, stderr_path=log, env=dict(os.environ)) as url:
        yield url


@pytest.mark.anyio
@pytest.mark.timeout(120)
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28", "auto"])
async def test_roots_provider_to_ts_server(transport: str, mode: str, ts_http_server: str) -> None:
    with matrix_row("RootsProvider → TS server", transport, f"mode={mode}") as row:
        await check_roots_provider_to_ts_server(transport, mode, ts_http_server, row)


async def check_roots_provider_to_ts_server(transport: str, mode: str, url: str, row: dict[str, str]) -> None:
    first, second = Root("file:///tmp/rootbound-interop/one", "One"), Root("file:///tmp/rootbound-interop/two")
    provider = RootsProvider([first], coalesce=0.01)
    with anyio.fail_after(TIMEOUT):
        async with ts_client_session(transport, mode, provider, url) as client:
            version = client.protocol_version
            modern = version == "2026-07-28"
            assert version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            declared = await tool_json(client, "declared_capabilities")
            assert declared["roots"] == ({} if modern else {"listChanged": True})
            seen = await tool_json(client, "roots")
            assert seen == {
                "era": "modern" if modern else "legacy",
                "roots": [{"uri": first.uri, "name": "One"}],
                "listChanged": 0,
            }
            await provider.add(second)
            await provider.flush()
            expected = [{"uri": first.uri, "name": "One"}, {"uri": second.uri}]
            for _ in range(100):  # the handshake-era notification is one-way: give the TS server a moment
                seen = await tool_json(client, "roots")
                if modern or seen["listChanged"] == 1:
                    break
                await anyio.sleep(0.02)
            assert seen["roots"] == expected
            assert seen["listChanged"] == (0 if modern else 1)
    how = "inputRequired.listRoots() round answered" if modern else "roots/list answered; list_changed received ×1"
    row["era"] = f"{version} (mode={mode})"
    row["evidence"] = f"{how}; capability {json.dumps(declared['roots'])}; add() seen"
