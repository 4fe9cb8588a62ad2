"""What a tool's refusals teach: the parameters a validation error names (a tool with an empty schema, or a
required parameter its schema left out), the keys a refusal names for an object the audit fills, and whether an
error is a validation error at all."""

from __future__ import annotations

import re
from typing import Any

from rootbound.audit.tools import (
    CONTENT_NAME,
    MAX_LEAVES,
    PATTERN_NAME,
    Access,
    PathLeaf,
    Pointer,
    ToolPlan,
    filler,
    path_name,
    plan_shapes,
)
from rootbound.audit.tools import (
    role as param_role,
)
from rootbound.audit.values import required_keys

__all__ = ["extra_required", "learn_params", "object_keys", "plan_learnt", "validation_error"]

_QUOTED = re.compile(r"""["'`]([A-Za-z_][A-Za-z0-9_]{0,40})["'`]""")
_LOC = re.compile(r"""(?:path|loc)["']?\s*[:=]\s*\[\s*["']([A-Za-z_][A-Za-z0-9_]{0,40})["']""")
_CHUNK = re.compile(r"\{[^{}]*\}")
_EXPECTED = re.compile(r"""["']?expected["']?\s*[:=]\s*["'](\w+)["']""")


def learn_params(error_text: str) -> dict[str, str]:
    """Parameter names (and JSON types, when said) that a validation error names: zod's
    ``{"expected": "array", "path": ["paths"]}`` and pydantic's ``loc`` first; else quoted words that look like a
    path, pattern or content parameter (an error's other words are not names)."""
    error_text = error_text[:20_000]
    names: dict[str, str] = {}
    for chunk in [*_CHUNK.findall(error_text), error_text]:
        for match in _LOC.finditer(chunk):
            expected = _EXPECTED.search(chunk)
            names.setdefault(match.group(1), expected.group(1) if expected and chunk != error_text else "string")
    if names:
        return names
    for match in _QUOTED.finditer(error_text):
        word = match.group(1)
        if path_name(word) or PATTERN_NAME.fullmatch(word) or CONTENT_NAME.fullmatch(word):
            names.setdefault(word, "string")
    return names


def plan_learnt(name: str, learnt: dict[str, str], access: Access) -> ToolPlan:
    """A plan for a tool with an empty schema, from the parameter names (and types) its errors revealed."""
    props: dict[str, Any] = {
        pname: {"type": "array", "items": {"type": "string"}} if ptype == "array" else {"type": ptype}
        for pname, ptype in learnt.items()
        if ptype in ("string", "array", "integer", "number", "boolean")
    }
    tool = {"name": name, "inputSchema": {"type": "object", "properties": props, "required": list(props)}}
    plan = plan_shapes(tool, frozenset({name}) if access != "skip" else frozenset(), access == "write")[0]
    plan.access = access
    if not plan.leaves:
        plan.access, plan.reason = "skip", "no path parameter (schema empty, errors named none)"
    return plan


_VALIDATION = re.compile(
    r"required|missing|expected|invalid|validation|unrecognized|unknown (param|arg|field|key|propert)|"
    r"not provided|must (be )?(provided|specified|given|supplied)|is undefined",
    re.IGNORECASE,
)


def validation_error(text: str) -> bool:
    """Whether an error reads like a validation error about arguments (only those name parameters)."""
    return _VALIDATION.search(text[:20_000]) is not None


def extra_required(plan: ToolPlan, learnt: dict[str, str], exclude: frozenset[str] = frozenset()) -> bool:
    """Add the top-level parameters a validation error named that the plan does not fill; True if any was new.
    Names in ``exclude`` (the server's tool names: "call 'set_working_dir' first") are never parameters."""
    known = {leaf.pointer[0] for leaf in [*plan.leaves, *plan.mirrors]} | {p[0] for p in plan.roles}
    added = False
    for pname, ptype in list(learnt.items())[:8]:
        if pname in known or pname in exclude or len(plan.leaves) + len(plan.roles) >= MAX_LEAVES:
            continue
        schema: dict[str, Any] = {
            "type": ptype if ptype in ("string", "integer", "number", "boolean", "array") else "string"
        }
        role = param_role(pname, schema)
        if role in ("path", "path-array"):
            plan.leaves.append(PathLeaf((pname,), role == "path-array", (True,)))
        elif role == "patch":  # a patch text the error asked for: its format is learnt from the next refusal
            plan.leaves.append(PathLeaf((pname,), False, (True,), patch="codex"))
        else:
            plan.roles[(pname,)] = (
                role if role not in ("object", "object-array") else "filler",
                (True,),
                filler(pname, schema),
            )  # type: ignore[assignment]
        added = True
    return added


def _objects(plan: ToolPlan) -> dict[Pointer, tuple[tuple[bool, ...], bool, dict[str, Any]]]:
    """The objects the plan fills: pointer -> (required per level, an array of them, the keys sent now). A
    free-form object probed at ``args.path`` is one too."""
    out: dict[Pointer, tuple[tuple[bool, ...], bool, dict[str, Any]]] = {}
    for pointer, (_, levels, value) in plan.roles.items():
        if isinstance(value, dict):
            out[pointer] = (levels, False, value)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            out[pointer] = (levels, True, value[0])
    for leaf in plan.leaves:
        if leaf.free and len(leaf.pointer) > 1:
            out.setdefault(leaf.pointer[:-1], (leaf.required[:-1], False, {}))
    return out


def object_keys(plans: tuple[ToolPlan, ...], text: str, done: set[Pointer]) -> tuple[Pointer, list[str]] | None:
    """Add the keys a refusal names as missing or required (:func:`required_keys`: "missing key 'cell_type'",
    "'source' is a required property") to the object the audit fills that it speaks of: the plan's only object (or
    array of objects), else the one the refusal names. Each key becomes a string filler of its own (the next
    refusal may list the values it takes: :func:`rootbound.audit.values.learn_value`), on every plan given (a
    pass's copy too). (the object's pointer, the keys added), or None; an object in ``done`` is not learnt again."""
    keys = required_keys(text)
    objects = _objects(plans[0])
    if not keys or not objects:
        return None
    if len(objects) > 1:
        named = [p for p in objects if re.search(r"(?<![\w])" + re.escape(p[-1]) + r"(?![\w])", text)]
        objects = {p: objects[p] for p in named[:1]} if len(named) == 1 else {}
    pointer = next(iter(objects), None)
    if pointer is None or pointer in done:
        return None
    levels, array, sent = objects[pointer]
    base, below = ((*pointer, "[]"), (*levels, True)) if array else (pointer, levels)
    taken = {leaf.pointer for leaf in plans[0].leaves} | set(plans[0].roles)
    new = [k for k in keys if k not in sent and (*base, k) not in taken]
    if not new:
        return None
    for plan in plans:
        if pointer in plan.roles:  # its keys become fillers of their own: each can learn its value
            del plan.roles[pointer]
        fillers = list(sent.items()) + [(k, filler(k, {"type": "string"})) for k in new]
        for key, value in fillers:
            if len(plan.leaves) + len(plan.roles) < MAX_LEAVES:
                at: Pointer = (*base, key)  # not ``roles[*base, key]``: Python 3.10
                plan.roles[at] = ("filler", (*below, True), value)
    return pointer, new
