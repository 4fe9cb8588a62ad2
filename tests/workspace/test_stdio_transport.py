"""The event-loop stdio transport of ``rootbound serve``: framing, bad input and end of input on raw pipes.

Every test but the reader unit tests drives a real ``rootbound serve`` subprocess with raw bytes on its stdin (no
client library between the test and the pipe), so what is checked is exactly what a host sees.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter

from rootbound.workspace.transport.stdio_loop import (
    INVALID_REQUEST_LINE,
    MAX_LINE,
    PARSE_ERROR_LINE,
    PipeReader,
    PipeWriter,
    encode,
    servable,
)

MIB = 1024 * 1024
PARSE_ERROR = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def ping(request_id: int, **params: Any) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
    if params:
        message["params"] = params
    return line(message)


class Served:
    """``rootbound serve DIR`` with raw pipes; answers are read line by line from its stdout."""

    def __init__(self, work: Path, stdin: Any = subprocess.PIPE) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rootbound", "serve", str(work)],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        assert self.process.stdout is not None
        self.stdout = self.process.stdout

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def receive(self) -> Any:
        raw = self.stdout.readline()
        assert raw.endswith(b"\n"), raw[:200]
        return json.loads(raw)

    def handshake(self) -> None:
        self.write(line(INITIALIZE))
        assert self.receive()["id"] == 0
        self.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def close(self) -> tuple[int, bytes, bytes]:
        """Close stdin; the exit code and whatever else the server wrote to stdout and stderr."""
        out, err = self.process.communicate(timeout=30)
        return self.process.returncode, out, err


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    (tmp_path / "a.txt").write_text("hello\n")
    server = Served(tmp_path)
    try:
        server.handshake()
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.communicate()


def test_a_request_split_across_many_writes_is_reassembled(served: Served) -> None:
    call = line(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "a.txt"}},
        }
    )
    for start in range(0, len(call), 5):
        served.write(call[start : start + 5])
        time.sleep(0.002)  # each piece reaches the server as its own read
    answer = served.receive()
    assert answer["id"] == 7
    assert answer["result"]["content"][0]["text"] == "hello\n"
    # Two requests in one write, the second cut in half across the next.
    served.write(ping(8) + ping(9)[:10])
    time.sleep(0.01)
    served.write(ping(9)[10:])
    assert [served.receive()["id"], served.receive()["id"]] == [8, 9]
    assert served.close()[0] == 0


def test_a_10_mib_line_is_one_message(served: Served) -> None:
    served.write(ping(1, _meta={"pad": "x" * (10 * MIB)}))
    assert served.receive() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    served.write(ping(2))
    assert served.receive()["id"] == 2
    assert served.close()[0] == 0


def test_unparseable_lines_get_a_parse_error_that_echoes_nothing(served: Served) -> None:
    marker = "EVIL-MARKER-1234"
    bad = [
        (f"{marker}, not JSON".encode(), PARSE_ERROR),
        (f'{{"jsonrpc":"2.0","id":1,"method":"ping", {marker}'.encode(), PARSE_ERROR),  # truncated JSON
        (b"\xff\xfe" + marker.encode(), PARSE_ERROR),  # invalid UTF-8 outside any string
        (b'{"a":' * 10_000 + b"1" + b"}" * 10_000, PARSE_ERROR),  # nested past the parser's limit
        (f'[{{"jsonrpc":"2.0","id":"{marker}","method":"ping"}}]'.encode(), json.loads(INVALID_REQUEST_LINE)),
        (f'{{"{marker}": 1}}'.encode(), json.loads(INVALID_REQUEST_LINE)),
        (f'{{"jsonrpc":"2.0","id":1,"method":7,"x":"{marker}"}}'.encode(), json.loads(INVALID_REQUEST_LINE)),
    ]
    for garbage, expected in bad:
        served.write(garbage + b"\n")
        assert served.receive() == expected, garbage[:80]
    # An answer-shaped line that does not validate is dropped, as the SDK drops it; the next request is served.
    served.write(b'{"jsonrpc":"2.0","id":"nobody-asked","result":7}\n')
    served.write(b"\n   \n")  # blank lines between frames are ignored
    served.write(ping(5))
    assert served.receive() == {"jsonrpc": "2.0", "id": 5, "result": {}}
    code, out, err = served.close()
    assert code == 0
    assert out == b""
    assert marker.encode() not in err


def test_invalid_utf8_inside_a_string_is_replaced_as_the_sdk_does(served: Served) -> None:
    served.write(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file",'
                 b'"arguments":{"path":"a\xff.txt"}}}\n')  # fmt: skip
    answer = served.receive()
    assert answer["id"] == 3
    assert answer["result"]["isError"] is True  # a\ufffd.txt does not exist: a tool error, not a crash
    served.write(ping(4))
    assert served.receive()["id"] == 4


def test_eof_in_the_middle_of_a_line_ends_the_server_cleanly_and_promptly(served: Served) -> None:
    served.write(ping(1))
    assert served.receive()["id"] == 1
    served.write(b'{"jsonrpc":"2.0","id":2,"meth')  # the client dies mid-write
    started = time.perf_counter()
    code, out, _ = served.close()  # closes stdin
    elapsed = time.perf_counter() - started
    assert code == 0
    # The unterminated tail is the last line, as the SDK treats it: not JSON, so a parse error.
    assert [json.loads(row) for row in out.splitlines()] == [PARSE_ERROR]
    print(f"exit after stdin closed: {elapsed * 1000:.0f} ms")  # bench/peers.py measures this; no timed assert


def test_a_regular_file_on_stdin_falls_back_to_the_sdk_transport(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(line(INITIALIZE) + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n' + ping(1))
    fd = os.open(requests, os.O_RDONLY)
    try:
        assert not servable(fd, 1)
    finally:
        os.close(fd)
    with requests.open("rb") as stdin:
        server = Served(tmp_path, stdin=stdin)
        code, out, _ = server.close()
    assert code == 0
    answers = [json.loads(row) for row in out.splitlines()]
    assert answers[0]["id"] == 0
    # The SDK transport cancels what is in flight at EOF, so the ping may or may not be answered; never garbled.
    assert all(answer.get("jsonrpc") == "2.0" for answer in answers)


# ------------------------------------------------------------------------------ the reader, in process


@pytest.mark.anyio
@pytest.mark.parametrize("seed", range(5))
async def test_any_chunking_of_a_stream_yields_the_same_messages(seed: int) -> None:
    """Random cut points (inside lines, on newlines, inside ``\\r\\n``) never change what is read."""
    rng = random.Random(seed)
    messages = [ping(i, _meta={"pad": "y" * rng.randrange(0, 300_000)}) for i in range(20)]
    stream = b"".join(m if i % 3 else m[:-1] + b"\r\n" for i, m in enumerate(messages))
    read_fd, write_fd = os.pipe()
    out_read, out_write = os.pipe()
    received: list[Any] = []
    async with pipe_streams_on(read_fd, out_write) as (reader, _writer):

        async def feed() -> None:
            position = 0
            while position < len(stream):
                size = rng.choice([1, 2, 7, 4096, 65536, 300_000])
                chunk = stream[position : position + size]
                await anyio.to_thread.run_sync(_write_all, write_fd, chunk)
                position += len(chunk)
            os.close(write_fd)

        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            async for item in reader:
                assert not isinstance(item, Exception)
                received.append(item.message.id)  # type: ignore[union-attr]
    os.close(out_read)
    assert received == list(range(20))


@pytest.mark.anyio
async def test_a_line_past_the_limit_is_refused_and_the_stream_resyncs(monkeypatch: pytest.MonkeyPatch) -> None:
    import rootbound.workspace.transport.stdio_loop as transport

    monkeypatch.setattr(transport, "MAX_LINE", 1000)
    read_fd, write_fd = os.pipe()
    out_read, out_write = os.pipe()
    os.set_blocking(out_read, False)
    async with pipe_streams_on(read_fd, out_write) as (reader, _writer):
        _write_all(write_fd, b"z" * 5000 + b"\n" + ping(1))
        os.close(write_fd)
        items = [item async for item in reader]
    assert [item.message.id for item in items] == [1]  # type: ignore[union-attr]
    answer = json.loads(os.read(out_read, 4096))
    assert answer["error"]["code"] == -32700
    assert MAX_LINE > 16 * MIB  # the real limit leaves room for write_file's 16 MiB of content


class pipe_streams_on:
    """A reader and writer on two plain pipes, non-blocking as :func:`pipe_streams` sets them."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.fds = (read_fd, write_fd)

    async def __aenter__(self) -> tuple[PipeReader, PipeWriter]:
        for fd in self.fds:
            os.set_blocking(fd, False)
        writer = PipeWriter(self.fds[1])
        return PipeReader(self.fds[0], writer), writer

    async def __aexit__(self, *exc: object) -> None:
        for fd in self.fds:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            time.sleep(0.0005)


def test_pipe_streams_restores_the_standard_descriptors() -> None:
    """While serving, fd 0/1 name the null device and stderr; afterwards the wire again, blocking as before."""
    code = (
        "import anyio, os, sys\n"
        "from rootbound.workspace.transport.stdio_loop import pipe_streams\n"
        "before = (os.fstat(0).st_ino, os.fstat(1).st_ino, os.get_blocking(0), os.get_blocking(1))\n"
        "async def main():\n"
        "    async with pipe_streams() as (reader, writer):\n"
        "        assert os.fstat(1).st_ino == os.fstat(2).st_ino\n"
        "        assert os.read(0, 10) == b''\n"
        "        async for item in reader:\n"
        "            await writer.send(item)\n"
        "anyio.run(main)\n"
        "after = (os.fstat(0).st_ino, os.fstat(1).st_ino, os.get_blocking(0), os.get_blocking(1))\n"
        "assert before == after, (before, after)\n"
        "os.write(1, b'restored\\n')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], input=ping(1), capture_output=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    lines = result.stdout.splitlines()
    assert json.loads(lines[0]) == json.loads(ping(1))  # echoed back through the writer, one frame
    assert lines[1:] == [b"restored"]
    assert PARSE_ERROR_LINE.endswith(b"\n")


def test_a_client_that_stops_reading_does_not_crash_the_server(served: Served) -> None:
    """stdout closed by the client: answers fail with EPIPE (dropped), and stdin's EOF still ends the server."""
    served.stdout.close()
    served.write(ping(1) + ping(2))
    assert served.process.stdin is not None
    served.process.stdin.close()
    assert served.process.wait(timeout=30) == 0
    assert served.process.stderr is not None
    assert b"Traceback" not in served.process.stderr.read()


def test_answers_are_encoded_exactly_as_the_sdk_transport_encodes_them() -> None:
    """``encode`` takes a shortcut to the model's serializer; the bytes must not change."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": "x", "method": "tools/call", "params": {"name": "t", "arguments": {"a": [1, None]}}},
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "ü\u2028\x00"}], "isError": False}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
    ]
    for raw in messages:
        item = SessionMessage(jsonrpc_message_adapter.validate_python(raw))
        assert encode(item) == item.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
