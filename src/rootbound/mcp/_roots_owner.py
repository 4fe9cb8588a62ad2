"""Which object stands behind a session's roots callback: the rule both SDK majors' client modules apply.

A session's roots callback may be a provider's bound method; or a framework's wrapper (a closure, like fastmcp's
``create_roots_callback``) around a provider's roots handler or its ``list_roots``; or a bound method of a framework
object that keeps a provider's callback and delegates to it (mcp-use's connector stores ``list_roots_callback`` and
answers through it). One level deep, never a guess further. SDK-free: it reads only Python's own attributes.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["owner_behind"]


def owner_behind(callback: object, is_owner: Callable[[object], bool]) -> object | None:
    """The object ``is_owner`` accepts behind ``callback`` by the rule above, or ``None``."""

    def accepted(candidate: object) -> bool:
        return not isinstance(candidate, type) and is_owner(candidate)

    owner: object = getattr(callback, "__self__", None)
    if owner is not None and accepted(owner):
        return owner
    held: list[object] = []
    for cell in getattr(callback, "__closure__", None) or ():
        try:
            held.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    if owner is not None and not isinstance(owner, type):
        held.extend(getattr(owner, "__dict__", {}).values())
    for inner in held:
        if accepted(inner):
            return inner
        inner_owner: object = getattr(inner, "__self__", None)
        if inner_owner is not None and accepted(inner_owner):
            return inner_owner
    return None
