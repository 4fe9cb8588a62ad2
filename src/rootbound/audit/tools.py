"""Which tools the audit may call, with which arguments, whatever the shape of their ``inputSchema``.

Path-like leaves are found anywhere in the schema (``params.path``, ``files[].path``, arrays of paths), each one a
:class:`PathLeaf` probed on its own. ``oneOf``/``anyOf`` alternatives become separate call shapes (one
:class:`ToolPlan` each); optional path leaves are left out unless probed, so parameters a server treats as mutually
exclusive (``path`` *or* ``paths``) are each tried alone. Required non-path leaves are filled from ``const``,
``enum``, ``default``, ``examples`` and the type; patterns and globs are not paths; an edit gets an old text that
W's files hold (``rbt``) and a different new text.

Fail closed: a tool is *read-only* only when its name says so (read, list, get, stat, search...) or it is annotated
``readOnlyHint: true``, and nothing says otherwise; every other tool may modify and is called only with ``--write``
(where the runner then classifies it by what its control call did to the trap). Tools that look like exec, shell,
fetch or send are never called unless ``--allow-tool`` names them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, cast

__all__ = ["PathLeaf", "ToolPlan", "learn_params", "plan_learnt", "plan_shapes", "plan_tool"]

Access = Literal["read", "write", "skip"]
Pointer = tuple[str, ...]  # keys from the arguments object to a leaf; "[]" is the first element of an array
Role = Literal["path", "pattern", "content", "old", "new", "filler"]

MAX_DEPTH = 4  # nesting the walker follows (objects and arrays of objects)
MAX_LEAVES = 64  # leaves per schema: a hostile schema cannot make planning unbounded
MAX_SHAPES = 4  # oneOf/anyOf alternatives tried per tool

_PATHY = re.compile(
    r"(^|_|-|\b)(path|paths|file|files|filename|filepath|dir|dirs|directory|directories|folder|uri|uris|root|"
    r"target|source|src|dest|destination|location|cwd|from|to|repo|repository)(s)?($|_|-|\b)|path|file|dir",
    re.IGNORECASE,
)
# Names and descriptions that make a string a pattern, not a path ("file_pattern", "glob", "excludePatterns").
_GLOBBY = re.compile(r"pattern|glob|regex|regexp|wildcard|mask|query|exclude|include|filter", re.IGNORECASE)
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
        "log",
        "diff",
        "status",
        "blame",
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
        "commit",
        "checkout",
        "reset",
        "init",
        "stage",
        "unstage",
    ]
)
_CONTENT = re.compile(r"content|text|data|body|new_?text|old_?text|value|source_code|message", re.IGNORECASE)
_OLD = re.compile(r"old|search|find|original|before|from_?text|target_?text", re.IGNORECASE)
_NEW = re.compile(r"new|replace|after|with|to_?text", re.IGNORECASE)
_PATTERN = re.compile(r"pattern|query|regex|glob|search|name|term|keyword|filter|match|include", re.IGNORECASE)
_OPTIONS = re.compile(r"""\(\s*['"]([A-Za-z0-9_-]{1,40})['"]\s*\)""")
_CONSENT = re.compile(r"confirm|force|overwrite|yes|create_?(dirs|parents)|parents", re.IGNORECASE)
OLD_TEXT = "rbt"  # every file the trap plants holds it (tokens are "rbt-token-..."; the scratch file "rbt scratch")


def _words(name: str) -> set[str]:
    """``read_text_file``, ``readTextFile`` and ``read-text-file`` all give {read, text, file}."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return {w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w}


@dataclass(frozen=True)
class PathLeaf:
    """One place in the arguments that takes a path: ``pointer`` from the top, an array of paths or one."""

    pointer: Pointer
    array: bool = False
    required: tuple[bool, ...] = ()  # required at each level of the pointer

    @property
    def name(self) -> str:
        out = ""
        for key in self.pointer:
            out += "[]" if key == "[]" else (f".{key}" if out else key)
        return out + ("[]" if self.array else "")


@dataclass
class ToolPlan:
    """One call shape of a tool: its access class, its path leaves, and how every other leaf is filled."""

    name: str
    access: Access
    leaves: list[PathLeaf] = field(default_factory=list)
    roles: dict[Pointer, tuple[Role, tuple[bool, ...], Any]] = field(default_factory=dict)
    shape: str = ""  # "" for the tool's one shape, else "oneOf 2" etc.
    reason: str = ""
    by_name: Access = "read"  # what the name and annotations said (the runner may learn better from effects)

    @property
    def path_params(self) -> list[str]:
        return [leaf.name for leaf in self.leaves]

    @property
    def pattern_params(self) -> list[str]:
        return [".".join(p) for p, (role, _, _) in self.roles.items() if role == "pattern"]

    @property
    def label(self) -> str:
        return f"{self.name} ({self.shape})" if self.shape else self.name

    def leaf(self, name: str) -> PathLeaf:
        return next(leaf for leaf in self.leaves if leaf.name == name)

    def arguments(
        self, probe: str, value: str, others: str, pattern: str, content: str, *, every_path: bool = False
    ) -> dict[str, Any]:
        """Arguments with ``value`` at the leaf named ``probe`` and ``others`` at every other path leaf that is
        required (or every one, with ``every_path``); the rest filled by role."""
        target = next((leaf for leaf in self.leaves if leaf.name == probe), None)
        args: dict[str, Any] = {}
        anchor = target.pointer if target is not None else ()
        for leaf in self.leaves:
            if leaf is target:
                _put(args, leaf.pointer, [value] if leaf.array else value)
            elif every_path or _needed(leaf.pointer, leaf.required, anchor):
                _put(args, leaf.pointer, [others] if leaf.array else others)
        for pointer, (role, required, filler) in self.roles.items():
            if not _needed(pointer, required, anchor):
                continue
            if role == "pattern":
                _put(args, pointer, pattern)
            elif role == "old":
                _put(args, pointer, OLD_TEXT)
            elif role in ("content", "new"):
                _put(args, pointer, content or filler)
            else:
                _put(args, pointer, filler)
        return args


def _needed(pointer: Pointer, required: tuple[bool, ...], anchor: Pointer) -> bool:
    """Required at every level, except the levels it shares with the probed leaf (which is always sent)."""
    for i, req in enumerate(required):
        if not req and not (i < len(anchor) and pointer[: i + 1] == anchor[: i + 1]):
            return False
    return True


def _put(args: dict[str, Any], pointer: Pointer, value: Any) -> None:
    here: Any = args
    for i, key in enumerate(pointer):
        last = i == len(pointer) - 1
        nxt = pointer[i + 1] if not last else None
        if key == "[]":
            if not here:
                here.append([] if nxt == "[]" else {})
            if last:
                here[0] = value
                return
            here = here[0]
            continue
        if last:
            here[key] = value
            return
        if key not in here:
            here[key] = [] if nxt == "[]" else {}
        here = here[key]


def _type_of(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "string"
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    if isinstance(t, str):
        return t
    if isinstance(schema.get("properties"), dict):
        return "object"
    for key in ("anyOf", "oneOf"):
        alts = schema.get(key)
        if isinstance(alts, list) and alts:
            non_null = [a for a in alts if not (isinstance(a, dict) and a.get("type") == "null")]
            return _type_of(non_null[0] if non_null else alts[0])
    return "string"


def _filler(name: str, schema: Any) -> Any:
    """A harmless value of the right kind: const, an enum member, the default, an example, else by type."""
    if isinstance(schema, dict):
        if "const" in schema:
            return schema["const"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return enum[0]
        if "default" in schema and schema["default"] is not None:
            return schema["default"]
        examples = schema.get("examples")
        if isinstance(examples, list) and examples:
            return examples[0]
    t = _type_of(schema)
    if t in ("integer", "number"):
        low = schema.get("minimum") if isinstance(schema, dict) else None
        return low if isinstance(low, (int, float)) and not isinstance(low, bool) and low > 1 else 1
    if t == "boolean":
        return bool(_CONSENT.search(name))  # confirm/force/overwrite: a writer that asks must be told yes
    if t == "array":
        return []
    if t == "object":
        return {}
    if t == "null":
        return None
    options = _OPTIONS.findall(_describes(schema))  # "... ('local'), ... ('remote') or ('all')": the first one
    if options:
        return options[0]
    text = "rbt-edited" if _NEW.search(name) else "rbt"
    minimum = schema.get("minLength") if isinstance(schema, dict) else None
    if isinstance(minimum, int) and not isinstance(minimum, bool) and minimum > len(text):
        text = text + "-" * (min(minimum, 256) - len(text))
    return text


def _describes(schema: Any) -> str:
    return str(schema.get("description", ""))[:200].lower() if isinstance(schema, dict) else ""


def _role(name: str, schema: Any) -> Role | Literal["path-array", "object", "object-array"]:
    t = _type_of(schema)
    desc = _describes(schema)
    items = schema.get("items") if isinstance(schema, dict) else None
    fmt = schema.get("format") if isinstance(schema, dict) else None
    globby = bool(_GLOBBY.search(name)) or "glob" in desc[:80] or "pattern" in desc[:40]
    pathy = (bool(_PATHY.search(name)) or fmt == "uri" or "path" in desc[:80]) and not globby
    if t == "object":
        return "object"
    if t == "array" and isinstance(items, dict) and _type_of(items) == "object":
        return "object-array"
    if t == "string" and pathy and not _CONTENT.fullmatch(name):
        return "path"
    if t == "array" and pathy and (not isinstance(items, dict) or _type_of(items) == "string"):
        return "path-array"
    if t == "string" and (globby or _PATTERN.search(name)) and not _CONTENT.search(name):
        return "pattern"
    if t == "string" and _CONTENT.search(name):
        if _OLD.search(name) and not _NEW.search(name):
            return "old"
        return "new" if _NEW.search(name) else "content"
    return "filler"


def _walk(
    schema: Any, here: Pointer, required: tuple[bool, ...], depth: int
) -> Iterator[tuple[Pointer, Any, tuple[bool, ...]]]:
    """(pointer, schema, required-per-level) of every leaf, through objects and arrays of objects."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return
    req = schema.get("required") if isinstance(schema.get("required"), list) else []
    for name, sub in props.items():
        pointer = (*here, str(name))
        levels = (*required, name in req)
        role = _role(str(name), sub)
        if role == "object" and depth < MAX_DEPTH and isinstance(sub, dict) and isinstance(sub.get("properties"), dict):
            yield from _walk(sub, pointer, levels, depth + 1)
        elif role == "object-array" and depth < MAX_DEPTH:
            # an array of objects: the first element is what the audit fills (required if the array is)
            yield from _walk(sub["items"], (*pointer, "[]"), (*levels, True), depth + 1)
        else:
            yield pointer, sub, levels


def _variants(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The call shapes: the schema itself, or one per ``oneOf``/``anyOf`` alternative merged into its base."""
    for key in ("oneOf", "anyOf"):
        alts = schema.get(key)
        if not isinstance(alts, list) or not alts:
            continue
        base_props: dict[str, Any] = _dict(schema.get("properties"))
        base_req: list[Any] = schema["required"] if isinstance(schema.get("required"), list) else []
        out: list[tuple[str, dict[str, Any]]] = []
        for i, alt in enumerate(alts[:MAX_SHAPES]):
            if not isinstance(alt, dict):
                continue
            props = dict(base_props)
            if isinstance(alt.get("properties"), dict):
                props.update(alt["properties"])
            req = list(base_req) + [r for r in alt.get("required", []) if isinstance(r, str)]
            only = set(req) | (set(alt["properties"]) if isinstance(alt.get("properties"), dict) else set())
            # a property another alternative requires (and this one does not name) belongs to that alternative
            others = {
                r
                for j, a in enumerate(alts)
                if j != i and isinstance(a, dict)
                for r in a.get("required", [])
                if isinstance(r, str)
            }
            props = {k: v for k, v in props.items() if k in only or k not in others}
            out.append((f"{key} {i + 1}", {"type": "object", "properties": props, "required": req}))
        if out:
            return out
    return [("", schema)]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _access(tool: dict[str, Any], allow: frozenset[str], write: bool) -> tuple[Access, Access, str]:
    """(access, access by name, reason): skip for exec-like names and, without ``--write``, for possible writers."""
    name = str(tool.get("name", ""))
    annotations = _dict(tool.get("annotations"))
    words = _words(name)
    read_only = (
        annotations.get("readOnlyHint") is True
        or (name in allow and not words & _WRITE_VERB)
        or (bool(words & _READ_VERB) and not words & _WRITE_VERB and annotations.get("readOnlyHint") is not False)
    )
    by_name: Access = "read" if read_only else "write"
    if name not in allow and words & _DANGEROUS:
        return "skip", by_name, "looks like exec/shell/fetch/send (name it with --allow-tool)"
    if not read_only and not write:
        return "skip", by_name, "may modify files (the audit calls it only with --write)"
    return by_name, by_name, ""


def plan_shapes(
    tool: dict[str, Any], allow: frozenset[str], write: bool, refs: dict[str, str] | None = None
) -> list[ToolPlan]:
    """Every call shape of one ``tools/list`` entry (a raw dict: any shape a sloppy server sends). ``refs`` maps
    parameters that take a revision or a branch, not a path (repository servers), to their filler."""
    refs = refs or {}
    name = str(tool.get("name", ""))
    schema = _dict(tool.get("inputSchema"))
    access, by_name, reason = _access(tool, allow, write)
    plans: list[ToolPlan] = []
    for shape, variant in _variants(schema):
        plan = ToolPlan(name, access, shape=shape, reason=reason, by_name=by_name)
        for count, (pointer, sub, levels) in enumerate(_walk(variant, (), (), 0)):
            if count >= MAX_LEAVES:
                break
            role = _role(pointer[-1], sub)
            if pointer[-1] in refs and role in ("path", "pattern", "filler"):
                plan.roles[pointer] = ("filler", levels, refs[pointer[-1]])
            elif role in ("path", "path-array"):
                plan.leaves.append(PathLeaf(pointer, role == "path-array", levels))
            elif role in ("object", "object-array"):
                plan.roles[pointer] = ("filler", levels, _filler(pointer[-1], sub))
            elif role in ("pattern", "content", "old", "new", "filler"):
                plan.roles[pointer] = (cast(Role, role), levels, _filler(pointer[-1], sub))
        if plan.access != "skip" and _dict(variant.get("properties")) and not plan.leaves:
            plan.access, plan.reason = "skip", "no path parameter"
        plans.append(plan)
    return plans


def plan_tool(tool: dict[str, Any], allow: frozenset[str], write: bool) -> ToolPlan:
    """The first call shape of a tool (see :func:`plan_shapes` for all of them)."""
    return plan_shapes(tool, allow, write)[0]


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
        if _PATHY.search(word) or _PATTERN.fullmatch(word) or _CONTENT.fullmatch(word):
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


def extra_required(plan: ToolPlan, learnt: dict[str, str]) -> bool:
    """Add the top-level parameters a validation error named that the plan does not fill; True if any was new."""
    known = {leaf.pointer[0] for leaf in plan.leaves} | {p[0] for p in plan.roles}
    added = False
    for pname, ptype in list(learnt.items())[:8]:
        if pname in known:
            continue
        schema: dict[str, Any] = {
            "type": ptype if ptype in ("string", "integer", "number", "boolean", "array") else "string"
        }
        role = _role(pname, schema)
        if role in ("path", "path-array"):
            plan.leaves.append(PathLeaf((pname,), role == "path-array", (True,)))
        else:
            plan.roles[(pname,)] = (
                role if role not in ("object", "object-array") else "filler",
                (True,),
                _filler(pname, schema),
            )  # type: ignore[assignment]
        added = True
    return added
