"""Which tools the audit may call, with which arguments: path parameters from ``inputSchema`` (sloppy or empty
schemas tolerated), harmless fillers for the rest, and parameter names learnt from a server's validation errors.

Fail closed: a tool is *read-only* only when its name says so (read, list, get, stat, search...) or it is
annotated ``readOnlyHint: true``, and nothing says otherwise; every other tool may modify and is called only with
``--write``. Tools that look like exec, shell, fetch or send are never called unless ``--allow-tool`` names them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ToolPlan", "learn_params", "plan_tool"]

Access = Literal["read", "write", "skip"]

_PATHY = re.compile(
    r"(^|_|-|\b)(path|paths|file|files|filename|filepath|dir|dirs|directory|directories|folder|uri|uris|root|"
    r"target|source|src|dest|destination|location|cwd|from|to)(s)?($|_|-|\b)|path|file|dir",
    re.IGNORECASE,
)
_DANGEROUS = frozenset(
    [
        "exec",
        "execute",
        "shell",
        "bash",
        "sh",
        "command",
        "cmd",
        "run",
        "spawn",
        "eval",
        "script",
        "fetch",
        "http",
        "https",
        "url",
        "download",
        "upload",
        "send",
        "mail",
        "email",
        "post",
        "kill",
        "process",
        "sql",
        "install",
        "npm",
        "pip",
        "push",
        "deploy",
        "curl",
        "wget",
        "request",
        "browse",
        "navigate",
    ]
)
_READ_VERB = frozenset(
    [
        "read",
        "list",
        "get",
        "stat",
        "info",
        "search",
        "find",
        "grep",
        "tree",
        "view",
        "cat",
        "head",
        "tail",
        "show",
        "glob",
        "ls",
        "du",
        "exists",
        "describe",
        "inspect",
        "load",
        "open",
        "check",
        "count",
        "lookup",
        "query",
        "directory",
        "metadata",
    ]
)
_WRITE_VERB = frozenset(
    [
        "write",
        "edit",
        "create",
        "move",
        "rename",
        "delete",
        "remove",
        "mkdir",
        "copy",
        "append",
        "patch",
        "put",
        "update",
        "set",
        "save",
        "chmod",
        "chown",
        "touch",
        "truncate",
        "replace",
        "insert",
        "mv",
        "rm",
        "cp",
        "link",
        "symlink",
        "unzip",
        "extract",
        "unlink",
        "rmdir",
        "make",
        "new",
        "add",
        "modify",
        "apply",
    ]
)


def _words(name: str) -> set[str]:
    """``read_text_file``, ``readTextFile`` and ``read-text-file`` all give {read, text, file}."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return {w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w}


_CONTENT = re.compile(r"content|text|data|body|new_?text|old_?text|value|source_code", re.IGNORECASE)
_PATTERN = re.compile(r"pattern|query|regex|glob|search|name|term|keyword|filter|match|include", re.IGNORECASE)


@dataclass
class ToolPlan:
    """One tool: its access class, the parameters that take paths, and fillers for the rest."""

    name: str
    access: Access
    path_params: list[str]
    array_params: set[str] = field(default_factory=set)
    fillers: dict[str, Any] = field(default_factory=dict)
    pattern_params: list[str] = field(default_factory=list)
    content_params: list[str] = field(default_factory=list)
    reason: str = ""

    def arguments(self, probe_param: str, value: str, others: str, pattern: str, content: str) -> dict[str, Any]:
        """Arguments with ``value`` in ``probe_param``, ``others`` in every other path parameter."""
        args: dict[str, Any] = dict(self.fillers)
        for param in self.path_params:
            v = value if param == probe_param else others
            args[param] = [v] if param in self.array_params else v
        for param in self.pattern_params:
            args[param] = pattern
        for param in self.content_params:
            args[param] = content
        return args


def _type_of(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "string"
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    if isinstance(t, str):
        return t
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _type_of(schema[key][0])
    return "string"


def _filler(name: str, schema: Any) -> Any:
    t = _type_of(schema)
    if isinstance(schema, dict):
        if "default" in schema:
            return schema["default"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return enum[0]
    if t in ("integer", "number"):
        return 1
    if t == "boolean":
        return False
    if t == "array":
        items = schema.get("items") if isinstance(schema, dict) else None
        if isinstance(items, dict) and _type_of(items) == "object":
            return [_object_filler(items)]
        return []
    if t == "object":
        return _object_filler(schema)
    # An edit's replacement must differ from what it replaces, or a working edit tool changes nothing.
    return "rbt-edited" if re.search(r"new|replace|after|with", name, re.IGNORECASE) else "rbt"


def _object_filler(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return {}
    required = schema.get("required") if isinstance(schema.get("required"), list) else list(props)
    return {k: _filler(k, v) for k, v in props.items() if k in required}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def plan_tool(tool: dict[str, Any], allow: frozenset[str], write: bool) -> ToolPlan:
    """Plan one ``tools/list`` entry (a raw dict: any shape a sloppy server sends)."""
    name = str(tool.get("name", ""))
    schema = _dict(tool.get("inputSchema"))
    props = _dict(schema.get("properties"))
    required: list[Any] = schema["required"] if isinstance(schema.get("required"), list) else []
    annotations = _dict(tool.get("annotations"))
    plan = ToolPlan(name, "read", [])
    for pname, pschema in props.items():
        _place(plan, str(pname), pschema, required)
    words = _words(name)
    if name not in allow and words & _DANGEROUS:
        plan.access, plan.reason = "skip", "looks like exec/shell/fetch/send (name it with --allow-tool)"
        return plan
    read_only = (
        annotations.get("readOnlyHint") is True
        or (name in allow and not words & _WRITE_VERB)
        or (bool(words & _READ_VERB) and not words & _WRITE_VERB and annotations.get("readOnlyHint") is not False)
    )
    if not read_only:
        plan.access = "write"
        if not write:
            plan.access, plan.reason = "skip", "may modify files (audit writes only with --write)"
            return plan
    if props and not plan.path_params:
        plan.access, plan.reason = "skip", "no path parameter"
    return plan


def _place(plan: ToolPlan, pname: str, pschema: Any, required: list[Any]) -> None:
    t = _type_of(pschema)
    items = pschema.get("items") if isinstance(pschema, dict) else None
    desc = str(pschema.get("description", "")) if isinstance(pschema, dict) else ""
    fmt = pschema.get("format") if isinstance(pschema, dict) else None
    pathy = bool(_PATHY.search(pname)) or fmt == "uri" or "path" in desc.lower()[:80]
    if t == "string" and pathy and not _CONTENT.fullmatch(pname):
        plan.path_params.append(pname)
    elif t == "array" and pathy and (not isinstance(items, dict) or _type_of(items) == "string"):
        plan.path_params.append(pname)
        plan.array_params.add(pname)
    elif t == "string" and _PATTERN.search(pname):
        if pname in required:
            plan.pattern_params.append(pname)
    elif t == "string" and _CONTENT.search(pname):
        if pname in required:
            plan.content_params.append(pname)
    elif pname in required:
        plan.fillers[pname] = _filler(pname, pschema)


_QUOTED = re.compile(r"""["'`]([A-Za-z_][A-Za-z0-9_]{0,40})["'`]""")
_LOC = re.compile(r"""(?:path|loc)["']?\s*[:=]\s*\[\s*["']([A-Za-z_][A-Za-z0-9_]{0,40})["']""")


_CHUNK = re.compile(r"\{[^{}]*\}")
_EXPECTED = re.compile(r"""["']?expected["']?\s*[:=]\s*["'](\w+)["']""")


def learn_params(error_text: str) -> dict[str, str]:
    """Parameter names (and JSON types, when said) that a validation error names: zod's
    ``{"expected": "array", "path": ["paths"]}`` and pydantic's ``loc`` first; else quoted words that look like a
    path, pattern or content parameter (an error's other words are not names)."""
    names: dict[str, str] = {}
    for chunk in [*_CHUNK.findall(error_text), error_text]:
        for match in _LOC.finditer(chunk):
            expected = _EXPECTED.search(chunk)
            names.setdefault(match.group(1), expected.group(1) if expected and chunk != error_text else "string")
    if names:
        return names
    for match in _QUOTED.finditer(error_text):
        word = match.group(1)
        if _PATHY.search(word) or _PATTERN.fullmatch(word) or _CONTENT.fullmatch(word):
            names.setdefault(word, "string")
    return names


def plan_learnt(name: str, learnt: dict[str, str], access: Access) -> ToolPlan:
    """A plan for a tool with an empty schema, from the parameter names (and types) its errors revealed."""
    plan = ToolPlan(name, access, [])
    for pname, ptype in learnt.items():
        schema = {"type": "array", "items": {"type": "string"}} if ptype == "array" else {"type": "string"}
        _place(plan, pname, schema, list(learnt))
    plan.fillers.clear()  # only names the server itself asked for, and only the kinds the audit knows how to fill
    if not plan.path_params:
        plan.access, plan.reason = "skip", "no path parameter (schema empty, errors named none)"
    return plan
