"""The tool error messages ``rootbound serve`` can answer, read from its source as templates (``…`` for a value).

Read from the code (the calls that raise or return a tool error, and the argument checker's phrases), so the table
in ``docs/serve.md`` cannot list an error the code no longer has, nor miss one it gained.
"""

from __future__ import annotations

import ast
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parents[2] / "src" / "rootbound" / "workspace"
RAISERS = frozenset({"ToolError", "_error", "_tool_error", "InvalidArguments", "RootsRefused", "Cancelled"})
"""Calls whose first argument is the text a client gets as a tool error."""
FORMATTED = frozenset({"UNKNOWN_TOOL", "READ_ONLY_SERVER", "UNRESOLVED", "NO_ROOTS_HELP", "NO_ROOTS_FIX"})
"""Module constants a tool error is built from by a function call (``unknown_tool``) or imported by name."""


def _template(node: ast.AST | None, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace("{}", "…")
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)  # type: ignore[misc]
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _constants(tree: ast.Module) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        text = _template(value, found)
        if isinstance(target, ast.Name) and text is not None:
            found[target.id] = text
    return found


def _argument_checks(tree: ast.Module) -> set[str]:
    """The schema checker's messages: what ``_describe`` and ``_unexpected`` return, and its phrase table."""
    found: set[str] = set()
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef) or function.name not in ("_describe", "_unexpected"):
            continue
        prefix = "invalid arguments: " if function.name == "_unexpected" else ""
        for node in ast.walk(function):
            if isinstance(node, ast.Return) and node.value is not None:
                values = [node.value]
                while isinstance(values[-1], ast.IfExp):  # a conditional message: each branch
                    branch = values.pop()
                    values += [branch.body, branch.orelse]  # type: ignore[attr-defined]
                found.update(prefix + text for text in (_template(value, {}) for value in values) if text is not None)
            if isinstance(node, ast.Dict) and function.name == "_describe":
                for value in node.values:
                    phrase = _template(value, {})
                    if phrase is not None:
                        found.add(f"invalid arguments: … {phrase}")
    return found


def tool_error_templates() -> set[str]:
    templates: set[str] = set()
    for path in sorted(WORKSPACE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        constants = _constants(tree)
        templates.update(text for name, text in constants.items() if name in FORMATTED)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in RAISERS and node.args:
                text = _template(node.args[0], constants)
                if text is not None:
                    templates.add(text)
        if path.name == "arguments.py":
            templates |= _argument_checks(tree)
    return {text for text in templates if _words(text)}


def _words(text: str) -> str:
    """What a template says besides its values: a template of values alone (``…: …``) joins other messages."""
    return text.replace("invalid arguments", "").strip(" …:")
