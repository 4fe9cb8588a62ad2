"""Index progress is said once a session (issue 50 item 6): ``[scan: building index 0%]`` ended every first
search of a session, and ``[index]`` every later one; most stdio sessions are short, so that was most searches.
The answer is the same whichever path gave it, so the line only explains a slow search: each kind of status is
said the first time it applies in a session, ``[index]`` never. What an answer leaves out (a cut) is still said
every time. Through a real server: stdio, and two sessions on one Streamable HTTP server."""

from __future__ import annotations

import re
from pathlib import Path

import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from tests.helpers.serve_process import http_serve, serve, text_of

pytestmark = pytest.mark.anyio

STATUS = re.compile(r"^\[(?:index|scan)\b.*\]$", re.MULTILINE)


def _tree(root: Path) -> None:
    for n in range(60):
        (root / f"m{n:02d}.py").write_text(f"def f{n}(): return 'needle {n}'\n" + "needle again\n" * 5)


async def _statuses(client: Client, rounds: int) -> list[list[str]]:
    """The status lines of each answer of ``rounds`` rounds of searches in one session."""
    said: list[list[str]] = []
    bodies: dict[str, str] = {}
    for _ in range(rounds):
        for tool, pattern in (("grep", "needle"), ("grep", "needle 1"), ("search_files", "m1*.py")):
            error, text = await text_of(client, tool, pattern=pattern)
            assert not error, text
            if pattern == "needle":
                assert "[truncated: the first 200 shown" in text  # a cut is said on every answer
            body = STATUS.sub("", text).rstrip("\n")
            assert bodies.setdefault(pattern, body) == body  # the same answer whichever path gave it
            said.append(STATUS.findall(text))
    return said


def _check(session: list[list[str]]) -> None:
    lines = [line for answer in session for line in answer]
    assert "[index]" not in lines, session
    assert len(lines) == len(set(lines)), session  # each kind once at most
    assert len(lines) <= 2, session  # building (first search), and perhaps busy once


async def test_index_status_is_said_at_most_once_a_stdio_session(tmp_path: Path) -> None:
    _tree(tmp_path)
    async with serve("stdio", [str(tmp_path)], mode="legacy", provider=None) as client:
        session = await _statuses(client, 4)
    assert session[0] and session[0][0].startswith("[scan"), session  # the first search scanned, and says why
    _check(session)


async def test_two_http_sessions_are_each_told_once_at_most(tmp_path: Path) -> None:
    _tree(tmp_path)
    with http_serve([str(tmp_path)]) as url:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as first,
        ):
            one = await _statuses(first, 3)
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as second:
                two = await _statuses(second, 3)
    _check(one)
    _check(two)
