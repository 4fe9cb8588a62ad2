"""The TypeScript SDK v2 client (``@modelcontextprotocol/client`` 2.4.0) on ``rootbound serve``'s resources (issue
49), handshake era, over stdio and Streamable HTTP: it reads a file (text and its digest), pages a 450-entry
directory to its end with SEP-2640's ``resources/directory/read`` (a custom request to it), subscribes to the
file, and receives ``notifications/resources/updated`` after each of three writes by another process. The
client declares no roots: the server serves its own directory."""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rootbound.core.uri import path_to_uri
from tests.helpers.processes import DEPS, python_env, require, rootbound_command, rootbound_http
from tests.judges.interop.test_interop import node

HERE = Path(__file__).resolve().parent
TS_CLIENT = HERE / "ts_resources_client.mjs"
UPDATES = 3


@pytest.fixture(scope="module", autouse=True)
def interop_deps() -> None:
    require(DEPS / "interop" / "node_modules" / "@modelcontextprotocol" / "client", "@modelcontextprotocol/client")
    require(HERE / "node_modules", "tests/judges/interop/node_modules (link to .deps/interop/node_modules)")


@contextlib.contextmanager
def target(transport: str, root: Path, log: Path) -> Iterator[list[str]]:
    if transport == "stdio":
        yield ["--stdio", *rootbound_command(), str(root)]
        return
    with rootbound_http(str(root), log=log) as url:
        yield ["--http", url]


def write_in_another_process(path: Path, text: str) -> None:
    subprocess.run([sys.executable, "-c", f"open({str(path)!r}, 'w').write({text!r})"], check=True, timeout=60)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_ts_client_reads_pages_and_gets_updates(transport: str, tmp_path: Path) -> None:
    root = tmp_path.resolve() / "work"
    (root / "many").mkdir(parents=True)
    for n in range(450):
        (root / "many" / f"f{n:03}.txt").write_text(f"{n}\n")
    watched = root / "watched.txt"
    watched.write_text("one\n")
    with target(transport, root, tmp_path / "serve.log") as where:
        argv = [node(), str(TS_CLIENT), "--file", path_to_uri(watched), "--dir", path_to_uri(root / "many")]
        client = subprocess.Popen(
            [*argv, "--updates", str(UPDATES), *where],
            stdout=subprocess.PIPE,
            env=python_env(TS_CLIENT_TIMEOUT_MS="120000"),
            text=True,
        )
        assert client.stdout is not None
        lines: list[dict[str, Any]] = []
        try:
            for raw in client.stdout:
                if not raw.startswith("{"):
                    continue
                lines.append(json.loads(raw))
                if lines[-1]["step"] in ("subscribed", "updated") and len(lines) < 3 + UPDATES:
                    write_in_another_process(watched, f"write {len(lines)}\n")
            assert client.wait(60) == 0
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
            client.stdout.close()
    read, pages, subscribed, *updated, done = lines
    assert read == {"step": "read", "text": "one\n", "digest": "sha256:" + hashlib.sha256(b"one\n").hexdigest()}
    assert pages["pages"] == 3 and pages["names"] == [f"f{n:03}.txt" for n in range(450)]
    assert subscribed == {"step": "subscribed"} and done == {"step": "done"}
    assert [{k: v for k, v in line.items() if k != "t"} for line in updated] == [
        {"step": "updated", "uri": path_to_uri(watched)}
    ] * UPDATES
