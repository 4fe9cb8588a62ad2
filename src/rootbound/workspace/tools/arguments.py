"""Tool arguments checked against the tool's declared input schema before any of them is used.

The schemas already say what a tool accepts (``maxLength`` on ``write_file``'s content, ``minimum`` on offsets);
nothing enforced them, so a 20 MiB body passed a 16 MiB limit and
``offset=2**63`` reached ``os.pread`` ("Python int too large to convert to C long"). Here every call is checked
with ``jsonschema`` (already a dependency of the ``mcp`` SDK), and integers are held to the signed 64-bit range
every OS call takes. The published schemas leave objects open and spell "or null" as ``anyOf`` (the form every
common converter takes, :func:`rootbound.workspace.tools.specs._object`); the check closes every object, so an unknown
argument is refused here with the names the object takes (:func:`checking_form`).

Messages never echo the client's values or unknown argument names: only names the schema declares, and the
limit the schema states.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, cast

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

__all__ = ["MAX_INT", "InvalidArguments", "checker", "checking_form", "lenient", "without_nulls"]

MAX_INT: Final = 2**63 - 1


class InvalidArguments(ValueError):
    """The arguments do not match the tool's input schema; the message is fixed text safe to show."""


def checker(schema: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], None]:
    """A check for ``schema`` (compiled once): raises :class:`InvalidArguments` for the first violation."""
    schema = checking_form(schema)
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    declared = _declared_names(schema)

    def check(arguments: Mapping[str, Any]) -> None:
        error = next(validator.iter_errors(arguments), None)
        if error is not None:
            raise InvalidArguments(_describe(_within_nullable(error), declared))
        _check_ints(arguments)

    return check


_NOT: Final = object()
_INTEGER: Final = re.compile(r"[+-]?[0-9]{1,19}")
_NUMBER: Final = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SPELLINGS: Final = {
    "integer": ' (a number such as 2; the string "2" is taken too)',
    "number": ' (a number such as 2.5; the string "2.5" is taken too)',
    "boolean": ' (true or false; the strings "true" and "false" are taken too)',
    "array": ' (a list such as ["*.py"]; that list written as a JSON string is taken too)',
}


def lenient(schema: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    """The arguments as clients really send them, read the way the schema means them: a top-level integer, number
    or boolean argument given as its string spelling (``"2"``, ``"true"``: what models following a signature that
    shows every optional parameter as a string produce, and what older CLIs send for every argument), and a list
    given as a JSON string, are taken as that value. Only where the argument's type does not take a string; the
    published schema stays strict, and anything else is left for :func:`checker` to refuse. Returns the same
    mapping when nothing needed reading."""
    properties = checking_form(schema).get("properties", {})
    kinds = {name: kind for name, value in properties.items() if (kind := _kind(value))}

    def read(arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        changed: dict[str, Any] | None = None
        for name, kind in kinds.items():
            value = arguments.get(name)
            if isinstance(value, str) and (taken := _from_string(value.strip(), kind)) is not _NOT:
                changed = dict(arguments) if changed is None else changed
                changed[name] = taken
        return arguments if changed is None else changed

    return read


def _kind(node: Any) -> str | None:
    types = node.get("type") if isinstance(node, Mapping) else None
    named = [types] if isinstance(types, str) else types if isinstance(types, list) else []
    if "string" in named:
        return None
    return next((kind for kind in ("integer", "number", "boolean", "array") if kind in named), None)


def _from_string(text: str, kind: str) -> Any:
    if kind == "integer" and _INTEGER.fullmatch(text):
        return int(text)
    if kind == "number" and _NUMBER.fullmatch(text):
        return int(text) if _INTEGER.fullmatch(text) else float(text)
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if kind == "array" and text.startswith("["):
        try:
            value = json.loads(text)
        except ValueError:
            return _NOT
        return value if isinstance(value, list) else _NOT
    return _NOT


def checking_form(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The published input schema as the server checks it: every object with properties closed
    (``additionalProperties: false`` unless it says otherwise), and every ``anyOf: [X, {"type": "null"}]`` read as
    ``X`` whose type also takes ``null`` (and whose enum lists it): the same values, and a violation is then
    described by its type or limit rather than as "not valid under any of the given schemas"."""
    node = dict(schema)
    options = node.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        (other,) = [option for option in options if option != {"type": "null"}]
        if isinstance(other, Mapping) and isinstance(other.get("type"), str):
            del node["anyOf"]
            node = {**other, **node, "type": [other["type"], "null"]}
            if isinstance(other.get("enum"), list):
                node["enum"] = [*other["enum"], None]
    properties = node.get("properties")
    if isinstance(properties, Mapping):
        node["properties"] = {
            name: checking_form(value) if isinstance(value, Mapping) else value for name, value in properties.items()
        }
        node.setdefault("additionalProperties", False)
    items = node.get("items")
    if isinstance(items, Mapping):
        node["items"] = checking_form(items)
    return node


def _declared_names(schema: Mapping[str, Any]) -> Mapping[str, str]:
    """Every argument name the schema declares, with where it goes (``"each item of 'edits'"``, or ``""`` for
    the top level)."""
    names: dict[str, str] = {}
    stack: list[tuple[Mapping[str, Any], str]] = [(schema, "")]
    while stack:
        node, home = stack.pop()
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            for name, value in properties.items():
                names.setdefault(name, home)
                if isinstance(value, Mapping):
                    for branch in value.get("anyOf", ()):  # an optional argument: {anyOf: [SCHEMA, null]}
                        if isinstance(branch, Mapping) and isinstance(branch.get("items"), Mapping):
                            value = branch
                    items = value.get("items")
                    if isinstance(items, Mapping):
                        stack.append((items, f"each item of '{name}'"))
                    stack.append((value, f"'{name}'"))
    return names


def _within_nullable(error: ValidationError) -> ValidationError:
    """For an optional argument spelled ``anyOf: [SCHEMA, {"type": "null"}]``: the failure within ``SCHEMA`` (what
    is wrong with the value sent), not the bare "matches none of the alternatives"."""
    while error.validator == "anyOf" and error.context:
        branches = cast(Any, error.validator_value)
        real = [e for e in error.context if branches[e.relative_schema_path[0]] != {"type": "null"}]
        if not real:
            break
        error = real[0]
    return error


def _where(path: Any, declared: Mapping[str, str]) -> str:
    parts = [str(p) if isinstance(p, int) or p in declared else "?" for p in path]
    return f"argument '{'.'.join(parts)}'" if parts else "arguments"


def _describe(error: ValidationError, declared: Mapping[str, str]) -> str:
    where = _where(error.absolute_path, declared)
    keyword, limit = error.validator, cast(Any, error.validator_value)
    if keyword == "required":
        missing = [name for name in limit if isinstance(error.instance, Mapping) and name not in error.instance]
        return f"invalid arguments: missing required argument '{missing[0]}'" if missing else "invalid arguments"
    if keyword == "additionalProperties":
        return f"invalid arguments: {_unexpected(error, declared, where)}"
    if keyword == "type":
        named = [limit] if isinstance(limit, str) else [t for t in limit if t != "null"]
        expected = limit if isinstance(limit, str) else " or ".join(limit)
        spelling = _SPELLINGS.get(named[0], "") if len(named) == 1 else ""
        return f"invalid arguments: {where} must be of type {expected}{spelling}"
    phrases = {
        "maxLength": f"is longer than {limit} characters",
        "minLength": f"is shorter than {limit} characters",
        "maximum": f"is greater than {limit}",
        "minimum": f"is less than {limit}",
        "maxItems": f"has more than {limit} items",
        "minItems": f"has fewer than {limit} items",
        "enum": f"is not one of: {_choices(limit)}",
        "pattern": f"does not match the pattern {limit}",
    }
    return f"invalid arguments: {where} {phrases.get(str(keyword), 'is not valid')}"


def _choices(limit: Any) -> str:
    """An enum's values as a model reads them (``null``, which every option takes, is left out)."""
    if not isinstance(limit, list):
        return "the allowed values"
    return ", ".join(str(value) for value in limit if value is not None)


def _unexpected(error: ValidationError, declared: Mapping[str, str], where: str) -> str:
    """An argument the object does not take, and how to fix the call: where a name declared elsewhere belongs
    (``replace_all`` goes inside each edit), or the names this object takes. Only declared names are shown."""
    here = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
    extra = sorted(name for name in error.instance if name not in here) if isinstance(error.instance, Mapping) else []
    misplaced = [name for name in extra if name in declared]
    if misplaced:
        name = misplaced[0]
        home = declared[name] or "the top-level arguments"
        return f"unexpected argument '{name}' in {where}: it belongs in {home}"
    accepted = ", ".join(here) or "none"
    # The name sent is never repeated (it is the client's text); the declared name nearest to it is (issue 50).
    near = next((close for name in extra for close in difflib.get_close_matches(str(name), list(here), n=1)), None)
    if near is not None:
        return f"unexpected argument in {where} (did you mean '{near}'?); the accepted ones are: {accepted}"
    return f"unexpected argument in {where}; the accepted ones are: {accepted}"


def _check_ints(value: Any) -> None:
    """Integers beyond the signed 64-bit range (no OS call takes them), anywhere in the arguments."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bool):
            continue
        if isinstance(item, int) and not -MAX_INT - 1 <= item <= MAX_INT:
            raise InvalidArguments("invalid arguments: an integer is out of range (signed 64-bit)")
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def without_nulls(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments with every ``null`` option dropped: ``null`` means absent (the schemas say so), also in the
    objects of a list (``edit_file``'s edits). Only for arguments that passed :func:`checker`, which refuses
    ``null`` where the schema does not take it (a required argument)."""
    return {name: _drop_nulls(value) for name, value in arguments.items() if value is not None}


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {name: _drop_nulls(item) for name, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_drop_nulls(item) for item in value]
    return value
