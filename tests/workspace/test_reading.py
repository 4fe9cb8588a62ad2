"""``rootbound serve``, reading side, end to end: every row of issue 12's table over a real stdio subprocess and over
Streamable HTTP on 127.0.0.1, in both protocol eras, with the real SDK client.

Rows: line reads (range, head, tail, no split UTF-8, default cap with a hint), read_multiple_files, media and
binary files, directory_tree (depth, entry cap, marker), list_directory with sizes, .gitignore/.git/exclude,
annotations, outputSchema + structuredContent, a linear-time regex, progress notifications and cancellation.
"""

from __future__ import annotations

import base64
import re
import struct
import zlib
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from rootbound.mcp import RootsProvider
from tests.helpers.serve_process import http_serve, serve, text_of

pytestmark = pytest.mark.anyio

MODES = ("legacy", "2026-07-28")
NEEDLE = "NEEDLE"
FORGED = "forged\nNEEDLE.txt:1:NEEDLE"


def tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))


def tiny_wav() -> bytes:
    samples = b"\x00\x00" * 8
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body


def build_project(base: Path) -> Path:
    proj = base / "proj"
    for directory in ("src", "node_modules/dep", "build", "sub", ".git", "deep/a/b/c", "media"):
        (proj / directory).mkdir(parents=True)
    (proj / ".gitignore").write_text("node_modules/\nbuild/\n*.log\n!keep.log\n")
    (proj / "sub" / ".gitignore").write_text("!*.log\nlocal.txt\n")
    (proj / "src" / "main.py").write_text(
        "".join(f"line {n} NEEDLE\n" if n % 10 == 0 else f"line {n}\n" for n in range(1, 31))
    )
    (proj / "src" / "utf8.txt").write_text("héllo wörld €\n" * 3, encoding="utf-8")
    (proj / "node_modules" / "dep" / "index.js").write_text("NEEDLE vendored\n")
    (proj / "build" / "out.txt").write_text("NEEDLE built\n")
    (proj / "debug.log").write_text("NEEDLE ignored log\n")
    (proj / "keep.log").write_text("NEEDLE kept log\n")
    (proj / "sub" / "s.log").write_text("NEEDLE re-included log\n")
    (proj / "sub" / "local.txt").write_text("NEEDLE ignored by the nested file\n")
    (proj / ".git" / "config").write_text("NEEDLE in .git\n")
    (proj / "deep" / "a" / "b" / "c" / "leaf.txt").write_text("leaf\n")
    (proj / "long.txt").write_text("".join(f"{n:06d} {'x' * 72}\n" for n in range(1, 2001)))  # 80 bytes a line
    (proj / "redos.txt").write_text("a" * 100_000 + "!\n")
    (proj / "media" / "pixel.png").write_bytes(tiny_png())
    (proj / "media" / "tone.wav").write_bytes(tiny_wav())
    (proj / "media" / "not-really.png").write_text("just text\n")
    (proj / "media" / "tool.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 100)
    (proj / FORGED).write_text("NEEDLE\n")
    (base / "secret.txt").write_text("SECRET NEEDLE\n")
    (proj / "leak.txt").symlink_to(base / "secret.txt")
    return proj


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_project(tmp_path_factory.mktemp("reading").resolve())


async def call(client: Client, tool: str, **arguments: Any) -> types.CallToolResult:
    return await client.call_tool(tool, arguments)


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


async def check_reads(client: Client, proj: Path) -> None:
    main = "src/main.py"
    assert await text_of(client, "read_file", path=main, start_line=9, end_line=11) == (
        False,
        "line 9\nline 10 NEEDLE\nline 11\n",
    )
    assert await text_of(client, "read_file", path=main, head=2) == (False, "line 1\nline 2\n")
    assert await text_of(client, "read_file", path=main, tail=2) == (False, "line 29\nline 30 NEEDLE\n")
    error, text = await text_of(client, "read_file", path=main, start_line=99)
    size = (proj / main).stat().st_size
    assert (error, text) == (False, f"[the file has fewer than 99 lines ({size} bytes)]")
    # A byte window that starts and ends inside multi-byte characters is moved to their boundaries.
    error, text = await text_of(client, "read_file", path="src/utf8.txt", offset=2, length=10)
    assert not error
    assert "\ufffd" not in text
    assert text.startswith("é")  # offset 2 is the second byte of é: the window starts at its first
    # The default read is bounded (64 KiB less room for its hint: the answer's size, issue 50) and says where to
    # read on, by line.
    error, text = await text_of(client, "read_file", path="long.txt")
    assert not error
    body, _, hint = text.rpartition("\n")
    assert hint == "[truncated: lines 1-816, bytes 0-65280 of 160000; read on with start_line=817]"
    assert body.splitlines()[-1].startswith("000816 ")
    error, text = await text_of(client, "read_file", path="long.txt", start_line=817, end_line=817)
    assert (error, text) == (False, f"000817 {'x' * 72}\n")
    error, text = await text_of(client, "read_file", path=main, head=1, tail=1)
    assert (error, text) == (True, "choose one of start_line/end_line, head, tail, or offset/length")
    # Several files at once: in order, errors inline, never echoing the input.
    error, text = await text_of(
        client, "read_multiple_files", paths=[main, "../secret.txt", "media/pixel.png", "src/utf8.txt"]
    )
    assert not error
    sections = text.split("\n\n==> ")
    assert sections[0].startswith(f"==> {proj / 'src' / 'main.py'} <==\nline 1\n")
    assert sections[1] == (
        "paths[1] <==\nerror: path is outside the allowed roots: use a path within a root; list_roots shows them "
        "(outside roots)"
    )
    assert sections[2].startswith(f"{proj / 'media' / 'pixel.png'} <==\n[binary file: ")
    assert sections[3].startswith(f"{proj / 'src' / 'utf8.txt'} <==\nhéllo")
    assert "secret" not in text.lower()


async def check_media(client: Client, proj: Path) -> None:
    result = await call(client, "read_media_file", path="media/pixel.png")
    assert not result.is_error
    image = result.content[1]
    assert isinstance(image, types.ImageContent)
    assert (image.mime_type, base64.b64decode(image.data)) == ("image/png", tiny_png())
    result = await call(client, "read_media_file", path="media/tone.wav")
    audio = result.content[1]
    assert isinstance(audio, types.AudioContent)
    assert (audio.mime_type, base64.b64decode(audio.data)) == ("audio/wav", tiny_wav())
    # The type comes from the content: a .png holding text is not sent as an image.
    error, text = await text_of(client, "read_media_file", path="media/not-really.png")
    assert (error, text) == (True, "not an image or audio file: text, 10 bytes; read it with read_file")
    error, text = await text_of(client, "read_file", path="media/tool.bin")
    assert (error, text) == (False, "[binary file: 108 bytes, ELF executable or library (application/x-executable)]")
    error, text = await text_of(client, "read_file", path="media/pixel.png")
    assert text == "[binary file: 57 bytes, PNG image (image/png); use read_media_file to see it]"


async def check_listing(client: Client, proj: Path) -> None:
    result = await call(client, "list_directory", path="media", details=True, sort_by="size", reverse=True)
    data = structured(result)
    assert [(e["name"], e["type"], e["size"]) for e in data["entries"]] == [
        ("tool.bin", "file", 108),
        ("tone.wav", "file", 60),
        ("pixel.png", "file", 57),
        ("not-really.png", "file", 10),
    ]
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert text.text.splitlines()[0].startswith("file             108  ")
    assert text.text.splitlines()[0].endswith("  tool.bin")
    result = await call(client, "directory_tree", path="deep", max_depth=2)
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text.splitlines() == [f"{proj / 'deep'}/", "a/", "  b/…"]
    assert structured(result)["depth_limited"] is True
    result = await call(client, "directory_tree", path=".", max_entries=3)
    assert isinstance(result.content[0], types.TextContent)
    lines = result.content[0].text.splitlines()
    assert lines[1:] == [".gitignore", "deep/", "  a/", "[truncated: the first 3 shown; narrow the request]"]
    assert structured(result)["truncated"] is True
    full = structured(await call(client, "directory_tree", path=".", max_depth=10))
    paths = {entry["path"] for entry in full["entries"]}
    assert "keep.log" in paths and "sub/s.log" in paths and FORGED in paths
    assert not {"node_modules", "build", "debug.log", "sub/local.txt", ".git"} & paths


async def check_search(client: Client, proj: Path) -> None:
    # Ignore-aware and sorted by default; include_ignored brings the ignored files back, never .git.
    result = await call(client, "grep", pattern=NEEDLE, files_only=True)
    files = structured(result)["files"]
    relative = [str(Path(f).relative_to(proj)) for f in files]
    assert relative == [FORGED, "keep.log", "src/main.py", "sub/s.log"]
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    assert block.text.splitlines()[0] == f"{proj}/forged\\x0aNEEDLE.txt:1:NEEDLE"  # the newline cannot forge a line
    everything = structured(await call(client, "grep", pattern=NEEDLE, files_only=True, include_ignored=True))
    assert len(everything["files"]) == 8
    assert not any("/.git/" in f for f in everything["files"])
    assert "secret" not in str(everything)
    result = await call(client, "grep", pattern="needle", ignore_case=True, path="src", context=1, max_per_file=2)
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    main = proj / "src" / "main.py"
    lines = block.text.splitlines()
    if re.fullmatch(r"\[(index|scan: .+)\]", lines[-1]):  # which path answered: said once a session (issue 50)
        lines.pop()
    assert lines == [
        f"{main}-9-line 9",
        f"{main}:10:line 10 NEEDLE",
        f"{main}-11-line 11",
        "--",
        f"{main}-19-line 19",
        f"{main}:20:line 20 NEEDLE",
        f"{main}-21-line 21",
        "[1 files had more than 2 matches: raise max_per_file to see more]",
    ]
    data = structured(result)
    assert [(m["line"], m["context"]) for m in data["matches"]] == [
        (9, True), (10, False), (11, True), (19, True), (20, False), (21, True)
    ]  # fmt: skip
    # A search that starts below a .gitignore still obeys it (git reads the files above the start too).
    below = structured(await call(client, "grep", pattern=NEEDLE, path="node_modules", files_only=True))
    assert below["files"] == []
    below = structured(await call(client, "grep", pattern=NEEDLE, path="node_modules", include_ignored=True))
    assert below["files"] == [str(proj / "node_modules" / "dep" / "index.js")]
    result = await call(client, "grep", pattern=NEEDLE, include=["*.log"], exclude=["sub/"])
    assert structured(result)["files"] == [str(proj / "keep.log")]
    result = await call(client, "search_files", pattern="*.log")
    assert structured(result) == {"matches": [str(proj / "keep.log"), str(proj / "sub" / "s.log")], "truncated": False}
    result = await call(client, "search_files", pattern="src/**/*.py")
    assert structured(result)["matches"] == [str(main)]
    # A catastrophic pattern for a backtracking engine answers (RE2 is linear), and so does the next call.
    with anyio.fail_after(20):
        error, text = await text_of(client, "grep", pattern="(a+)+$", regex=True, path="redos.txt")
    assert (error, text) == (False, "(no matches in 1 file searched)")
    error, text = await text_of(client, "grep", pattern="(a)\\1", regex=True)
    assert error
    assert text.startswith("unsupported or invalid regular expression: backreferences")


async def check_contracts(client: Client, proj: Path) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= {"read_multiple_files", "read_media_file", "directory_tree"}
    for tool in tools.values():
        hints = tool.annotations
        assert hints is not None, tool.name
        assert (hints.read_only_hint, hints.destructive_hint, hints.open_world_hint) == (True, False, False)
        assert hints.idempotent_hint is True
        assert tool.description and len(tool.description) > 60
    for name in ("list_roots", "list_directory", "stat", "search_files", "grep", "directory_tree", "find_projects"):
        schema = tools[name].output_schema
        assert schema is not None and schema["type"] == "object", name
    roots = structured(await call(client, "list_roots"))
    assert [(r["uri"], r["kind"], r["narrowed"]) for r in roots["roots"]] == [(proj.as_uri(), "dir", False)]
    assert (roots["refused"], roots["source"]) == ([], "client")
    result = await call(client, "stat", path="media/pixel.png")
    assert structured(result)["mime"] == "image/png"
    assert structured(result)["size"] == 57


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_reading_side(project: Path, transport: str, mode: str) -> None:
    provider = RootsProvider([project])
    with anyio.fail_after(120):
        async with serve(transport, [str(project.parent)], mode=mode, provider=provider) as client:
            await check_contracts(client, project)
            await check_reads(client, project)
            await check_media(client, project)
            await check_listing(client, project)
            await check_search(client, project)
            attempts: list[tuple[str, dict[str, Any]]] = [
                ("read_file", {"path": "leak.txt"}),
                ("read_media_file", {"path": "../secret.txt"}),
                ("read_multiple_files", {"paths": ["leak.txt"]}),
                ("directory_tree", {"path": ".."}),
                ("grep", {"pattern": "SECRET", "path": "leak.txt"}),
            ]
            for tool, args in attempts:
                error, text = await text_of(client, tool, **args)
                assert "SECRET" not in text, tool
                assert error or "outside roots" in text or "symlink escapes root" in text, (tool, text)


@pytest.fixture(scope="module")
def haystack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("haystack").resolve()
    for i in range(60):
        sub = work / f"d{i:02}"
        sub.mkdir(parents=True)
        for j in range(60):
            (sub / f"f{j:02}.txt").write_text("hay\n")
    return work


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_progress_and_cancellation(haystack: Path, transport: str, mode: str, tmp_path: Path) -> None:
    """A grep that walks the tree reports every entry it walked. Each server gets a cache of its own: an index an
    earlier case saved would answer the first grep from its recorded walk (its progress counts files only)."""
    work = haystack
    provider = RootsProvider([work])
    updates: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append(progress)

    args = [str(work)]
    with anyio.fail_after(120):
        own_cache = {"ROOTBOUND_CACHE_HOME": str(tmp_path / "cache")}
        async with serve(transport, args, mode=mode, provider=provider, env=own_cache) as client:
            result = await client.call_tool("grep", {"pattern": "needle"}, progress_callback=on_progress)
            assert not result.is_error
            assert structured(result)["files_searched"] == 3600
            # The client runs progress callbacks as tasks of their own: the last may land just after the result.
            with anyio.fail_after(10):
                while not updates or updates[-1] != 3660:  # every directory and file walked
                    await anyio.sleep(0.01)
            assert updates == sorted(updates)
            # A cancelled call answers nothing, and the session goes on.
            with anyio.move_on_after(0.05):
                await client.call_tool("grep", {"pattern": "needle"}, progress_callback=on_progress)
            error, text = await text_of(client, "list_roots")
            assert (error, text.splitlines()[0]) == (False, f"{work.as_uri()} dir")


@pytest.fixture(scope="module")
def long_lines(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Files of long 'aaaa…!' lines: the input on which (a+)+$ backtracks forever in a backtracking engine."""
    work = tmp_path_factory.mktemp("long-lines").resolve()
    line = b"a" * 20_000 + b"!\n"
    for i in range(300):
        (work / f"f{i:03}.txt").write_bytes(line * 5)
    return work


async def in_two_sessions(
    args: list[str],
    root: Path,
    first: Callable[[Client], Coroutine[Any, Any, None]],
    second: Callable[[Client], Coroutine[Any, Any, None]],
) -> None:
    """``rootbound serve --http`` with ``args``; ``first`` on a handshake-era session and ``second`` on a
    2026-07-28 one, concurrently, both declaring ``root``."""
    provider = RootsProvider([root])
    with anyio.fail_after(120), http_serve(args) as url:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy", **provider.client_kwargs()) as one,
            Client(streamable_http_client(url, http_client=http), mode="2026-07-28", **provider.client_kwargs()) as two,
            anyio.create_task_group() as tasks,
        ):
            tasks.start_soon(first, one)
            tasks.start_soon(second, two)


async def test_a_running_grep_does_not_delay_another_session(long_lines: Path) -> None:
    """Two sessions on one HTTP server: while one runs a grep that cannot finish before the per-call deadline (a
    pattern that drives RE2 off its DFA onto its slow engine over 30 MB), the other's calls complete first, and the
    grep ends by the deadline with a tool error (it runs on a worker thread, never on the event loop)."""
    finished: list[str] = []

    async def slow(client: Client) -> None:
        result = await call(client, "grep", pattern="((a{1,10}){1,10}){1,10}x", regex=True)
        assert result.is_error
        text = str(result.content[0].text)  # type: ignore[union-attr]
        assert "per-call deadline" in text or "too slow" in text, text  # stopped, or refused as it would not finish
        finished.append("grep")

    async def quick(client: Client) -> None:
        await anyio.sleep(0.3)  # the grep is under way
        for _ in range(5):
            error, _ = await text_of(client, "list_roots")
            assert not error
        finished.append("list_roots")

    await in_two_sessions([str(long_lines), "--tool-timeout", "4"], long_lines, slow, quick)
    assert finished == ["list_roots", "grep"]


@pytest.mark.parametrize("max_walks", [1, 2])
async def test_walks_beyond_max_walks_wait_their_turn_and_trivial_calls_do_not(
    long_lines: Path, max_walks: int
) -> None:
    """``--max-walks``: while one client's slow grep holds every walk slot that client may take, another client's
    ``list_roots`` is answered at once, and its ``search_files`` (a walk) does not wait for the grep either: one
    slot more than ``--max-walks`` is kept for the other clients (issue 48, ``docs/reliability.md`` section 12;
    the per-client cap itself is ``tests/workspace/test_call_slots.py``'s). Before issue 48 the cap was for all
    sessions together, and with one slot the second session's walk waited behind the first's."""
    finished: list[str] = []
    grep_started = anyio.Event()

    async def slow(client: Client) -> None:
        grep_started.set()
        result = await call(client, "grep", pattern="((a{1,10}){1,10}){1,10}x", regex=True)
        assert result.is_error  # the deadline or "too slow": either way the walk ran for seconds
        finished.append("grep")

    async def other(client: Client) -> None:
        await grep_started.wait()
        await anyio.sleep(0.5)  # the grep holds its slot by now
        error, _ = await text_of(client, "list_roots")
        assert not error
        finished.append("list_roots")
        result = await call(client, "search_files", pattern="f00*.txt")
        assert not result.is_error
        assert len(structured(result)["matches"]) == 10
        finished.append("search_files")

    args = [str(long_lines), "--tool-timeout", "4", "--max-walks", str(max_walks)]
    await in_two_sessions(args, long_lines, slow, other)
    assert finished == ["list_roots", "search_files", "grep"]


async def test_the_per_call_deadline_stops_a_walk(haystack: Path) -> None:
    provider = RootsProvider([haystack])
    with anyio.fail_after(60):
        async with serve("stdio", [str(haystack), "--tool-timeout", "0.001"], mode="legacy", provider=provider) as c:
            error, text = await text_of(c, "grep", pattern="hay")
            assert (error, text) == (True, "stopped after 0.001 s (the per-call deadline); narrow the path or pattern")
            error, text = await text_of(c, "read_file", path="d00/f00.txt")
            assert (error, text) == (False, "hay\n")  # a call that finishes in time is not affected
