"""The tools of ``rootbound serve``, one module per family: what each does on a :class:`~rootbound.RootedFS`.
``reading`` (read_file, read_multiple_files, read_media_file), ``listing`` (list_roots, list_directory,
directory_tree, stat), ``searching`` (search_files, grep, find_projects), ``writing`` and ``patching`` (the
``--writable`` tools); ``registry`` is the table of all of them and :func:`call_tool` (its names load from here on
first use). What every call shares: ``specs`` (what a host is told), ``arguments`` (the schema check), ``calls``
(limits, deadline, the typed requests), ``render`` (bounded, escaped output), ``error_fixes`` (what a refusal
suggests).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rootbound.core.lazy_exports import lazy_names

if TYPE_CHECKING:
    from rootbound.workspace.tools.registry import (
        PROJECT_MARKERS,
        TOOLS,
        Budget,
        Limits,
        Media,
        ToolError,
        ToolOutput,
        ToolSpec,
        call_tool,
        run_tool,
        tool_specs,
        unknown_tool,
    )

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

# Lazy (PEP 562): a tool module importing a sibling (``tools.calls``) must not load the registry, which imports
# every tool module.
__getattr__, __dir__ = lazy_names(__name__, dict.fromkeys(__all__, "registry"))
