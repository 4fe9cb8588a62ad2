"""Snodo.Roots's documented helpers, on rootbound: the sans-I/O functions, then the same rules on a real
stdio subprocess driven by raw JSON-RPC lines (``snodo_server.py``).

Snodo: ``list/0`` (a bare roots input request), ``response/3`` (reads only the named ``ListRootsResult``,
ignoring unrelated response IDs), ``supported?/2``, ``valid_response?/1``, ``validate_request/1`` (``params``
may carry only ``_meta``, itself an object); an invalid response gets a generic invalid-params error without
the submitted data; extra JSON fields are preserved.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from rootbound import MISSING, InvalidRootsAnswer, InvalidRootsRequest, RootSet
from rootbound.core.mrtr import client_supports_roots, read_roots_response, roots_input_request, validate_roots_request
from tests.fixtures.hostile_wire import MODERN_META, REPO, StdioPeer
from tests.seeds.conftest import HERE, needs_2026, seed

SECRET = "s3cr3t-submitted-value"
ANSWER = {
    "roots": [{"uri": "file:///srv/a", "name": "A", "x-vendor": {"tags": ["kept", 1]}}],
    "_meta": {"trace": "t-1"},
    "x-top": True,
}


# -- the sans-I/O helpers ------------------------------------------------------------------------------------


def test_list_builds_a_bare_input_request() -> None:
    assert roots_input_request() == {"method": "roots/list"}  # Snodo list/0: no jsonrpc, no id


def test_response_reads_only_the_named_answer() -> None:
    responses = {"elicit": {"action": "accept"}, "roots": ANSWER, "other-roots": {"roots": [{"uri": "file:///x"}]}}
    roots = read_roots_response(responses)  # Snodo response/3: the one under its key, the rest ignored
    assert isinstance(roots, RootSet) and roots.uris == ("file:///srv/a",)
    assert read_roots_response({"elicit": {"action": "accept"}}) is MISSING


def test_supported_reads_the_declared_capability() -> None:
    assert client_supports_roots({"roots": {}})  # Snodo supported?/2
    assert client_supports_roots({"roots": {"listChanged": True}})
    assert not client_supports_roots({"sampling": {}})
    assert not client_supports_roots({"roots": True})


def test_valid_response_and_extra_fields_preserved() -> None:
    roots = RootSet.parse(ANSWER)  # Snodo valid_response?/1: parse, or InvalidRootsAnswer
    assert roots.to_wire() == {"roots": ANSWER["roots"]}  # per-root extra fields survive, verbatim
    assert roots.meta is not None and dict(roots.meta) == {"trace": "t-1"}
    bad_answers: list[Any] = [{"roots": "nope"}, {"roots": [{"uri": f"http://{SECRET}/"}]}, [], None]
    for bad in bad_answers:
        with pytest.raises(InvalidRootsAnswer) as info:
            RootSet.parse(bad)
        assert info.value.code == -32602 and SECRET not in str(info.value) and SECRET not in str(info.value.to_error())


def test_validate_request_params_only_meta_and_meta_an_object() -> None:
    assert validate_roots_request({"method": "roots/list"}) == {"method": "roots/list"}
    assert validate_roots_request({"method": "roots/list", "params": {"_meta": {"progressToken": 1}}})["params"] == {
        "_meta": {"progressToken": 1}
    }
    for bad in (
        {"method": "roots/list", "params": {"_meta": SECRET}},  # non-object _meta
        {"method": "roots/list", "params": [SECRET]},
        {"method": SECRET},
    ):
        with pytest.raises(InvalidRootsRequest) as info:
            validate_roots_request(bad)
        assert info.value.code == -32602 and SECRET not in str(info.value.to_error())


# -- the same rules on the wire ------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def snodo_server() -> AsyncIterator[StdioPeer]:
    command = [sys.executable, str(HERE / seed("snodo_server.py"))]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    with anyio.fail_after(60):
        async with await anyio.open_process(command, cwd=REPO, env=env, stderr=None) as process:
            try:
                yield StdioPeer(process)
            finally:
                process.kill()


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


@pytest.mark.anyio
async def test_handshake_unrelated_response_ids_are_ignored_and_extra_fields_kept() -> None:
    async def answer(request: dict[str, Any]) -> bytes:
        assert validate_roots_request(request)["method"] == "roots/list"
        decoy = {"roots": [{"uri": f"file:///{SECRET}"}]}
        for other_id in (request["id"] + 1000, "unrelated", None):  # responses to ids the server never sent
            await peer.send_line(line({"jsonrpc": "2.0", "id": other_id, "result": decoy}))
        return line({"jsonrpc": "2.0", "id": request["id"], "result": ANSWER})

    async with snodo_server() as peer:
        await peer.initialize()
        response = await peer.exchange("tools/call", {"name": "roots_wire", "arguments": {}}, answer)
    text = response["result"]["content"][0]["text"]
    assert json.loads(text) == {"roots": ANSWER["roots"]}  # the named answer only, its extra fields intact
    assert SECRET not in text


@pytest.mark.anyio
async def test_handshake_invalid_answer_is_a_generic_error_without_the_data() -> None:
    async def answer(request: dict[str, Any]) -> bytes:
        return line({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": [{"uri": f"file://{SECRET}/x"}]}})

    async with snodo_server() as peer:
        await peer.initialize()
        response = await peer.exchange("tools/call", {"name": "roots_wire", "arguments": {}}, answer)
    result = response["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("invalid roots answer")
    assert SECRET not in json.dumps(response)


@needs_2026
@pytest.mark.anyio
async def test_2026_input_request_answer_and_invalid_answer() -> None:
    async with snodo_server() as peer:
        first = await peer.exchange("tools/call", {"name": "roots_wire", "arguments": {}, "_meta": MODERN_META})
        assert first["result"]["inputRequests"] == {"roots": roots_input_request()}  # Snodo list/0, on the wire
        params = {"name": "roots_wire", "arguments": {}, "_meta": MODERN_META}
        unrelated = {"confirm": {"action": "accept"}, "roots": ANSWER}
        second = await peer.exchange("tools/call", {**params, "inputResponses": unrelated})
        assert json.loads(second["result"]["content"][0]["text"]) == {"roots": ANSWER["roots"]}
        bad = {"roots": {"roots": [{"uri": f"file:///{SECRET}/%2F"}]}}
        third = await peer.exchange("tools/call", {**params, "inputResponses": bad})
    assert third["error"]["code"] == -32602
    assert SECRET not in json.dumps(third)
