"""Reading a tool's ``inputSchema`` whatever its shape: local ``$ref``s inlined (bounded), a leaf's JSON type,
nullable wrappers unwrapped, ``oneOf``/``anyOf`` alternatives as separate call shapes."""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_SHAPES", "dict_of", "inline_refs", "non_null", "type_of", "variants"]

MAX_SHAPES = 4  # oneOf/anyOf alternatives tried per tool


def type_of(schema: Any) -> str:
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
            return type_of(non_null[0] if non_null else alts[0])
    return "string"


_REF_DEPTH = 8  # $ref hops followed (a self-referencing schema stops here)


_REF_NODES = 2000  # schema nodes copied while inlining: a hostile schema cannot make planning unbounded


def inline_refs(schema: Any) -> Any:
    """The schema with local ``$ref``s (``#/$defs/X``, ``#/definitions/X``) replaced by what they name, so that
    a ``$ref``'d enum or object is filled like an inline one. Bounded in depth and size; unknown refs stay."""
    root = schema if isinstance(schema, dict) else {}
    budget = [_REF_NODES]

    def target(ref: str) -> Any:
        if not ref.startswith("#/"):
            return None
        here: Any = root
        for part in ref[2:].split("/"):
            here = here.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(here, dict) else None
        return here

    def walk(node: Any, hops: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            return node
        if isinstance(node, list):
            return [walk(item, hops) for item in node[:64]]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and hops < _REF_DEPTH:
            found = target(ref)
            if isinstance(found, dict):
                merged = {**found, **{k: v for k, v in node.items() if k != "$ref"}}
                return walk(merged, hops + 1)
        return {k: walk(v, hops) for k, v in node.items() if k not in ("$defs", "definitions")}

    return walk(schema, 0)


def non_null(schema: Any) -> Any:
    """A nullable schema (``anyOf``/``oneOf`` of one kind and ``null``, as pydantic writes ``X | None``) as that
    kind, with the outer description kept: an optional array of objects is walked like a plain one."""
    if not isinstance(schema, dict):
        return schema
    for key in ("anyOf", "oneOf"):
        alts = schema.get(key)
        if not isinstance(alts, list):
            continue
        kinds = [a for a in alts if not (isinstance(a, dict) and a.get("type") == "null")]
        if len(kinds) == 1 and len(alts) == 2 and isinstance(kinds[0], dict):
            outer = {k: v for k, v in schema.items() if k != key}
            return {**outer, **kinds[0]}
    return schema


def variants(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The call shapes: the schema itself, or one per ``oneOf``/``anyOf`` alternative merged into its base."""
    for key in ("oneOf", "anyOf"):
        alts = schema.get(key)
        if not isinstance(alts, list) or not alts:
            continue
        base_props: dict[str, Any] = dict_of(schema.get("properties"))
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


def dict_of(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
