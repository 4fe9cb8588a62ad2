"""Tools that can reach files without a path parameter: a script, code, an expression, and SQL or command lines the
audit has no statement family for (:mod:`.statements` probes ``query``/``sql`` parameters that take SQL and
``command``/``cmd`` parameters, :mod:`.text_plans`). Such a tool is a gap with its reason, never part of a clean
verdict: a server's ``run_script`` reads any file through ``open('/etc/...')``. So is a tool that reads by an id
another tool returns for a path (``read_doc(doc_id)`` beside ``open_doc(path)``): the audit does not probe that
chain (:func:`chained_id_reach`).
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["FREE_TEXT", "chained_id_reach", "free_text_reach"]

FREE_TEXT: Final = frozenset(
    ("query", "sql", "statement", "statements", "script", "code", "expression", "command", "cmd", "commands")
)
"""Parameter names of free-form text a server runs (checked case-insensitively)."""


def free_text_reach(tool: dict[str, Any], reason: str, takes_path: bool) -> str:
    """Why ``tool`` can name files though the audit does not probe it (``""`` when it cannot, or is probed)."""
    name = str(tool.get("name", ""))
    if reason.startswith("looks like exec"):
        return f"it runs commands, which can name any path: --allow-tool {name} to test it"
    if takes_path:
        return ""
    schema = tool.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return ""
    for param, value in properties.items():
        kind = value.get("type") if isinstance(value, dict) else None
        if str(param).lower() in FREE_TEXT and (kind == "string" or (isinstance(kind, list) and "string" in kind)):
            return f"its {str(param)[:40]!r} is free-form text (SQL, code, a command) that can name files; not probed"
    return ""


# ``doc_id``, ``docId``, ``document-handle``, ``fileRef``: the stem names the object, the suffix says it is an id
_ID = re.compile(r"^(?P<stem>[a-z][a-z0-9]*?)[_-]?(?:id|handle|ref)$", re.IGNORECASE)


def _words(name: str) -> set[str]:
    return {w.lower() for w in re.split(r"[^A-Za-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)) if w}


def chained_id_reach(tool: dict[str, Any], path_tools: list[str]) -> str:
    """Why ``tool`` can read files through an id parameter (``""`` if it has none): a string ``…_id`` whose stem
    names another tool that takes a path (``doc_id``, ``open_doc``), or whose description (or its tool's) names
    such a tool ("an id that open_doc returned"). The file was reached through that tool's path; what the id
    reads later is not probed through that chain: a gap, never "not a path tool". An id tied to no path tool
    (``issue_id`` of a remote tracker) is nothing to the audit."""
    name = str(tool.get("name", ""))
    others = [n for n in path_tools if n and n != name]
    schema = tool.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not others or not isinstance(properties, dict):
        return ""
    for param, value in properties.items():
        value = value if isinstance(value, dict) else {}
        kind = value.get("type")
        match = _ID.match(str(param))
        if match is None or not (kind == "string" or (isinstance(kind, list) and "string" in kind)):
            continue
        said = f"{value.get('description') or ''} {tool.get('description') or ''}"
        stem = match.group("stem").lower()
        via = next((n for n in others if re.search(rf"\b{re.escape(n)}\b", said) or stem in _words(n)), None)
        if via is not None:
            return (
                f"its {str(param)[:40]!r} is an id another tool returns ({via[:40]!r} takes a path): not probed "
                "through that chain"
            )
    return ""
