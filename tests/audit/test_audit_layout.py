"""The audit's own layers stay readable: no module in ``src/rootbound/audit`` over 600 lines, no function there
with more than 8 parameters (``self`` and ``cls`` not counted)."""

from __future__ import annotations

import ast
from pathlib import Path

import rootbound.audit

AUDIT = Path(rootbound.audit.__file__).parent
MAX_LINES = 600
MAX_PARAMS = 8


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = node.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def test_no_audit_module_is_over_600_lines() -> None:
    long = {p.name: n for p in sorted(AUDIT.glob("*.py")) if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}, long


def test_no_audit_function_takes_more_than_8_parameters() -> None:
    wide = []
    for path in sorted(AUDIT.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _params(node) > MAX_PARAMS:
                wide.append(f"{path.name}:{node.lineno} {node.name} ({_params(node)})")
    assert wide == [], wide
