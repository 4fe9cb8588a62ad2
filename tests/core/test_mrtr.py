"""rootbound.mrtr: the sans-I/O roots input request, response reading, capability checks, -32021."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import rootbound
from rootbound import MISSING, InvalidRootsAnswer, InvalidRootsRequest, MissingCapability, RootSet
from rootbound.mrtr import (
    ROOTS_KEY,
    client_supports_roots,
    era_of,
    missing_capability,
    missing_capability_error,
    read_roots_response,
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
    assert missing_capability_error() == {
        "code": -32021,
        "message": "Client did not declare the required capability: roots",
        "data": {"requiredCapabilities": {"roots": {}}},
    }
    merged = missing_capability_error("roots", {"elicitation": {"form": {}}}, {"elicitation": {"url": {}}})
    assert merged["data"] == {"requiredCapabilities": {"roots": {}, "elicitation": {"form": {}, "url": {}}}}
    exc = missing_capability("sampling")
    assert isinstance(exc, MissingCapability)
    assert exc.code == -32021
    assert MissingCapability().data == {"requiredCapabilities": {"roots": {}}}


def test_era_of() -> None:
    assert era_of("2026-07-28") == "modern"
    for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", None, "garbage"):
        assert era_of(version) == "legacy"


def test_core_never_imports_the_sdk() -> None:
    """The sans-I/O core stays SDK-free: only rootbound.mcp may import mcp / mcp_types."""
    package = Path(rootbound.__file__).parent
    offenders = []
    for source in package.rglob("*.py"):
        if "mcp" in source.relative_to(package).parts[:-1] or source.parent.name in ("workspace", "audit"):
            continue
        if source.name in ("cli.py", "demo.py"):
            continue
        for node in ast.walk(ast.parse(source.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{source.name}:{n}" for n in names if n.split(".")[0] in ("mcp", "mcp_types")]
    assert offenders == []
