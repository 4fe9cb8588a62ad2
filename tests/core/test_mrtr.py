"""rootbound.core.mrtr: eras, declared capabilities, the roots input request, response reading, -32021."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import rootbound
from rootbound import MISSING, InvalidRootsAnswer, InvalidRootsRequest, MissingCapability, RootLimits, RootSet
from rootbound.core.mrtr import (
    CAPABILITIES_META,
    ROOTS_KEY,
    advertised_roots_capability,
    client_supports_roots,
    era_of,
    missing_capability,
    read_roots_response,
    request_capabilities,
    roots_answer_over_limit,
    roots_input_request,
    validate_roots_request,
)


def test_roots_input_request_is_bare() -> None:
    assert roots_input_request() == {"method": "roots/list"}
    assert roots_input_request({"progressToken": 1}) == {
        "method": "roots/list",
        "params": {"_meta": {"progressToken": 1}},
    }
    assert ROOTS_KEY == "roots"


@pytest.mark.parametrize(
    "request_",
    [
        {"method": "roots/list"},
        {"method": "roots/list", "params": {}},
        {"method": "roots/list", "params": {"_meta": {"progressToken": "t"}}},
        {"jsonrpc": "2.0", "id": 7, "method": "roots/list"},
    ],
)
def test_valid_roots_requests(request_: dict[str, Any]) -> None:
    assert validate_roots_request(request_)["method"] == "roots/list"


@pytest.mark.parametrize(
    "request_",
    [
        None,
        [],
        "roots/list",
        {},
        {"method": "sampling/createMessage"},
        {"method": "roots/list", "params": []},
        {"method": "roots/list", "params": {"_meta": "x"}},
    ],
)
def test_invalid_roots_requests(request_: Any) -> None:
    with pytest.raises(InvalidRootsRequest) as info:
        validate_roots_request(request_)
    assert info.value.code == -32602


@pytest.mark.parametrize(
    ("caps", "expected"),
    [
        ({"roots": {}}, True),
        ({"roots": {"listChanged": True}}, True),
        ({"roots": {"listChanged": False}, "sampling": {}}, True),
        ({}, False),
        ({"roots": None}, False),
        ({"roots": True}, False),
        ({"roots": []}, False),
        ({"roots": "yes"}, False),
        ({"sampling": {}}, False),
        (None, False),
        ("roots", False),
    ],
)
def test_client_supports_roots(caps: Any, expected: bool) -> None:
    assert client_supports_roots(caps) is expected


def test_read_roots_response() -> None:
    answer = {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}
    got = read_roots_response({"roots": answer, "elicit": {"action": "accept"}})
    assert isinstance(got, RootSet)
    assert got.uris == ("file:///test/root",)
    assert read_roots_response(None) is MISSING
    assert read_roots_response({}) is MISSING
    assert read_roots_response({"other": answer}) is MISSING
    assert isinstance(read_roots_response({"mine": answer}, "mine"), RootSet)
    assert repr(MISSING) == "MISSING"


@pytest.mark.parametrize(
    "responses",
    [
        [],
        "x",
        {"roots": {"action": "accept", "content": {}}},  # an elicitation answer under the roots key
        {"roots": {"role": "assistant", "content": {"type": "text", "text": "hi"}}},
        {"roots": None},
        {"roots": {"roots": [{"uri": "http://evil/"}]}},
    ],
)
def test_read_roots_response_wrong_kind_is_invalid(responses: Any) -> None:
    with pytest.raises(InvalidRootsAnswer):
        read_roots_response(responses)


def test_missing_capability_error_shape_and_merge() -> None:
    assert missing_capability().to_error() == {
        "code": -32021,
        "message": "Client did not declare the required capability: roots",
        "data": {"requiredCapabilities": {"roots": {}}},
    }
    merged = missing_capability("roots", {"elicitation": {"form": {}}}, {"elicitation": {"url": {}}}).to_error()
    assert merged["data"] == {"requiredCapabilities": {"roots": {}, "elicitation": {"form": {}, "url": {}}}}
    exc = missing_capability("sampling")
    assert isinstance(exc, MissingCapability)
    assert exc.code == -32021
    assert MissingCapability().data == {"requiredCapabilities": {"roots": {}}}


def test_era_of() -> None:
    assert era_of("2026-07-28") == "2026-07-28"
    for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", None, "garbage"):
        assert era_of(version) == "handshake"


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"_meta": {CAPABILITIES_META: {"roots": {}}}}, {"roots": {}}),
        ({"_meta": {CAPABILITIES_META: "roots"}}, "roots"),  # as sent: client_supports_roots judges it
        ({"_meta": {"other": {}}}, None),
        ({"_meta": "not an object"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_request_capabilities_read_raw_from_meta(params: Any, expected: Any) -> None:
    assert request_capabilities(params) == expected


def test_advertised_roots_capability_per_era() -> None:
    assert advertised_roots_capability("handshake", has_source=True, list_changed=True) == {"listChanged": True}
    assert advertised_roots_capability("handshake", has_source=True, list_changed=False) == {"listChanged": False}
    assert advertised_roots_capability("2026-07-28", has_source=True, list_changed=True) == {}
    for era in ("handshake", "2026-07-28"):
        assert advertised_roots_capability(era, has_source=False, list_changed=True) is None


def test_roots_answer_over_limit_counts_without_parsing() -> None:
    limits = RootLimits(max_roots=2)
    flood = {"roots": {"roots": [{"uri": 1}] * 3}}  # invalid items: never looked at, only counted
    assert roots_answer_over_limit(flood, limits=limits)
    assert not roots_answer_over_limit({"roots": {"roots": [{}] * 2}}, limits=limits)
    assert not roots_answer_over_limit(flood, "other", limits=limits)
    junk_values: list[Any] = [None, [], "x", {"roots": None}, {"roots": {"roots": "many"}}]
    for junk in junk_values:
        assert not roots_answer_over_limit(junk, limits=limits)


def test_protocol_core_does_no_io() -> None:
    """The protocol state (rules, requestState codec, cache state machine) imports no SDK, no anyio, no clock."""
    core = Path(rootbound.__file__).parent / "core"
    for name in ("mrtr.py", "roots.py", "uri.py", "errors.py", "request_state.py", "roots_cache.py"):
        tree = ast.parse((core / name).read_text())
        imports = [node for node in ast.walk(tree) if isinstance(node, ast.Import)]
        imported = {alias.name.split(".")[0] for node in imports for alias in node.names}
        imported |= {
            node.module.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
        }
        assert imported.isdisjoint({"mcp", "mcp_types", "anyio", "asyncio", "time", "socket", "os", "threading"}), name
