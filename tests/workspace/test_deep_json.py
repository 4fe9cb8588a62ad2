"""The too-deep answer (issue 16 #12) as pure code: which id is read, and what is never answered."""

from __future__ import annotations

import json

import pytest

from rootbound.workspace.transport.deep_json import answer_too_deep, readable_id, too_deep

DEEP = '{"a":' * 400 + "1" + "}" * 400


def _answer(text: str) -> dict[str, object] | None:
    raw = answer_too_deep(text)
    return None if raw is None else json.loads(raw)


def test_depth_is_judged_like_the_sdk_parser() -> None:
    assert too_deep(DEEP)
    assert not too_deep('{"a":' * 50 + "1" + "}" * 50)
    assert not too_deep("not json at all")  # other parse errors are the SDK's to answer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f'{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{DEEP}}}', 7),
        (f'{{"params":{DEEP},"method":"x","id":"req-1","jsonrpc":"2.0"}}', "req-1"),  # id after the deep part
        (f'{{"jsonrpc":"2.0","method":"x","params":{{"id":9,"d":{DEEP}}},"id":3}}', 3),  # nested id ignored
        (f'{{"jsonrpc":"2.0","method":"x","params":{{"s":"}}]\\"{{","d":{DEEP}}},"id":4}}', 4),  # brackets in strings
        (f'{{"jsonrpc":"2.0","method":"x","params":{DEEP},"id":true}}', None),  # not a JSON-RPC id
        (f'{{"jsonrpc":"2.0","method":"x","params":{DEEP},"id":"{"x" * 300}"}}', None),  # too long to echo
        (f'{{"jsonrpc":"2.0","params":{DEEP},"id":5}}', None),  # no method: not a request
    ],
)
def test_readable_id(text: str, expected: object) -> None:
    assert readable_id(text) == expected


def test_answers() -> None:
    request = f'{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{DEEP}}}'
    assert _answer(request) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32602, "message": "Invalid params: nested too deeply"},
    }
    parse_error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert _answer("[" * 500 + "]" * 500) == parse_error
    assert _answer(f'{{"jsonrpc":"2.0","id":7,"method":"x","params":{DEEP}}} trailing') == parse_error
    assert _answer(f'{{"jsonrpc":"2.0","id":{{"a":1}},"method":"x","params":{DEEP}}}') == parse_error
    assert _answer(f'{{"jsonrpc":"2.0","method":"notifications/x","params":{DEEP}}}') is None  # a notification
    assert _answer(f'{{"jsonrpc":"2.0","id":1,"result":{DEEP}}}') is None  # a response is never answered
