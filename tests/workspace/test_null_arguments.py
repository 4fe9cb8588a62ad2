"""``null`` means absent for every optional argument of every tool, and the input schemas say so (issue 26 #3, #4).

LangChain adapters (mcp-use's) fill every optional field with ``null``; strict-schema converters (openai-agents'
``convert_schemas_to_strict=True``) make every property required, so a strict-mode model must send ``null`` for
what it does not use. Required arguments still refuse ``null``, and options that exclude each other still do among
the non-null ones. The real openai-agents conversion is exercised in ``tests/judges/frameworks``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp import Client
from rootbound.workspace.server import WorkspaceConfig, build_workspace_server
from rootbound.workspace.tools import tool_specs
from rootbound.workspace.tools.arguments import InvalidArguments, checker, without_nulls

pytestmark = pytest.mark.anyio
SPECS = tool_specs(writable=True)


def _kinds(prop: dict[str, Any]) -> list[str]:
    """The JSON types a property takes, spelled ``"type": T``, ``"type": [T, "null"]`` or ``anyOf`` of those."""
    if "anyOf" in prop:
        return [kind for branch in prop["anyOf"] for kind in _kinds(branch)]
    return prop["type"] if isinstance(prop["type"], list) else [prop["type"]]


def _objects(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Every object schema in an input schema (the top level and the items of arrays of objects)."""
    found, stack = [], [schema]
    while stack:
        node = stack.pop()
        stack.extend(node.get("anyOf", []))
        if node.get("type") == "object":
            found.append(node)
            stack.extend(node["properties"].values())
        items = node.get("items")
        if isinstance(items, dict):
            stack.append(items)
    return found


NULL = {"type": "null"}


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_every_optional_property_is_nullable_and_no_required_one_is(spec: Any) -> None:
    """In the form every converter takes (issue 35): ``anyOf: [{T...}, null]`` with one type each, never a list of
    types, never ``null`` in an enum."""
    for node in _objects(spec.input_schema):
        for name, prop in node["properties"].items():
            if name in node["required"]:
                assert isinstance(prop["type"], str), (spec.name, name, prop)
                continue
            assert set(prop) <= {"anyOf", "description"}, (spec.name, name, prop)
            value, null = prop["anyOf"]
            assert null == NULL and isinstance(value["type"], str), (spec.name, name, prop)
            assert None not in value.get("enum", []), (spec.name, name)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_no_boolean_schemas_and_no_type_lists_anywhere(spec: Any) -> None:
    """google-genai's converter fails on ``additionalProperties: false``; three others on ``"type": [...]``."""
    stack: list[Any] = [spec.input_schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            assert "additionalProperties" not in node, spec.name
            assert not isinstance(node.get("type"), list), (spec.name, node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_unknown_arguments_are_still_refused_with_the_accepted_names(spec: Any) -> None:
    check = checker(spec.input_schema)
    schema = spec.input_schema
    minimal = {name: _sample(schema["properties"][name]) for name in schema["required"]}
    accepted = ", ".join(schema["properties"]) or "none"
    with pytest.raises(InvalidArguments) as refused:
        check({**minimal, "bogus_option": 1})
    assert (
        str(refused.value) == f"invalid arguments: unexpected argument in arguments; the accepted ones are: {accepted}"
    )
    assert "bogus" not in str(refused.value)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_null_accepted_for_every_option_refused_for_every_required_argument(spec: Any) -> None:
    check = checker(spec.input_schema)
    schema = spec.input_schema
    minimal = {name: _sample(schema["properties"][name]) for name in schema["required"]}
    check(minimal)
    check({**minimal, **{name: None for name in schema["properties"] if name not in schema["required"]}})
    for name in schema["required"]:
        with pytest.raises(InvalidArguments, match=f"argument '{name}' must be of type"):
            check({**minimal, name: None})


def _sample(prop: dict[str, Any]) -> Any:
    prop = prop["anyOf"][0] if "anyOf" in prop else prop
    kind = prop["type"]
    if kind == "array":
        item = prop["items"]
        if item.get("type") == "object":
            return [{name: _sample(item["properties"][name]) for name in item["required"]}]
        return ["x"]
    return {"string": "x", "integer": 1, "boolean": True}[kind]


def test_a_wrong_option_is_described_by_its_type_and_limit_not_by_the_anyof() -> None:
    check = checker(next(spec for spec in SPECS if spec.name == "read_file").input_schema)
    with pytest.raises(InvalidArguments, match=r"^invalid arguments: argument 'head' is less than 1$"):
        check({"path": "a", "head": 0})
    # the check alone is strict (the guard reads "3" as 3 before it: test_lenient_arguments); its message says
    # which spellings the argument takes
    typed = r"^invalid arguments: argument 'head' must be of type integer or null \(a number such as 2; the string"
    with pytest.raises(InvalidArguments, match=typed + r" \"2\" is taken too\)$"):
        check({"path": "a", "head": "3"})
    check_listing = checker(next(spec for spec in SPECS if spec.name == "list_directory").input_schema)
    with pytest.raises(
        InvalidArguments, match=r"^invalid arguments: argument 'sort_by' is not one of: name, size, modified$"
    ):
        check_listing({"path": "a", "sort_by": "owner"})
    check_listing({"path": "a", "sort_by": None})


def test_without_nulls_drops_them_at_every_level() -> None:
    arguments = {"path": "a", "head": None, "edits": [{"old_text": "x", "new_text": "y", "replace_all": None}]}
    assert without_nulls(arguments) == {"path": "a", "edits": [{"old_text": "x", "new_text": "y"}]}
    assert without_nulls({"paths": ["a", "b"], "x": False, "n": 0}) == {"paths": ["a", "b"], "x": False, "n": 0}


async def _call(tmp_path: Path, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    server, _ = build_workspace_server(WorkspaceConfig(dirs=(tmp_path,), writable=True))
    with anyio.fail_after(30):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool(tool, arguments)
    return bool(result.is_error), result.content[0].text  # type: ignore[union-attr]


async def test_read_file_as_a_strict_model_calls_it(tmp_path: Path) -> None:
    """Every property sent, null for the unused ones: the call a strict-mode model must make is valid."""
    (tmp_path / "f.txt").write_text("one\ntwo\nthree\n")
    unused = {"start_line": None, "end_line": None, "tail": None, "offset": None, "length": None}
    assert await _call(tmp_path, "read_file", {"path": str(tmp_path / "f.txt"), "head": 2, **unused}) == (
        False,
        "one\ntwo\n",
    )
    everything_null = dict.fromkeys(["head", *unused], None)
    error, text = await _call(tmp_path, "read_file", {"path": str(tmp_path / "f.txt"), **everything_null})
    assert (error, text) == (False, "one\ntwo\nthree\n")


async def test_exclusive_options_stay_exclusive_among_the_non_null(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("one\ntwo\n")
    arguments = {"path": str(tmp_path / "f.txt"), "head": 1, "tail": 1, "offset": None, "start_line": None}
    assert await _call(tmp_path, "read_file", arguments) == (
        True,
        "choose one of start_line/end_line, head, tail, or offset/length",
    )


async def test_null_required_argument_is_refused(tmp_path: Path) -> None:
    assert await _call(tmp_path, "read_file", {"path": None}) == (
        True,
        "invalid arguments: argument 'path' must be of type string",
    )


async def test_edit_with_null_options_inside_the_edits(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("alpha\n")
    edit = {"old_text": "alpha", "new_text": "beta", "replace_all": None}
    error, text = await _call(
        tmp_path, "edit_file", {"path": str(target), "edits": [edit], "dry_run": None, "expected_sha256": None}
    )
    assert not error, text
    assert target.read_text() == "beta\n"
