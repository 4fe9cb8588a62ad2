"""``docs/serve.md``'s tables of tool errors are the code's: every message a tool can answer is listed with what
to do next, no listed message is gone from the code, and the denials' next steps are ``error_fixes``' own."""

from __future__ import annotations

import re
from pathlib import Path

from rootbound.workspace.tools.error_fixes import FIXES, TOOL_FIXES
from tests.docs.error_templates import tool_error_templates

DOC = Path(__file__).resolve().parents[2] / "docs" / "serve.md"


def _table(heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first table at or after ``heading`` (its header and rule left out)."""
    text = DOC.read_text()
    start = text.index(heading)
    rows = []
    for line in text[start:].splitlines():
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
        elif rows:
            break
    assert rows[1][0].startswith("---")
    return rows[2:]


def test_every_tool_error_is_listed_with_what_to_do() -> None:
    rows = _table("## Tool errors")
    listed = [re.fullmatch(r"`(.+)`", row[0]) for row in rows]
    assert all(listed), [row[0] for row, match in zip(rows, listed, strict=True) if not match]
    documented = {match.group(1) for match in listed if match}
    code = tool_error_templates()
    assert sorted(code - documented) == [], "add these to docs/serve.md"
    assert sorted(documented - code) == [], "gone from the code: remove from docs/serve.md"
    assert all(len(row) == 2 and row[1] for row in rows)


def test_the_denials_table_is_error_fixes() -> None:
    rows = _table("| class | message | next step |")
    expected = [
        [f"`{kind.__name__}`", kind.default_message, fix or "(its message says it)"] for kind, fix in FIXES.items()
    ]
    assert rows == expected
    rows = _table("| tool | class | next step |")
    assert rows == [[f"`{tool}`", f"`{kind.__name__}`", fix] for (tool, kind), fix in TOOL_FIXES.items()]


def test_the_templates_are_read_from_the_code() -> None:
    """The reader finds what it must (so an empty set cannot pass the test above)."""
    templates = tool_error_templates()
    assert "unknown tool: tools/list names the tools this server offers" in templates
    assert "invalid arguments: unexpected argument '…' in …: it belongs in …" in templates
    assert "argument '…' must be a boolean" in templates
    assert len(templates) > 40
