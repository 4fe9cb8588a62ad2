"""The table of ``rootbound serve``'s tools and :func:`call_tool`, the one way a tool runs: a denial or failure
becomes a :class:`ToolError` naming its reason class, never the caller's input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from rootbound.core.call_budget import checking
from rootbound.core.errors import OutsideRoots, RootsError
from rootbound.search.rooted_fs import RootedFS
from rootbound.workspace.tools.answer_fit import within_cap
from rootbound.workspace.tools.calls import (
    Budget,
    Limits,
    Media,
    ToolError,
    ToolOutput,
    budget_of,
    describe,
)
from rootbound.workspace.tools.error_fixes import UNRESOLVED, explain
from rootbound.workspace.tools.listing import directory_tree, list_directory, list_roots, stat
from rootbound.workspace.tools.reading import read_file, read_media_file, read_multiple_files
from rootbound.workspace.tools.searching import find_projects, grep, search_files
from rootbound.workspace.tools.specs import PROJECT_MARKERS, TOOLS, ToolSpec
from rootbound.workspace.tools.walk_scope import no_roots
from rootbound.workspace.tools.writing import WRITE_IMPLEMENTATIONS, WRITE_TOOLS

__all__ = [
    "PROJECT_MARKERS",
    "TOOLS",
    "Budget",
    "Limits",
    "Media",
    "ToolError",
    "ToolOutput",
    "ToolSpec",
    "call_tool",
    "run_tool",
    "tool_specs",
    "unknown_tool",
]


ToolFunction = Callable[[RootedFS, Mapping[str, Any], Limits, Mapping[str, Any]], ToolOutput]


_IMPLEMENTATIONS: Final[dict[str, ToolFunction]] = {
    "list_roots": list_roots,
    "list_directory": list_directory,
    "directory_tree": directory_tree,
    "read_file": read_file,
    "read_multiple_files": read_multiple_files,
    "read_media_file": read_media_file,
    "stat": stat,
    "search_files": search_files,
    "grep": grep,
    "find_projects": find_projects,
    **WRITE_IMPLEMENTATIONS,
}


UNKNOWN_TOOL: Final = "unknown tool: tools/list names the tools this server offers"
READ_ONLY_SERVER: Final = (
    "{} is a writing tool and this server is read-only: the operator starts it with rootbound serve --writable "
    "to offer the writing tools"
)


def unknown_tool(name: str) -> str:
    """The error for a tool this server does not offer: a writing tool names the flag that would offer it (the
    name shown is our own constant, never the caller's string)."""
    known = next((tool for tool in WRITE_IMPLEMENTATIONS if tool == name), None)
    return READ_ONLY_SERVER.format(known) if known is not None else UNKNOWN_TOOL


def call_tool(
    name: str,
    fs: RootedFS,
    args: Mapping[str, Any],
    limits: Limits,
    context: Mapping[str, Any] | None = None,
) -> ToolOutput:
    """Run one tool; a denial or failure raises :class:`ToolError` with a message naming the reason class."""
    function = _IMPLEMENTATIONS.get(name)
    if function is None:
        raise ToolError(unknown_tool(name))
    context = context or {}
    if "budget" not in context:  # a library caller: the deadline is the one in its limits, from now
        context = {**context, "budget": Budget(limits.deadline)}
    try:
        with checking(budget_of(context).check):  # every loop below checks the call's deadline (issue 48 #5)
            return within_cap(function(fs, args, limits, context), limits.max_output)
    except ToolError:
        raise
    except RootsError as error:
        if not len(fs.boundary) and isinstance(error, OutsideRoots):
            raise ToolError(f"{describe(error)}: {no_roots(context)}") from None
        raise ToolError(explain(name, error)) from None
    except (OSError, ValueError, UnicodeError):
        raise ToolError(UNRESOLVED) from None


def run_tool(
    name: str, fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any] | None = None
) -> str:
    """:func:`call_tool`'s text."""
    return call_tool(name, fs, args, limits, context).text


def tool_specs(writable: bool) -> Sequence[ToolSpec]:
    """The tools a server offers: the write tools only when ``writable``."""
    return [*TOOLS, *WRITE_TOOLS] if writable else list(TOOLS)
