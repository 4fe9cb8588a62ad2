"""Issue 16 regression tests over a real ``rootbound serve`` subprocess: stdio and Streamable HTTP, both eras.

Each test names the item of the issue it covers. The raw-wire tests send exactly the bytes a hostile client
would (the SDK client cannot be made to send them); the others drive the real SDK ``Client`` in both modes.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import httpx2
import mcp_types as types
import pytest

from rootbound import Root
from rootbound.mcp import RootsProvider
from tests.helpers.serve_process import http_serve, serve, text_of

MODES = ("legacy", "2026-07-28")
MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
}
ACCEPT = "application/json, text/event-stream"


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def _deep_call(request_id: int | str, levels: int, *, modern: bool) -> str:
    """A ``tools/call`` whose ``inputResponses`` nest ``levels`` deep (built as text: json.dumps would recurse)."""
    deep = '{"a":' * levels + "1" + "}" * levels
    meta = json.dumps({"_meta": ENVELOPE})[1:-1] + "," if modern else ""
    return (
        f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"method":"tools/call","params":{{{meta}'
        f'"name":"list_roots","arguments":{{}},"inputResponses":{{"k":{deep}}}}}}}'
    )


def _url_from(stderr: IO[Any]) -> str:
    """The URL ``serve --http`` prints once listening (after its startup policy line)."""
    while True:
        raw = stderr.readline()
        if not raw:
            raise AssertionError("the server exited before listening")
        line: str = raw.decode() if isinstance(raw, bytes) else str(raw)
        match = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
        if match:
            return match.group(1)


class StdioPeer:
    """``rootbound serve`` over stdio with raw lines in and out (a reader thread, so reads can time out)."""

    def __init__(self, args: list[str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rootbound", "serve", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None if os.environ.get("HARDENING_DEBUG") else subprocess.DEVNULL,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        stdout = self.process.stdout
        assert stdout is not None
        threading.Thread(target=self._pump, args=(stdout,), daemon=True).start()

    def _pump(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self.lines.put(line)

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def answer_to(self, request_id: Any, timeout: float = 60) -> dict[str, Any]:
        """The next message with this id (a ``null`` id matches ``None``); fails after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no answer to id {request_id!r} within {timeout} s")
            try:
                message: dict[str, Any] = json.loads(self.lines.get(timeout=remaining))
            except queue.Empty:
                continue
            if "method" not in message and message.get("id") == request_id:
                return message

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


@contextmanager
def stdio_peer(args: list[str], *, modern: bool) -> Iterator[StdioPeer]:
    peer = StdioPeer(args)
    try:
        if not modern:
            init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
            peer.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
            assert "result" in peer.answer_to(0)
            peer.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        yield peer
    finally:
        peer.close()


# -- item 12: a request nested too deeply is answered ------------------------------------------------------------


@pytest.mark.parametrize("levels", [300, 5000])
@pytest.mark.parametrize("mode", MODES)
def test_item12_too_deep_request_is_answered_over_stdio(tmp_path: Path, mode: str, levels: int) -> None:
    modern = mode == MODERN
    with stdio_peer([str(tmp_path)], modern=modern) as peer:
        peer.send(_deep_call(7, levels, modern=modern))
        answer = peer.answer_to(7)
        assert answer["error"]["code"] == -32602
        assert "nested too deeply" in answer["error"]["message"]
        # An unreadable id (the document is not even one object) gets a parse error with id null.
        peer.send("[" * 5000 + "]" * 5000)
        assert peer.answer_to(None)["error"]["code"] == -32700
        # The connection still works afterwards.
        if modern:
            params = {"name": "list_roots", "arguments": {}, "_meta": ENVELOPE}
            peer.send(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": params}))
        else:
            peer.send(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}))
        assert "result" in peer.answer_to(8)


@pytest.mark.parametrize("levels", [300, 5000])
@pytest.mark.parametrize("mode", MODES)
def test_item12_too_deep_request_is_answered_over_http(tmp_path: Path, mode: str, levels: int) -> None:
    modern = mode == MODERN
    headers = {"content-type": "application/json", "accept": ACCEPT}
    if modern:
        headers |= {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "list_roots"}
    with http_serve([str(tmp_path)]) as url, httpx2.Client(timeout=10) as http:
        response = http.post(url, content=_deep_call("deep-1", levels, modern=modern), headers=headers)
        assert response.status_code == 400
        body = response.json()
        assert (body["id"], body["error"]["code"]) == ("deep-1", -32602)
        response = http.post(url, content="[" * 5000 + "]" * 5000, headers=headers)
        assert response.status_code == 400
        assert (response.json()["id"], response.json()["error"]["code"]) == (None, -32700)


# -- item 6: the HTTP session table cannot be locked by bare initialize requests ----------------------------------


def _bare_initialize(http: httpx2.Client, url: str) -> str:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "0"}}
    response = http.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        headers={"accept": ACCEPT, "mcp-protocol-version": "2025-11-25"},
    )
    assert response.status_code == 200, response.status_code
    session = response.headers["mcp-session-id"]
    assert isinstance(session, str)
    return session


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_item6_initialize_flood_does_not_lock_out_real_clients(tmp_path: Path, mode: str) -> None:
    args = [str(tmp_path), "--max-sessions", "8", "--init-timeout", "1"]
    provider = RootsProvider([tmp_path])
    with http_serve(args) as url, httpx2.Client(timeout=10) as http:
        flood = [_bare_initialize(http, url) for _ in range(40)]  # 5x the cap: the oldest pending make room
        # A real client of either era still gets in while the flood's sessions are pending.
        async with serve_url(url, mode=mode, provider=provider) as client:
            assert (await text_of(client, "list_roots"))[0] is False
        # Pending sessions are reaped after --init-timeout: their ids answer 404.
        await anyio.sleep(2.5)
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        headers = {"accept": ACCEPT, "mcp-protocol-version": "2025-11-25", "mcp-session-id": flood[-1]}
        assert http.post(url, json=ping, headers=headers).status_code == 404


@pytest.mark.anyio
async def test_item6_taken_up_sessions_make_room_for_a_new_client_and_idle_out(tmp_path: Path) -> None:
    """Issue 33 #4: a full table of taken-up sessions no longer answers 503: the least recently useful one makes
    room (its id then answers 404), and sessions still idle out."""
    args = [str(tmp_path), "--max-sessions", "2", "--session-idle-timeout", "1.5", "--init-timeout", "30"]
    with http_serve(args) as url, httpx2.Client(timeout=10) as http:
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        sessions = []
        for _ in range(2):
            session = _bare_initialize(http, url)
            headers = {"accept": ACCEPT, "mcp-protocol-version": "2025-11-25", "mcp-session-id": session}
            assert http.post(url, json=note, headers=headers).status_code == 202
            sessions.append(headers)
        third = _bare_initialize(http, url)  # 200: room was made
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert http.post(url, json=ping, headers=sessions[0]).status_code == 404  # the least recently useful went
        assert http.post(url, json=ping, headers=sessions[1]).status_code == 200
        await anyio.sleep(2.5)  # all idle out
        headers = {"accept": ACCEPT, "mcp-protocol-version": "2025-11-25", "mcp-session-id": third}
        assert http.post(url, json=ping, headers=headers).status_code == 404


def serve_url(url: str, *, mode: str, provider: RootsProvider) -> Any:
    """An SDK client on an already running HTTP server."""
    from contextlib import asynccontextmanager

    from mcp.client.streamable_http import streamable_http_client

    from mcp import Client

    @asynccontextmanager
    async def connect() -> Any:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode, **provider.client_kwargs()) as client,
        ):
            yield client

    return connect()


# -- item 11: no DIRs: client roots confined to the serving user's home ------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_item11_no_dirs_refuses_system_locations(transport: str, mode: str) -> None:
    home = Path(os.path.expanduser("~")).resolve()
    if Path("/etc").resolve().is_relative_to(home):
        pytest.skip("the home directory contains /etc")  # pragma: no cover - not on any CI image
    provider = RootsProvider([Root.from_path(Path("/etc"))])
    with anyio.fail_after(60):
        async with serve(transport, [], mode=mode, provider=provider) as client:
            error, text = await text_of(client, "read_file", path="/etc/passwd")
            assert error, text
            assert "root:" not in text
            error, text = await text_of(client, "list_roots")
            assert "refused a client root" in text
            assert "file:///etc dir" not in text


@pytest.mark.anyio
async def test_item11_trust_client_roots_is_explicit() -> None:
    provider = RootsProvider([Root.from_path(Path("/etc"))])
    with anyio.fail_after(60):
        async with serve("stdio", ["--trust-client-roots"], mode="legacy", provider=provider) as client:
            error, text = await text_of(client, "list_roots")
            assert (error, text.splitlines()[0]) == (False, "file:///etc dir")


# -- item 1 (part): SIGTERM exits promptly over HTTP even with work in flight --------------------------------------


@pytest.mark.parametrize("parked", ["tools/call waiting on roots/list", "open GET stream"])
def test_item1_sigterm_exits_promptly_with_work_in_flight(tmp_path: Path, parked: str) -> None:
    """A call parked on a client that never answers ``roots/list``, or a session's open SSE stream, must not hold
    SIGTERM off: the process is gone within the grace period."""
    process = subprocess.Popen(
        [sys.executable, "-m", "rootbound", "serve", "--http", "127.0.0.1:0", str(tmp_path), "--roots-timeout", "60"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        assert process.stderr is not None
        url = _url_from(process.stderr)
        with httpx2.Client(timeout=30) as http:
            init = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"roots": {"listChanged": True}},
                "clientInfo": {"name": "slow", "version": "0"},
            }
            opening = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
            response = http.post(url, json=opening, headers={"accept": ACCEPT})
            session = response.headers["mcp-session-id"]
            headers = {"accept": ACCEPT, "mcp-protocol-version": "2025-11-25", "mcp-session-id": session}
            http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
            params = {"name": "list_roots", "arguments": {}}
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
            started = threading.Event()

            def park() -> None:
                try:
                    if parked == "open GET stream":
                        stream = http.stream("GET", url, headers={**headers, "accept": "text/event-stream"})
                    else:
                        stream = http.stream("POST", url, json=call, headers=headers)
                    with stream as open_stream:
                        started.set()
                        for _ in open_stream.iter_bytes():
                            pass
                except httpx2.HTTPError:
                    pass

            threading.Thread(target=park, daemon=True).start()
            assert started.wait(10)
            time.sleep(0.5)
            sent = time.monotonic()
            process.send_signal(signal.SIGTERM)
            process.wait(15)
            assert time.monotonic() - sent < 5
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


# -- item 2 (part): no log flood under an error storm ---------------------------------------------------------------


def test_item2_accept_storm_does_not_flood_the_log(tmp_path: Path) -> None:
    """Out of descriptors, asyncio logs a traceback per failed ``accept()`` (~1,100 a second): rate-limited."""
    import resource
    import socket

    def few_fds() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))

    process = subprocess.Popen(
        [sys.executable, "-m", "rootbound", "serve", "--http", "127.0.0.1:0", str(tmp_path)],
        stderr=subprocess.PIPE,
        preexec_fn=few_fds,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    sockets: list[socket.socket] = []
    try:
        assert process.stderr is not None
        port = int(_url_from(process.stderr).rsplit(":", 1)[1].split("/")[0])
        logged = [0]

        def drain(stderr: IO[bytes]) -> None:
            while chunk := stderr.read1(65536):  # type: ignore[attr-defined]
                logged[0] += len(chunk)

        threading.Thread(target=drain, args=(process.stderr,), daemon=True).start()
        sockets = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
        time.sleep(3)
        assert 0 < logged[0] < 20_000, logged[0]
    finally:
        for sock in sockets:
            sock.close()
        process.kill()
        process.wait()
        if process.stderr is not None:
            process.stderr.close()


def test_item6_private_sdk_access_is_pinned() -> None:
    """``_sessions`` reaches into the SDK's session manager: its table and its discard method must still exist."""
    import inspect

    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(app=Server("pin"))
    assert isinstance(manager._server_instances, dict)
    assert inspect.iscoroutinefunction(manager._discard_session)
    assert list(inspect.signature(manager._discard_session).parameters) == ["session_id", "transport"]


# -- item 8: special files are type-checked before any reading open ------------------------------------------------


def _fifo_writer(fifo: Path) -> subprocess.Popen[bytes]:
    """A process blocked in ``open(fifo, "w")`` until some reader opens the FIFO."""
    return subprocess.Popen([sys.executable, "-c", f"open({str(fifo)!r}, 'w').write('released')"])


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_item8_fifo_with_a_blocked_writer_is_never_opened(tmp_path: Path, transport: str, mode: str) -> None:
    """A writer blocked on a FIFO in a root stays blocked through read_file, grep, search_files and stat: the
    server never opens the FIFO for reading (opening it would release the writer, then kill it with EPIPE)."""
    root = tmp_path.resolve()
    fifo = root / "pipe"
    os.mkfifo(fifo)
    (root / "plain.txt").write_text("needle\n")
    writer = _fifo_writer(fifo)
    try:
        provider = RootsProvider([root])
        with anyio.fail_after(120):
            async with serve(transport, [str(root)], mode=mode, provider=provider) as client:
                error, text = await text_of(client, "read_file", path="pipe")
                assert error, text
                error, text = await text_of(client, "grep", pattern="needle")
                assert "plain.txt" in text
                await text_of(client, "search_files", pattern="*")
                await text_of(client, "stat", path="pipe")
                await anyio.sleep(0.5)
        assert writer.poll() is None, "the FIFO was opened for reading: its blocked writer was released"
    finally:
        writer.kill()
        writer.wait()


# -- item 1: a pathological pattern does not freeze the server -------------------------------------------------------

PATHOLOGICAL: list[tuple[str, dict[str, Any]]] = [
    # (tool, arguments): each takes hours on a backtracking engine over the planted tree below
    ("grep", {"pattern": "(a+)+$", "regex": True}),
    ("grep", {"pattern": "(.+)+@@@", "regex": True}),
    ("search_files", {"pattern": "*?" * 12 + "Z"}),
    ("search_files", {"pattern": "**/" * 17 + "Z"}),
]


def _planted(base: Path) -> Path:
    root = base.resolve() / "planted"
    (root / "names").mkdir(parents=True)
    (root / "line.txt").write_text("a" * 40 + "!\n")
    (root / "text.txt").write_text("an ordinary line of text with nothing planted in it at all, really\n")
    (root / "names" / ("n" * 41 + "a")).write_text("x")
    deep = root
    for i in range(20):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (deep / "leaf.txt").write_text("x")
    return root


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_item1_pathological_patterns_do_not_freeze_the_server(tmp_path: Path, transport: str, mode: str) -> None:
    """While each catastrophic pattern runs, a trivial call on the same server still answers, and the pattern's
    own call answers too (a result or the deadline's error): on a backtracking engine holding the GIL neither
    would, for hours."""
    root = _planted(tmp_path)
    provider = RootsProvider([root])
    with anyio.fail_after(240):
        async with serve(transport, [str(root)], mode=mode, provider=provider) as client:
            for tool, arguments in PATHOLOGICAL:

                async def hostile(tool: str = tool, arguments: dict[str, Any] = arguments) -> None:
                    await client.call_tool(tool, arguments)  # a result or a tool error: answered either way

                async with anyio.create_task_group() as tg:  # waits for the hostile call's answer too
                    tg.start_soon(hostile)
                    await anyio.sleep(0.2)
                    error, text = await text_of(client, "list_roots")
                    assert not error and root.as_uri() in text


# -- item 9: arguments checked against the input schema; no raw exception text ---------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_item9_arguments_are_checked_before_use(tmp_path: Path, transport: str, mode: str) -> None:
    root = tmp_path.resolve()
    (root / "a.txt").write_text("hello\n")
    provider = RootsProvider([root])
    with anyio.fail_after(120):
        async with serve(transport, [str(root), "--writable"], mode=mode, provider=provider) as client:
            error, text = await text_of(client, "read_file", path="a.txt", offset=2**63)
            assert (error, text) == (True, "invalid arguments: an integer is out of range (signed 64-bit)")
            error, text = await text_of(client, "read_file", path="a.txt", SECRET_NAME=1)
            assert error  # the accepted names are listed (the schema's), never the caller's (issue 27)
            assert text.startswith("invalid arguments: unexpected argument in arguments; the accepted ones are: path, ")
            assert "SECRET" not in text
            error, text = await text_of(client, "read_file", path="a.txt", offset=-1)
            assert (error, text) == (True, "invalid arguments: argument 'offset' is less than 0")
            error, text = await text_of(client, "list_directory")
            assert (error, text) == (True, "invalid arguments: missing required argument 'path'")
            if transport == "stdio":  # over HTTP the SDK refuses a body past 4 MiB before any tool (413)
                error, text = await text_of(client, "write_file", path="big.txt", content="x" * (20 * 1024 * 1024))
                assert (error, text) == (
                    True,
                    "invalid arguments: argument 'content' is longer than 16777216 characters",
                )
                assert not (root / "big.txt").exists()
            assert await text_of(client, "read_file", path="a.txt") == (False, "hello\n")


# -- item 2: a cap on roots per snapshot, with a clear refusal -------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_item2_too_many_roots_are_refused_clearly(tmp_path: Path, transport: str, mode: str) -> None:
    """300 file roots (each one or two held fds) against the default cap of 256: refused whole, with a message
    saying why; the same server still serves a client with a few roots."""
    root = tmp_path.resolve()
    files = []
    for i in range(300):
        path = root / f"r{i:03}.txt"
        path.write_text("x")
        files.append(path)
    with anyio.fail_after(180):
        async with serve(transport, [str(root)], mode=mode, provider=RootsProvider(files)) as client:
            error, text = await text_of(client, "list_roots")
            assert error
            assert text == (
                "refused: the client declared 300 roots; this server holds at most 256 per client (--max-roots)"
            )
        async with serve(transport, [str(root), "--max-roots", "4"], mode=mode, provider=RootsProvider(files[:4])) as c:
            error, text = await text_of(c, "list_roots")
            assert not error and files[3].as_uri() in text


# -- item 4: no existence oracle through list_roots -------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_item4_roots_outside_the_allowlist_get_one_reason(tmp_path: Path, transport: str, mode: str) -> None:
    """An existing file, a missing path and a device outside the DIRs are refused alike: nothing tells them apart."""
    work = tmp_path.resolve() / "work"
    work.mkdir()
    outside = tmp_path.resolve() / "outside"
    outside.mkdir()
    (outside / "exists.txt").write_text("x")
    probes = [outside / "exists.txt", outside / "missing.txt", Path("/dev/null"), outside]
    provider = RootsProvider([work, *probes])
    with anyio.fail_after(120):
        async with serve(transport, [str(work)], mode=mode, provider=provider) as client:
            error, text = await text_of(client, "list_roots")
    assert not error
    reasons = [line.rsplit("(", 1)[-1] for line in text.splitlines() if line.startswith("refused a client root")]
    assert reasons == ["not in allowlist)"] * len(probes)


# -- item 10: no output forgery through file names -------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_item10_control_characters_in_names_cannot_forge_lines(tmp_path: Path, transport: str, mode: str) -> None:
    """A name carrying a newline and a fake ``path:line:`` suffix, or an ESC sequence, is escaped in every text
    result; the structured result keeps the exact name."""
    root = tmp_path.resolve()
    forged = "x\nFAKE.txt:1:forged line\x1b[2J"
    (root / forged).write_text("needle\n")
    provider = RootsProvider([root])
    with anyio.fail_after(120):
        async with serve(transport, [str(root)], mode=mode, provider=provider) as client:
            for tool, arguments in (
                ("grep", {"pattern": "needle"}),
                ("search_files", {"pattern": "x*"}),
                ("list_directory", {"path": "."}),
            ):
                result = await client.call_tool(tool, arguments)
                content = result.content[0]
                assert isinstance(content, types.TextContent)
                assert not result.is_error, content.text
                assert "\x1b" not in content.text
                assert not any(line.startswith("FAKE.txt:1:") for line in content.text.splitlines())
                assert "\\x0a" in content.text.lower() or "\\n" in content.text
                if tool == "list_directory":
                    assert result.structured_content is not None
                    assert [entry["name"] for entry in result.structured_content["entries"]] == [forged]
