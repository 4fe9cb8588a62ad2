"""Tool arguments against their input schema (issue 16 #9) as pure code: fixed messages, nothing echoed."""

from __future__ import annotations

from typing import Any

import pytest

from rootbound.workspace.tools.arguments import InvalidArguments, checker

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "maxLength": 8},
        "offset": {"type": "integer", "minimum": 0},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "names": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    },
    "required": ["path"],
    "additionalProperties": False,
}
SECRET = "SECRET-VALUE"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "invalid arguments: missing required argument 'path'"),
        (
            {"path": "x", SECRET: 1},
            "invalid arguments: unexpected argument in arguments; the accepted ones are: path, offset, mode, names",
        ),
        ({"path": 5}, "invalid arguments: argument 'path' must be of type string"),
        ({"path": SECRET}, "invalid arguments: argument 'path' is longer than 8 characters"),
        ({"path": ""}, "invalid arguments: argument 'path' is shorter than 1 characters"),
        ({"path": "x", "offset": -1}, "invalid arguments: argument 'offset' is less than 0"),
        ({"path": "x", "offset": 2**63}, "invalid arguments: an integer is out of range (signed 64-bit)"),
        ({"path": "x", "mode": SECRET}, "invalid arguments: argument 'mode' is not one of: a, b"),
        ({"path": "x", "names": ["a", "b", SECRET]}, "invalid arguments: argument 'names' has more than 2 items"),
        ({"path": "x", "names": [1]}, "invalid arguments: argument 'names.0' must be of type string"),
    ],
)
def test_violations_get_fixed_messages(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArguments) as info:
        checker(SCHEMA)(arguments)
    assert str(info.value) == message
    assert SECRET not in str(info.value)


def test_valid_arguments_pass() -> None:
    checker(SCHEMA)({"path": "x", "offset": 2**63 - 1, "mode": "a", "names": ["n"]})


def test_a_body_past_the_declared_limit_is_refused_before_use() -> None:
    check = checker({"type": "object", "properties": {"content": {"type": "string", "maxLength": 16 * 1024 * 1024}}})
    check({"content": "x" * (16 * 1024 * 1024)})
    with pytest.raises(InvalidArguments, match="longer than 16777216 characters"):
        check({"content": "x" * (20 * 1024 * 1024)})
