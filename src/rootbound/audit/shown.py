"""Text from the server under test, made safe to print: control characters, escapes and bidi overrides escaped,
length bounded. Tool names, parameter names, error messages and the server's stderr all pass through here before
they reach a terminal, a JSON report or SARIF, so a hostile server cannot print a fake verdict line, retitle the
terminal or clear the screen."""

from __future__ import annotations

import unicodedata

__all__ = ["shown"]


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if ch == "\\":
        return "\\\\"
    if code < 0x20 or code == 0x7F:
        return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, f"\\x{code:02x}")
    category = unicodedata.category(ch)
    if category[0] == "C" or category in ("Zl", "Zp"):  # controls, format (bidi overrides), unassigned, separators
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return ch


def shown(text: object, limit: int = 200) -> str:
    """``text`` with every non-printing character escaped, cut to ``limit`` characters (and said so)."""
    raw = str(text)
    cut = raw[:limit]
    out = "".join(_escape_char(ch) for ch in cut)
    if len(raw) > limit:
        out += f"…(+{len(raw) - limit} chars)"
    return out
