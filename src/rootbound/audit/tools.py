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

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from rootbound.audit.patch_text import patch_format, render
from rootbound.audit.schema import MAX_SHAPES, inline_refs
from rootbound.audit.schema import dict_of as _dict
from rootbound.audit.schema import non_null as _non_null
from rootbound.audit.schema import type_of as _type_of
from rootbound.audit.schema import variants as _variants
from rootbound.audit.statements import render_text
from rootbound.audit.values import example_value, pattern_value
from rootbound.audit.vocabulary import (
    DANGEROUS as _DANGEROUS,
)
from rootbound.audit.vocabulary import (
    DIR_SIBLING as _DIR_SIBLING,
)
from rootbound.audit.vocabulary import (
    EDIT_VERB as _EDIT_VERB,
)
from rootbound.audit.vocabulary import (
    NOT_PATH as _NOT_PATH,
)
from rootbound.audit.vocabulary import (
    READ_VERB as _READ_VERB,
)
from rootbound.audit.vocabulary import (
    SHELL_PARAM as _SHELL_PARAM,
)
from rootbound.audit.vocabulary import (
    STRONG as _STRONG,
)
from rootbound.audit.vocabulary import (
    WEAK as _WEAK,
)
from rootbound.audit.vocabulary import (
    WRITE_VERB as _WRITE_VERB,
)

__all__ = [
    "CONTENT_NAME",
    "MAX_LEAVES",
    "PATTERN_NAME",
    "Access",
    "PathLeaf",
    "ToolPlan",
    "filler",
    "path_name",
    "plan_shapes",
    "plan_tool",
    "role",
]

Access = Literal["read", "write", "skip"]
Pointer = tuple[str, ...]  # keys from the arguments object to a leaf; "[]" is the first element of an array
Role = Literal["path", "pattern", "content", "old", "new", "filler"]

MAX_DEPTH = 4  # nesting the walker follows (objects and arrays of objects)
MAX_LEAVES = 64  # leaves per schema: a hostile schema cannot make planning unbounded

# Path-parameter names, word by word (``repo_path``, ``workingDirectory``, ``dst``): a strong noun anywhere makes a
# path unless the last word says what else it is (``fileType``, ``file_hash``); a weak noun only as the last word
# (``src``, ``to``; not ``task_id_to_resume``). Names are only a hint: enums are never paths, and the control
# call decides whether the parameter reaches the file system.
# Parameters that name the directory a call runs in, not its subject: they get W itself, never a file in W.
# Names and descriptions that make a string a pattern, not a path ("file_pattern", "glob", "excludePatterns").
_GLOBBY = re.compile(r"pattern|glob|regex|regexp|wildcard|mask|query|exclude|include|filter", re.IGNORECASE)
# A tool that runs a shell is never trusted by its annotations: a parameter that takes a command line, or a
# description that says it runs commands, puts it with the exec-like tools. A tool that runs a fixed program of its
# own ("If the nbconvert subprocess fails") does not run the caller's text: "subprocess" alone does not count.
_SHELL_SAID = re.compile(
    r"\bshell\b|\bcommand[- ]line\b|\b(run|runs|execute|executes|executing|running)\s+"
    r"(a |an |the |any |arbitrary )?(shell |system |terminal |bash |git |python |javascript |node )?"
    r"(command|script|program|code)s?\b",
    re.IGNORECASE,
)
_CONTENT = re.compile(r"content|text|data|body|new_?text|old_?text|value|source_code|message", re.IGNORECASE)
_OLD = re.compile(r"old|search|find|original|before|from_?text|target_?text", re.IGNORECASE)
_NEW = re.compile(r"new|replace|after|with|to_?text", re.IGNORECASE)
_DEST = re.compile(r"dst|dest", re.IGNORECASE)  # a copy's destination name: not its source's
_PATTERN = re.compile(r"pattern|query|regex|glob|search|name|term|keyword|filter|match|include", re.IGNORECASE)
_IN_OUT = frozenset({"input", "output", "inputs", "outputs", "in", "out"})
_OPTIONS = re.compile(r"""\(\s*['"]([A-Za-z0-9_-]{1,40})['"]\s*\)""")
_CONSENT = re.compile(r"confirm|force|overwrite|yes|create_?(dirs|parents)|parents", re.IGNORECASE)
OLD_TEXT = "rbt"  # every file the trap plants holds it (tokens are "rbt-token-..."; the scratch file "rbt scratch")


def _word_list(name: str) -> list[str]:
    """``read_text_file``, ``readTextFile`` and ``read-text-file`` all give [read, text, file]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


word_list = _word_list


def _words(name: str) -> set[str]:
    return set(_word_list(name))


def path_name(name: str) -> bool:
    """Whether a parameter's name says it takes a path (a hint: the control call decides)."""
    words = _word_list(name)
    if not words:
        return False
    if words[-1] in _NOT_PATH:
        return False
    return (
        bool(_STRONG & set(words))
        or words[-1] in _WEAK
        or (len(words) > 1 and words[-1] in ("list", "array") and words[-2] in _WEAK)
    )


def dir_sibling(name: str) -> bool:
    """A parameter naming the directory a call works in (``workingDirectory``, ``cwd``, ``base_dir``)."""
    words = _word_list(name)
    return bool(words) and words[-1] in _DIR_SIBLING


@dataclass(frozen=True)
class PathLeaf:
    """One place in the arguments that takes a path: ``pointer`` from the top, an array of paths or one."""

    pointer: Pointer
    array: bool = False
    required: tuple[bool, ...] = ()  # required at each level of the pointer
    free: bool = False  # inside a free-form object (``args: {}``): the audit put the path at ``args.path``
    patch: str = ""  # a whole patch text ("codex" or "unified", :mod:`.patch_text`): the path is the one it names
    text: str = ""  # an SQL statement or a command line of this family (:mod:`.statements`): the path is inside it

    @property
    def dir_sibling(self) -> bool:
        """Names the directory the call works in: as a sibling of the probed leaf it gets W itself."""
        return not self.array and bool(self.pointer) and dir_sibling(self.pointer[-1])

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
    # leaves a control found to name the directory the call works in, whatever their names say (``path`` beside
    # ``filePath``): they get W as a sibling, and a file in W when they are the one probed
    workdirs: frozenset[str] = frozenset()
    # optional fillers whose description gives an example ("e.g., A1:C10"): sent after a call without them failed
    described: list[Pointer] = field(default_factory=list)
    wants: str = ""  # the file type (extension) the tool asks for, learnt from its words (:mod:`.asks`)
    # beside a patch leaf, the other path leaves that name the patch's files (``if_match[].path``): never probed on
    # their own (their path is the patch's), sent with the path the patch names
    mirrors: list[PathLeaf] = field(default_factory=list)

    @property
    def path_params(self) -> list[str]:
        return [leaf.name for leaf in self.leaves]

    @property
    def pattern_params(self) -> list[str]:
        return [".".join(p) for p, (role, _, _) in self.roles.items() if role == "pattern"]

    @property
    def label(self) -> str:
        return f"{self.name} ({self.shape})" if self.shape else self.name

    @property
    def edits(self) -> bool:
        """An editor (an old text to replace, or an edit verb): it changes a file that exists."""
        return any(role == "old" for role, _, _ in self.roles.values()) or bool(_words(self.name) & _EDIT_VERB)

    def string_roles(self) -> list[Pointer]:
        """Leaves the names called something else that take a string (a path may hide behind any of them)."""
        return [
            pointer
            for pointer, (role, _, filler) in self.roles.items()
            if role in ("filler", "pattern", "content", "new", "old") and isinstance(filler, str)
        ]

    def workdir(self, name: str) -> bool:
        """The leaf ``name`` names the directory the call works in: by its name, or as a control found."""
        leaf = self.leaf(name)
        return leaf.dir_sibling or (not leaf.array and name in self.workdirs)

    def as_path(self, pointer: Pointer) -> ToolPlan:
        """A copy in which the leaf at ``pointer`` is a path leaf (the kernel saw it name a file)."""
        roles = dict(self.roles)
        _, required, _ = roles.pop(pointer)
        leaf = PathLeaf(pointer, False, required)
        return dataclasses.replace(self, leaves=[*self.leaves, leaf], roles=roles)

    def leaf(self, name: str) -> PathLeaf:
        return next(leaf for leaf in self.leaves if leaf.name == name)

    def arguments(
        self,
        probe: str,
        value: str,
        others: str,
        pattern: str,
        content: str,
        *,
        every_path: bool = False,
        others_dir: str | None = None,
    ) -> dict[str, Any]:
        """Arguments with ``value`` at the leaf named ``probe`` and ``others`` at every other path leaf that is
        required (or every one, with ``every_path``); a sibling that names a working directory (``cwd``,
        ``workingDirectory``, ``base``, or one in ``workdirs``) gets ``others_dir`` (W); the rest filled by role."""
        target = next((leaf for leaf in self.leaves if leaf.name == probe), None)
        args: dict[str, Any] = {}
        anchor = target.pointer if target is not None else ()
        for leaf in self.leaves:
            if leaf is target:
                _put(args, leaf.pointer, _rendered(leaf, value, content))
                if leaf.patch:  # the fields that name the patch's files name the same one
                    for mirror in self.mirrors:
                        if every_path or _needed(mirror.pointer, mirror.required, anchor):
                            _put(args, mirror.pointer, [value] if mirror.array else value)
            elif leaf.patch or leaf.text:
                _put(args, leaf.pointer, _rendered(leaf, others, content))
            elif every_path or _needed(leaf.pointer, leaf.required, anchor):
                other = others_dir if others_dir is not None and self.workdir(leaf.name) else others
                _put(args, leaf.pointer, [other] if leaf.array else other)
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


def _rendered(leaf: PathLeaf, value: str, content: str) -> Any:
    """What a leaf gets for the path ``value``: the path, a patch or a statement naming it, or a list of one."""
    if leaf.patch:
        return render(leaf.patch, value, content)
    if leaf.text:
        return render_text(leaf.text, value, content)
    return [value] if leaf.array else value


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
        items = schema.get("items") if isinstance(schema, dict) else None
        low = schema.get("minItems") if isinstance(schema, dict) else None
        if isinstance(low, int) and not isinstance(low, bool) and low > 0:
            return [_filler(name, items)] * min(low, 8)  # a required non-empty array gets elements of its kind
        if _type_of(items) == "array":  # a table (rows of cells): one row of one cell, to fit a one-cell range
            return [[_filler(name, items.get("items") if isinstance(items, dict) else None)]]
        return []
    if t == "object":
        return _object_filler(schema)
    if t == "null":
        return None
    options = _OPTIONS.findall(_describes(schema))  # "... ('local'), ... ('remote') or ('all')": the first one
    if options:
        return options[0]
    example = example_value(str(schema.get("description", ""))) if isinstance(schema, dict) else None
    if example is not None:  # "Range of cells (e.g., \"A1:C10\")": a value of the shape the tool parses
        return example
    text = "rbt-edited" if _NEW.search(name) or _DEST.search(name) else "rbt"
    minimum = schema.get("minLength") if isinstance(schema, dict) else None
    if isinstance(minimum, int) and not isinstance(minimum, bool) and minimum > len(text):
        text = text + "-" * (min(minimum, 256) - len(text))
    shaped = pattern_value(schema.get("pattern"), text) if isinstance(schema, dict) else None
    return text if shaped is None else shaped  # "^[0-9a-f]{64}$" (a digest): a value the server's check passes


def _object_filler(schema: Any) -> dict[str, Any]:
    """An object with its required properties filled (an array of objects needs at least a valid element)."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    req = schema.get("required") if isinstance(schema, dict) else None
    if not isinstance(props, dict) or not isinstance(req, list):
        return {}
    return {str(k): _filler(str(k), props[k]) for k in req[:16] if isinstance(k, str) and k in props}


def _describes(schema: Any) -> str:
    return str(schema.get("description", ""))[:200].lower() if isinstance(schema, dict) else ""


def _role(name: str, schema: Any) -> Role | Literal["path-array", "object", "object-array", "patch"]:
    t = _type_of(schema)
    desc = _describes(schema)
    items = schema.get("items") if isinstance(schema, dict) else None
    fmt = schema.get("format") if isinstance(schema, dict) else None
    globby = bool(_GLOBBY.search(name)) or "glob" in desc[:80] or "pattern" in desc[:40]
    enum = isinstance(schema, dict) and isinstance(schema.get("enum"), list)
    said = ("path" in desc[:80] or "directory" in desc[:80]) and not _NOT_PATH & _words(name)
    # ``input``/``output`` (a converter's) take a path when their description says a file
    said = said or (bool(_words(name)) and _words(name) <= _IN_OUT and "file" in desc[:120])
    pathy = (path_name(name) or fmt == "uri" or said) and not globby and not enum
    if t == "string" and not enum and patch_format(_word_list(name), desc, "") is not None:
        return "patch"  # a whole patch text: the path is inside it
    if t == "object":
        return "object"
    if t == "array" and isinstance(items, dict) and _type_of(items) == "object":
        return "object-array"
    if t == "string" and pathy and not _CONTENT.fullmatch(name):
        return "path"
    if t == "array" and pathy and (not isinstance(items, dict) or _type_of(items) == "string"):
        return "path-array"
    if t == "string" and (globby or _PATTERN.search(name)) and not _CONTENT.search(name) and not _DEST.search(name):
        return "pattern"  # a destination's name (``dstSheetName``) names a thing to make, not one to find
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
    for name, raw in props.items():
        sub = _non_null(raw)
        pointer = (*here, str(name))
        levels = (*required, name in req)
        role = _role(str(name), sub)
        if role == "object" and depth < MAX_DEPTH and isinstance(sub, dict) and isinstance(sub.get("properties"), dict):
            yield from _walk(sub, pointer, levels, depth + 1)
        elif (
            role == "object-array"
            and depth < MAX_DEPTH
            and isinstance(sub, dict)
            and isinstance(sub["items"].get("properties"), dict)
        ):
            # an array of objects: the first element is what the audit fills (required if the array is)
            yield from _walk(sub["items"], (*pointer, "[]"), (*levels, True), depth + 1)
        else:
            yield pointer, sub, levels


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
    schema = _dict(tool.get("inputSchema"))
    # a command line is a string (or a list of strings); an array of objects named "commands" is something else
    params = {
        str(k).lower()
        for k, v in _dict(schema.get("properties")).items()
        if _type_of(v) == "string" or (_type_of(v) == "array" and _type_of(_dict(v).get("items")) == "string")
    }
    shell = bool(params & _SHELL_PARAM) or bool(_SHELL_SAID.search(str(tool.get("description", ""))[:2000]))
    if name not in allow and (words & _DANGEROUS or shell):
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
    schema = _dict(inline_refs(_dict(tool.get("inputSchema"))))
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
            elif role == "patch":
                said = str(_dict(sub).get("description", ""))
                fmt = patch_format(_word_list(pointer[-1]), said, str(tool.get("description", ""))) or "codex"
                plan.leaves.append(PathLeaf(pointer, False, levels, patch=fmt))
            elif role == "object" and _free_form(sub):
                # a free-form object (``args: {}``): whatever it holds may be a path; probed at ``args.path``
                plan.leaves.append(PathLeaf((*pointer, "path"), False, (*levels, True), free=True))
            elif role in ("object", "object-array"):
                value = _filler(pointer[-1], sub)
                if role == "object-array" and value == [] and all(levels):  # "no items" may be a no-op that proves
                    value = [_object_filler(sub.get("items"))]  # nothing: one element, its keys learnt if refused
                plan.roles[pointer] = ("filler", levels, value)
            elif role in ("pattern", "content", "old", "new", "filler"):
                if role == "filler" and levels == (False,) and example_value(_describes(sub)) is not None:
                    plan.described.append(pointer)  # optional, its shape shown: sent once a call without it fails
                plan.roles[pointer] = (cast(Role, role), levels, _filler(pointer[-1], sub))
        _require_one_edit(plan)
        _mirror_patch(plan)
        if plan.access != "skip" and _dict(variant.get("properties")) and not plan.leaves:
            plan.access, plan.reason = "skip", "no path parameter"
        plans.append(plan)
        plans += _dispatched(plan, variant)
    return plans


_ACTION = re.compile(
    r"^(action|op|operation|method|verb|cmd_?name|task|mode|kind|type|subcommand|function|tool)$", re.I
)


def _free_form(schema: Any) -> bool:
    """An object whose keys the schema does not say (no ``properties``, or ``additionalProperties`` allowed)."""
    if not isinstance(schema, dict):
        return False
    props = schema.get("properties")
    return not isinstance(props, dict) or (not props and schema.get("additionalProperties") is not False)


def _dispatched(plan: ToolPlan, variant: dict[str, Any]) -> list[ToolPlan]:
    """A dispatcher (``order(action, args)``): an enum named like an action beside free-form arguments. Its first
    value is the plan itself; each other value (up to :data:`MAX_SHAPES`) is a call shape of its own, since one
    action reads a path that another ignores."""
    if not any(leaf.free for leaf in plan.leaves):
        return []
    props = _dict(variant.get("properties"))
    for name, sub in props.items():
        enum = sub.get("enum") if isinstance(sub, dict) else None
        if not _ACTION.match(str(name)) or not isinstance(enum, list) or len(enum) < 2:
            continue
        plan.shape = plan.shape or f"{name}={enum[0]}"
        plan.roles[(str(name),)] = ("filler", (True,), enum[0])
        out = []
        for value in enum[1:MAX_SHAPES]:
            roles = dict(plan.roles)
            roles[(str(name),)] = ("filler", (True,), value)
            out.append(dataclasses.replace(plan, shape=f"{name}={value}", leaves=list(plan.leaves), roles=roles))
        return out
    return []


def _mirror_patch(plan: ToolPlan) -> None:
    """A tool that takes a patch text: its other path leaves (but a working directory) name the patch's files
    (``if_match[].path``), so they get the patch's path and are not probed on their own."""
    if not any(leaf.patch for leaf in plan.leaves):
        return
    plan.mirrors = [leaf for leaf in plan.leaves if not leaf.patch and not leaf.dir_sibling]
    plan.leaves = [leaf for leaf in plan.leaves if leaf.patch or leaf.dir_sibling]


def _require_one_edit(plan: ToolPlan) -> None:
    """An editor whose old/new texts are all optional (``edits`` *or* ``old_string``/``new_string``, each
    nullable) still needs one edit to reach its path: the shallowest old text, and the new text beside it, are
    sent as if required (an array of edits gets one element). Nothing changes when an old text is required."""
    olds = [p for p, (role, _, _) in plan.roles.items() if role == "old"]
    if not olds or any(all(plan.roles[p][1]) for p in olds):
        return
    old = min(olds, key=len)
    beside = [
        p for p, (role, _, _) in plan.roles.items() if role == "new" and len(p) == len(old) and p[:-1] == old[:-1]
    ]
    pair = [old, *beside[:1]]
    for pointer in pair:
        role, required, filler = plan.roles[pointer]
        plan.roles[pointer] = (role, (True,) * len(required), filler)


def plan_tool(tool: dict[str, Any], allow: frozenset[str], write: bool) -> ToolPlan:
    """The first call shape of a tool (see :func:`plan_shapes` for all of them)."""
    return plan_shapes(tool, allow, write)[0]


PATTERN_NAME = _PATTERN  # names of parameters that take a pattern (for errors that name parameters)
CONTENT_NAME = _CONTENT  # ... and content


def role(name: str, schema: Any) -> Role | Literal["path-array", "object", "object-array", "patch"]:
    """What a parameter is by its name and schema (:func:`_role`)."""
    return _role(name, schema)


def filler(name: str, schema: Any) -> Any:
    """A harmless value of the right kind (:func:`_filler`)."""
    return _filler(name, schema)
