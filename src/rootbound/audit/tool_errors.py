"""What a tool's refusals teach: the parameters a validation error names (a tool with an empty schema, or a
required parameter its schema left out), and whether an error is a validation error at all."""

from __future__ import annotations

import re
from typing import Any

from rootbound.audit.tools import (
    CONTENT_NAME,
    MAX_LEAVES,
    PATTERN_NAME,
    Access,
    PathLeaf,
    ToolPlan,
    filler,
    path_name,
    plan_shapes,
)
from rootbound.audit.tools import (
    role as param_role,
)

__all__ = ["extra_required", "learn_params", "plan_learnt", "validation_error"]

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
