"""Call shapes for tools whose paths live inside an SQL statement or a command line (:mod:`.statements`): one
:class:`~rootbound.audit.tools.ToolPlan` per statement family, its one path leaf the statement or command.

Before, such a tool had "no path parameter" (its ``query`` a pattern, its ``command`` exec-like, skipped): a server
that reads, lists and writes anywhere through SQL or ``cat`` was a gap at best. Now each family is controlled with
W's path inside it and probed with the catalogue of its shape; a family the engine has no statement for is a
skipped shape with its reason (a gap), never "not a path tool".
"""

from __future__ import annotations

from typing import Any

from rootbound.audit.schema import dict_of, non_null
from rootbound.audit.statements import (
    cmd_families,
    command_words,
    family_shape,
    sql_dialect,
    sql_families,
    text_kind,
    writes,
)
from rootbound.audit.tools import Access, PathLeaf, ToolPlan

__all__ = ["text_shapes"]

MAX_TEXT_PARAMS = 2  # text parameters per tool that get families (a hostile schema cannot multiply the shapes)


def text_shapes(tool: dict[str, Any], plans: list[ToolPlan], write: bool, allow: frozenset[str]) -> list[ToolPlan]:
    """``plans`` with a shape per statement family of each SQL or command-line parameter of ``tool`` (top-level
    string parameters only); the tool's other shapes stay when they have path leaves of their own. A command line
    is probed only where the tool lists the commands it allows (a restricted runner, whose list is its claim) or
    ``--allow-tool`` names it: any other command tool stays exec-like, never called."""
    schema = dict_of(tool.get("inputSchema"))
    props = dict_of(schema.get("properties"))
    raw = schema.get("required")
    required: list[Any] = raw if isinstance(raw, list) else []
    found = [(str(n), non_null(s)) for n, s in list(props.items())[:64]]
    listed = command_words(str(tool.get("description", ""))[:4000]) != ("", "")
    restricted = listed or str(tool.get("name", "")) in allow
    found = [(n, s) for n, s in found if text_kind(n, s, tool) == "sql" or (text_kind(n, s, tool) and restricted)]
    found = found[:MAX_TEXT_PARAMS]
    if not found or not plans:
        return plans
    base = plans[0]
    names = {(n,) for n, _ in found}
    out = [p for p in plans if p.leaves and not any(leaf.pointer in names for leaf in p.leaves)]
    for name, sub in found:
        kind = text_kind(name, sub, tool)
        desc = str(dict_of(sub).get("description", ""))
        fams, gap = sql_families(sql_dialect(tool, desc)) if kind == "sql" else cmd_families(tool, desc)
        roles = {p: r for p, r in base.roles.items() if p not in names}
        for fam in fams:
            # the audit knows what its statement does: a read or a listing is sent without --write
            access: Access = "write" if writes(fam) else "read"
            reason = ""
            if access == "write" and not write:
                access, reason = "skip", "may modify files (the audit calls it only with --write)"
            leaf = PathLeaf((name,), False, (name in required,), text=fam)
            shape = f"{kind}={fam.split(':', 1)[1]}"
            out.append(ToolPlan(base.name, access, [leaf], dict(roles), shape, reason, base.by_name))
        if gap:
            leaf = PathLeaf((name,), False, (name in required,), text="")
            kinds = "list" if kind == "sql" else "read/list"
            out.append(ToolPlan(base.name, "skip", [leaf], dict(roles), f"{kind}={kinds}", gap, base.by_name))
        elif kind == "cmd":
            leaf = PathLeaf((name,), False, (name in required,), text="")
            gap = "a command line that writes is never sent (the audit runs read-only commands only): not probed"
            out.append(ToolPlan(base.name, "skip", [leaf], dict(roles), f"{kind}=write", gap, base.by_name))
    return out or plans


def text_family_shape(plan: ToolPlan, param: str) -> str:
    """The shape of path the family of ``param`` needs (``file``, ``dir``, ``new``), ``""`` for a plain path."""
    leaf = next((lf for lf in plan.leaves if lf.name == param), None)
    return family_shape(leaf.text) if leaf is not None and leaf.text else ""
