"""Tools that can reach files without a path parameter: a script, code, an expression, and SQL or command lines the
audit has no statement family for (:mod:`.statements` probes ``query``/``sql`` parameters that take SQL and
``command``/``cmd`` parameters, :mod:`.text_plans`). Such a tool is a gap with its reason, never part of a clean
verdict: a server's ``run_script`` reads any file through ``open('/etc/...')``.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["FREE_TEXT", "free_text_reach"]

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
