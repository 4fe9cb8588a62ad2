"""What a model should do next after a denial: one short clause per error class, appended to the tool error.

Why: the reader of a tool error is usually a model that will retry. A denial's fixed message names what went
wrong ("no such file or directory (not found)"); this says what call would work instead, without echoing the
input. ``docs/serve.md`` lists every tool error with its fix; ``tests/docs/test_error_table.py`` checks that
table against this module and the tools' own messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rootbound.core.errors import (
    AccessDenied,
    CrossesMount,
    DanglingSymlink,
    FileOperationFailed,
    HardLinked,
    InvalidPath,
    InvalidPattern,
    IsADirectory,
    LimitExceeded,
    MovedOutOfRoots,
    NotADirectory,
    NotAFile,
    NotText,
    OutsideRoots,
    PathExists,
    PathNotFound,
    PatternTooSlow,
    ReadOnly,
    RootChanged,
    RootsError,
    ServerBusy,
    SymlinkEscape,
    SymlinkLoop,
    TooLarge,
)
from rootbound.text.edit import EditNotFound
from rootbound.workspace.tools.calls import describe

__all__ = ["FIXES", "TOOL_FIXES", "UNRESOLVED", "explain", "fix_for"]

UNRESOLVED: Final = (
    "denied: the path could not be resolved safely: give a plain path within a root; list_roots shows them"
)
"""An operating-system or decoding failure while resolving a path: no class to name, the same next step."""

FIXES: Final[Mapping[type[RootsError], str]] = {
    # most specific first: the first class the error is an instance of wins
    SymlinkEscape: "the link's target is outside the roots; list_roots shows what may be read",
    SymlinkLoop: "the path has a symlink loop; name the file without going through the links",
    DanglingSymlink: "the link's target does not exist; write to the target's real path within the roots",
    CrossesMount: "that path is on another file system, which this server does not enter",
    HardLinked: "the file has other hard links, which this server refuses; work on a copy",
    RootChanged: "a root was moved or replaced; call list_roots to see the roots now",
    MovedOutOfRoots: "that directory is no longer within the roots; list_directory shows what the root holds now",
    OutsideRoots: "use a path within a root; list_roots shows them",
    EditNotFound: "read_file shows the current text: quote it exactly, with enough lines to be unique",
    PathNotFound: "check the name with list_directory or search_files",
    NotADirectory: "give a directory; stat shows what the path is",
    IsADirectory: "give a file, or list the directory with list_directory",
    NotAFile: "give a regular file; stat shows what the path is",
    PathExists: "choose a name that does not exist",
    ReadOnly: "this server is read-only: the operator starts it with rootbound serve --writable",
    AccessDenied: "the server's user may not access it; choose another path",
    PatternTooSlow: "",  # its message already says: simplify it
    InvalidPattern: "fix the pattern's syntax",
    TooLarge: "read part of it: read_file with start_line/end_line or offset/length",
    LimitExceeded: "narrow the path or pattern",
    NotText: "the file is not UTF-8 text: stat shows its type",
    InvalidPath: "give a path relative to the first root, an absolute path, or a file:// URI within a root",
    ServerBusy: "nothing was changed; retry the same call in a moment",
    FileOperationFailed: "the file system failed (not the call); retrying later may work",
}
"""The next step after a denial, by class; the first class (in this order) the error is an instance of."""

TOOL_FIXES: Final[Mapping[tuple[str, type[RootsError]], str]] = {
    ("write_file", PathExists): "pass overwrite=true to replace it, or choose another name",
    ("move_file", PathExists): "pass overwrite=true to replace a regular file, or choose another destination",
    ("write_file", PathNotFound): "the parent directory does not exist: pass create_parents=true to create it",
    ("edit_file", PathNotFound): "edit_file changes an existing file; create it with write_file",
    ("grep", InvalidPattern): "regex=true takes RE2 syntax; regex=false (the default) finds the text literally",
    ("search_files", InvalidPattern): "a glob takes *, ?, ** and [...] with a closing ]",
}
"""Where one tool's next step differs from its class's."""


def fix_for(tool: str, error: RootsError) -> str:
    """The clause to append to ``error``'s message from ``tool``: ``""`` when its message already says it."""
    if tool == "search_files" and isinstance(error, InvalidPattern) and error.message != InvalidPattern.default_message:
        return ""  # the glob checker's own words already say how to fix the glob
    for (name, kind), fix in TOOL_FIXES.items():
        if name == tool and isinstance(error, kind):
            return fix
    for kind, fix in FIXES.items():
        if isinstance(error, kind):
            return fix
    return ""


def explain(tool: str, error: RootsError) -> str:
    """A denial as a tool error: ``MESSAGE: NEXT STEP (REASON)``, the reason class last as in every denial."""
    fix = fix_for(tool, error)
    message = describe(error)
    reason = f" ({error.reason})"
    if not fix:
        return message
    if error.reason and message.endswith(reason):
        return f"{message[: -len(reason)]}: {fix}{reason}"
    return f"{message}: {fix}"
