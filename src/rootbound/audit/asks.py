"""What a tool asks for, learnt from the tool itself rather than from what the audit expects a server to look like:
the file type it wants (its description, its parameters' descriptions, patterns, enums and formats, its
parameter names, and what its refusals say or quote as an example), and a flag its refusal names ("Pass
confirm=True to proceed", ``force``, ``overwrite``), which the control then sets on a retry.
"""

from __future__ import annotations

import re
from typing import Any

from rootbound.audit.filetypes import REGISTRY, named_type
from rootbound.audit.tools import ToolPlan

__all__ = ["FLAG_WORDS", "refusal_flag", "set_flag", "shape_for", "wanted_type"]

# the typed canaries every trap holds from the start: extension -> shape
_BUILT_IN = {"png": "image", "pdf": "pdf", "docx": "docx", "md": "md", "json": "json"}
FLAG_WORDS = ("confirm", "confirmed", "force", "overwrite", "yes", "approve", "approved", "i_understand")
_FLAG = re.compile(
    r"""(?<![A-Za-z0-9_])["'`]?(""" + "|".join(FLAG_WORDS) + r""")["'`]?\s*(?:=|:|to)\s*["'`]?(true|yes|1)\b""",
    re.IGNORECASE,
)


def _texts(schema: Any, depth: int = 0) -> list[str]:
    """Descriptions, patterns, enum values, formats and property names of a schema, nested."""
    if depth > 4 or not isinstance(schema, dict):
        return []
    out = [str(schema.get(k, "")) for k in ("description", "pattern", "format", "title") if schema.get(k)]
    out += [str(v) for v in schema.get("enum", [])[:20]] if isinstance(schema.get("enum"), list) else []
    props = schema.get("properties")
    if isinstance(props, dict):
        for name, sub in list(props.items())[:40]:
            out.append(str(name).replace("_", " "))
            out += _texts(sub, depth + 1)
    if isinstance(schema.get("items"), dict):
        out += _texts(schema["items"], depth + 1)
    return out


def wanted_type(tool: dict[str, Any]) -> str | None:
    """The file type (a registered extension) a tool's own words name, or None: its description first, then its
    schema's descriptions, patterns, enums, formats and parameter names, then its name."""
    found = named_type(str(tool.get("description", "")))
    if found is None:
        found = named_type("\n".join(_texts(tool.get("inputSchema"))))
    if found is None:  # last, the tool's own name (``get_archive_info``)
        found = named_type(re.sub(r"[^A-Za-z0-9]+", " ", str(tool.get("name", ""))))
    return found


def shape_for(ext: str) -> str:
    """The control shape of a type: a built-in typed canary's, else the extension itself (planted on demand)."""
    return _BUILT_IN.get(ext, ext)


def refusal_flag(text: str) -> str | None:
    """A flag the refusal says to set (``confirm=True``, ``"force": true``, "set overwrite to true")."""
    match = _FLAG.search(text[:4000])
    return match.group(1) if match else None


def set_flag(plan: ToolPlan, name: str) -> bool:
    """Send ``name`` = true on every call of the plan from now on; False if it was already sent so (or the name
    is a path parameter)."""
    pointer = (name,)
    if any(leaf.pointer == pointer for leaf in plan.leaves):
        return False
    current = plan.roles.get(pointer)
    if current is not None and current[2] is True and current[1] == (True,):
        return False
    plan.roles[pointer] = ("filler", (True,), True)
    return True


def known_types() -> list[str]:
    return sorted(REGISTRY)
