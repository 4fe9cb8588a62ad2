"""The tools of ``rootbound serve``: what each does on a :class:`~rootbound.RootedFS`, and its input schema.

Built only on rootbound's public core: every path a tool touches goes through the confined file system, so the
tools cannot do anything the boundary would not allow. Output is bounded; a cut is marked, never silent.
"""

from __future__ import annotations

import json
import stat as stat_module
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from ..errors import InvalidPath, LimitExceeded, NotText, RootsError
from ..fs import RootedFS

__all__ = ["PROJECT_MARKERS", "TOOLS", "Limits", "ToolError", "ToolSpec", "run_tool"]

PROJECT_MARKERS: Final = ("pyproject.toml", "package.json", "Cargo.toml", "go.mod", "pom.xml", ".git")
TRUNCATED: Final = "[truncated: {shown} shown; narrow the request]"


class ToolError(Exception):
    """A tool failure whose message is safe to show (fixed text, never the caller's input)."""


@dataclass(frozen=True)
class Limits:
    """Bounds on what one tool call reads or returns."""

    max_read: int = 1024 * 1024
    max_results: int = 500
    max_matches: int = 200
    max_output: int = 256 * 1024


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    writes: bool = False


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_PATH = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4096,
    "description": "An absolute path, a file:// URI, or a path relative to the first root.",
}
_OPTIONAL_DIR = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4096,
    "description": "Directory to search below: absolute, file:// URI, or relative to the first root. "
    "Default: every root.",
}

TOOLS: Final = (
    ToolSpec(
        "list_roots",
        "The directories and files this server may access: the client's roots intersected with the operator's "
        "allowlist. Roots the server refused are listed with the reason.",
        _schema({}, []),
    ),
    ToolSpec(
        "list_directory",
        "The entries of a directory inside the roots, one per line; directories end with '/', symlinks with '@'.",
        _schema({"path": _PATH}, ["path"]),
    ),
    ToolSpec(
        "read_file",
        "The text of a file inside the roots. Use offset and length (bytes) to read part of a large file.",
        _schema(
            {
                "path": _PATH,
                "offset": {"type": "integer", "minimum": 0, "description": "First byte to read (default 0)."},
                "length": {"type": "integer", "minimum": 1, "description": "How many bytes to read at most."},
            },
            ["path"],
        ),
    ),
    ToolSpec(
        "stat",
        "Type, size, permissions and modification time of a path inside the roots (symlinks are not followed).",
        _schema({"path": _PATH}, ["path"]),
    ),
    ToolSpec(
        "search_files",
        "Paths whose name matches a glob ('*.py', 'test_*'), at any depth, like find -name. A pattern with '/' "
        "matches paths relative to the search directory instead ('src/**/*.py').",
        _schema(
            {
                "pattern": {"type": "string", "minLength": 1, "maxLength": 1024, "description": "A relative glob."},
                "path": _OPTIONAL_DIR,
            },
            ["pattern"],
        ),
    ),
    ToolSpec(
        "grep",
        "Lines containing a text (or matching a regular expression) in files inside the roots, as path:line:text.",
        _schema(
            {
                "pattern": {"type": "string", "minLength": 1, "maxLength": 1024, "description": "Text to find."},
                "path": _OPTIONAL_DIR,
                "regex": {"type": "boolean", "description": "Treat the pattern as a Python regex (default false)."},
            },
            ["pattern"],
        ),
    ),
    ToolSpec(
        "find_projects",
        "Directories inside the roots that hold a project marker: " + ", ".join(PROJECT_MARKERS) + ".",
        _schema({}, []),
    ),
)


def _bounded(lines: list[str], limits: Limits, *, total: int | None = None, more: bool = False) -> str:
    """Join lines, cutting at the output limit; any cut (or known excess) gets a visible marker."""
    out: list[str] = []
    size = 0
    for line in lines:
        size += len(line) + 1
        if size > limits.max_output:
            break
        out.append(line)
    if total is not None and total > len(out):
        out.append(TRUNCATED.format(shown=f"{len(out)} of {total}"))
    elif more or len(out) < len(lines):
        out.append(TRUNCATED.format(shown=f"the first {len(out)}"))
    return "\n".join(out)


def _str_arg(args: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    value = args.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise ToolError(f"argument '{name}' must be a non-empty string")
    return value


def _int_arg(args: Mapping[str, Any], name: str, *, minimum: int) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ToolError(f"argument '{name}' must be an integer >= {minimum}")
    return value


def _targets(fs: RootedFS, path: str | None) -> list[object]:
    """The search starting points: the named directory, or every effective root."""
    if path is not None:
        return [path]
    return [root.path for root in fs.boundary if root.kind == "dir"]


def list_roots(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> str:
    lines = []
    for root in fs.boundary:
        label = f" ({root.name})" if root.name else ""
        narrowed = " [narrowed to the allowlist]" if root.narrowed else ""
        lines.append(f"{root.uri}{label} {root.kind}{narrowed}")
    if not lines:
        lines.append("(no roots: every path is denied)")
    for dropped in fs.boundary.dropped:
        lines.append(f"refused a client root: {dropped.reason}")
    source = context.get("source")
    if source:
        lines.append(f"source: {source}")
    return "\n".join(lines)


def list_directory(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> str:
    path = _str_arg(args, "path")
    entries = []
    for entry in fs.scandir(path):
        suffix = {"dir": "/", "symlink": "@"}.get(entry.kind, "")
        entries.append(entry.path.name + suffix)
    if not entries:
        return "(empty directory)"
    return _bounded(entries[: limits.max_results], limits, total=len(entries))


def read_file(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> str:
    path = _str_arg(args, "path")
    offset = _int_arg(args, "offset", minimum=0) or 0
    length = _int_arg(args, "length", minimum=1)
    want = min(length or limits.max_read, limits.max_read)
    data, size = fs.read_range(path, offset, want)
    if b"\x00" in data:
        raise NotText()  # binary: a model gains nothing from it, and NULs break many consumers
    text = data.decode("utf-8", "replace")
    end = offset + len(data)
    if end < size:
        text += f"\n[truncated: bytes {offset}-{end} of {size}; read on with offset={end}]"
    return text


def stat(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> str:
    path = _str_arg(args, "path")
    st = fs.stat(path, follow_symlinks=False)
    kind = (
        "directory"
        if stat_module.S_ISDIR(st.st_mode)
        else "file"
        if stat_module.S_ISREG(st.st_mode)
        else "symlink"
        if stat_module.S_ISLNK(st.st_mode)
        else "other"
    )
    info = {
        "path": str(fs.boundary.resolve(path, must_exist=True) if kind != "symlink" else path),
        "type": kind,
        "size": st.st_size,
        "mode": stat_module.filemode(st.st_mode),
        "modified": datetime.fromtimestamp(st.st_mtime, tz=timezone.utc).isoformat(timespec="seconds"),
        "links": st.st_nlink,
    }
    if kind == "symlink":
        info.pop("path")
    # json.dumps(info, indent=1), written out: ``indent`` forces the pure-Python encoder (a quarter of the call).
    return "{\n" + ",\n".join(f" {json.dumps(key)}: {json.dumps(value)}" for key, value in info.items()) + "\n}"


def search_files(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> str:
    pattern = _str_arg(args, "pattern")
    assert pattern is not None
    found: list[str] = []
    truncated = False
    for start in _targets(fs, _str_arg(args, "path", required=False)):
        room = limits.max_results - len(found)
        if "/" in pattern:
            try:
                found.extend(map(str, fs.glob(pattern, start, max_results=room)))
            except LimitExceeded:
                raise ToolError(f"more than {limits.max_results} matches; narrow the pattern or the path") from None
            continue
        result = fs.search(pattern, start, max_results=room)
        found.extend(result.found)
        if result.truncated:
            truncated = True
            break
    if not found:
        return "(no matches)"
    return _bounded(found, limits, more=truncated)


def grep(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> str:
    pattern = _str_arg(args, "pattern")
    assert pattern is not None
    regex = args.get("regex", False)
    if not isinstance(regex, bool):
        raise ToolError("argument 'regex' must be a boolean")
    lines: list[str] = []
    truncated = False
    for start in _targets(fs, _str_arg(args, "path", required=False)):
        result = fs.grep(pattern, start, regex=regex, max_matches=limits.max_matches - len(lines))
        lines.extend(f"{m.path}:{m.line_number}:{m.line}" for m in result.matches)
        if result.truncated:
            truncated = True
            break
    if not lines:
        return "(no matches)"
    return _bounded(lines, limits, more=truncated)


def find_projects(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> str:
    projects: dict[Path, list[str]] = {}
    markers = frozenset(PROJECT_MARKERS)
    more = False
    for root in fs.boundary:
        if root.kind != "dir" or more:
            continue
        for entry in fs.walk(root.path, max_depth=8, prune=(".git", "node_modules", ".venv", "__pycache__")):
            if entry.path.name in markers:
                if entry.path.parent not in projects and len(projects) >= limits.max_results:
                    more = True
                    break
                projects.setdefault(entry.path.parent, []).append(entry.path.name)
    if not projects:
        return "(no projects found)"
    lines = [f"{path}  [{', '.join(sorted(names))}]" for path, names in sorted(projects.items())]
    return _bounded(lines, limits, more=more)


ToolFunction = Callable[[RootedFS, Mapping[str, Any], Limits, Mapping[str, Any]], str]
_IMPLEMENTATIONS: Final[dict[str, ToolFunction]] = {
    "list_roots": list_roots,
    "list_directory": list_directory,
    "read_file": read_file,
    "stat": stat,
    "search_files": search_files,
    "grep": grep,
    "find_projects": find_projects,
}


def run_tool(
    name: str, fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any] | None = None
) -> str:
    """Run one tool; a denial or failure raises :class:`ToolError` with a message naming the reason class."""
    function = _IMPLEMENTATIONS.get(name)
    if function is None:
        from .write_tools import WRITE_IMPLEMENTATIONS, call_write_tool  # here: it builds on this module's types

        if name in WRITE_IMPLEMENTATIONS:
            return call_write_tool(name, fs, args, limits, context).text
        raise ToolError("unknown tool")
    try:
        return function(fs, args, limits, context or {})
    except ToolError:
        raise
    except RootsError as error:
        raise ToolError(describe(error)) from None
    except (OSError, ValueError, UnicodeError):
        raise ToolError("denied: the path could not be resolved safely") from None


def describe(error: RootsError) -> str:
    """The user-facing text for a denial: its fixed message and reason class, never the input."""
    if isinstance(error, InvalidPath):
        return f"denied: invalid path ({error.reason})"
    return f"{error.message} ({error.reason})" if error.reason else error.message
