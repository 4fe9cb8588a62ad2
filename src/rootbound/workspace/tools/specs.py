"""What ``rootbound serve`` tells a host about each tool: description, input schema, output schema, annotations.

Why a module of its own: this is the contract a host and a model read (``tools/list``) — what a path is relative
to, what each limit is, what a structured result looks like — and it changes for different reasons than the code
that runs the tools (:mod:`rootbound.workspace.tools`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["PROJECT_DEPTH", "PROJECT_MARKERS", "PROJECT_PRUNED", "TOOLS", "ToolSpec"]

PROJECT_MARKERS: Final = ("pyproject.toml", "package.json", "Cargo.toml", "go.mod", "pom.xml", ".git")
PROJECT_DEPTH: Final = 8
"""How deep ``find_projects`` looks below each root."""
PROJECT_PRUNED: Final = (".git", "node_modules", ".venv", "__pycache__")
"""Directories ``find_projects`` does not enter (vendored and generated trees hold other projects' markers)."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool as listed: ``writes`` tools (``write_tools``) are offered only with ``--writable``.

    ``destructive`` is a writing tool's ``destructiveHint`` (false for one that only adds, like create_directory).
    """

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    writes: bool = False
    idempotent: bool = True
    destructive: bool = True
    walks: bool = False
    """A tree walk (CPU-bound for its length): runs under the server's limit on concurrent walks."""
    quick: bool = False
    """Read-only, and its work bounded by a size cap or by :class:`~.calls.Budget` checks at short intervals: a
    single-client server may try it on its event loop (see ``WorkspaceConfig.inline_quick_calls``). Not grep, whose
    one engine call on a hostile pattern can take far longer than a slice; nor the tree walks, which compile each
    ignore file they meet (up to 256 KiB of patterns) between two checks."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def annotations(self) -> dict[str, Any]:
        """MCP tool annotations (hints a host may use to auto-approve reads): every tool here is closed-world."""
        return {
            "title": self.title,
            "readOnlyHint": not self.writes,
            "destructiveHint": self.writes and self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": False,
        }


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An input object, in the form every common MCP schema converter takes (issue 35; the converter matrix in
    ``tests/judges/converters`` checks it).

    Every optional property also takes ``null``, read as absent: converters that make every property required
    (openai-agents' strict mode) and adapters that fill every field (LangChain's) send ``null`` for what a call
    does not use. It is spelled ``anyOf: [{T...}, {"type": "null"}]``, not ``"type": [T, "null"]`` (Semantic
    Kernel, autogen-ext and dspy fail on a list of types), and ``null`` is not added to an enum (google-genai keeps
    it there, and Gemini refuses it). No ``additionalProperties: false``: google-genai's MCP converter fails on a
    boolean there, and openai-agents' strict mode adds it itself. Unknown arguments are refused all the same: the
    server checks every call against this schema with every object closed
    (:func:`rootbound.workspace.tools.arguments.checker`), with a message naming the accepted ones.
    """
    shaped = {name: schema if name in required else _nullable(schema) for name, schema in properties.items()}
    return {"type": "object", "properties": shaped, "required": required}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or ``null``; the description stays beside the ``anyOf``, where converters look for it."""
    if not isinstance(schema.get("type"), str):
        return schema
    shaped: dict[str, Any] = {"anyOf": [{k: v for k, v in schema.items() if k != "description"}, {"type": "null"}]}
    if "description" in schema:
        shaped["description"] = schema["description"]
    return shaped


def _output(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_PATH_TEXT = "An absolute path, a file:// URI, or a path relative to the first root (see list_roots)."
_PATH = {"type": "string", "minLength": 1, "maxLength": 4096, "description": _PATH_TEXT}
_DIR = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4096,
    "description": "Directory (or file) to search: " + _PATH_TEXT[3:] + " Default: every root.",
}
_GLOBS = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 512},
    "maxItems": 64,
}
_EXCLUDE = {**_GLOBS, "description": "Globs to leave out, .gitignore syntax ('node_modules', '*.min.js', 'dist/')."}
_INCLUDE = {**_GLOBS, "description": "Only files matching one of these globs ('*.py', 'src/**/*.ts')."}
_INCLUDE_IGNORED = {
    "type": "boolean",
    "description": (
        "Also walk what ignore files ignore (.gitignore, .ignore, .rgignore, .git/info/exclude; default false). "
        ".git is always skipped."
    ),
}
_INT = {"type": "integer"}
_STR = {"type": "string"}
_BOOL = {"type": "boolean"}
_STR_OR_NULL = {"anyOf": [_STR, {"type": "null"}]}
"""Not ``"type": ["string", "null"]``: a list of types is what strict validators (the Inspector's ``--strict``)
and several converters warn about or refuse (issue 50 item 8)."""
_TRUNCATED = {"type": "boolean", "description": "More results exist than were returned."}
_KIND = {"type": "string", "enum": ["file", "dir", "symlink", "other"]}

_ROOTS_OUT = _output(
    {
        "roots": {
            "type": "array",
            "items": _output(
                {"uri": _STR, "path": _STR, "name": _STR_OR_NULL, "kind": _STR, "narrowed": _BOOL},
                ["uri", "path", "kind", "narrowed"],
            ),
        },
        "refused": {
            "type": "array",
            "items": _output({"uri": _STR_OR_NULL, "reason": _STR}, ["reason"]),
        },
        "source": _STR,
        "why": {"type": "string", "description": "Why these roots (or none) are served, when it is not plain."},
        "note": _STR,
        "sandbox": _STR,
        "writes": {"type": "string", "description": "What holds writes beneath the roots (with --writable)."},
        "located": _output({"served": _BOOL, "path": _STR, "root": _STR_OR_NULL, "reason": _STR}, ["served"]),
    },
    ["roots", "refused", "source"],
)
_ENTRY = _output(
    {
        "name": {"type": "string", "description": "The exact name (the text escapes control characters)."},
        "type": _KIND,
        "size": {"type": "integer", "description": "Bytes (details=true)."},
        "modified": {"type": "string", "description": "Modification time, ISO 8601 UTC (details=true)."},
    },
    ["name", "type"],
)
_LIST_OUT = _output(
    {
        "path": {"type": "string", "description": "The directory's canonical path; an entry's path is path/name."},
        "entries": {
            "type": "array",
            # A validating client (the SDK's, with jsonschema) checks each item: ~20 us per entry inline, and
            # ~40-60 us through a "$ref" (resolved per item), so the entry schema is inlined, not referenced.
            "items": _ENTRY,
            "description": "The page's entries in order: name, type, and with details size and modified.",
        },
        "total": {"type": "integer", "description": "Entries in the directory when this page was listed."},
        "truncated": {"type": "boolean", "description": "More entries follow this page."},
        "nextCursor": {"type": "string", "description": "Pass as cursor to get the next page."},
    },
    ["path", "entries", "total", "truncated"],
)
_STAT_OUT = _output(
    {
        "path": _STR,
        "type": {"type": "string", "enum": ["file", "directory", "symlink", "other"]},
        "size": _INT,
        "mode": _STR,
        "modified": _STR,
        "links": _INT,
        "mime": _STR,
    },
    ["type", "size", "mode", "modified", "links"],
)
_SEARCH_OUT = _output(
    {"matches": {"type": "array", "items": _STR}, "truncated": _TRUNCATED},
    ["matches", "truncated"],
)
_GREP_OUT = _output(
    {
        "matches": {
            "type": "array",
            "items": _output(
                {"path": _STR, "line": _INT, "text": _STR, "context": _BOOL}, ["path", "line", "text", "context"]
            ),
        },
        "files": {"type": "array", "items": _STR},
        "files_searched": _INT,
        "files_skipped": _INT,
        "truncated": _TRUNCATED,
    },
    ["matches", "files", "truncated"],
)
_TREE_OUT = _output(
    {
        "path": _STR,
        "entries": {
            "type": "array",
            "items": _output(
                {
                    "path": _STR,
                    "type": _KIND,
                    "depth": _INT,
                    "more": {"type": "boolean", "description": "At max_depth, with entries not shown (text: '/…')."},
                },
                ["path", "type", "depth"],
            ),
        },
        "truncated": _TRUNCATED,
        "depth_limited": {
            "type": "boolean",
            "description": "Some directory at max_depth has entries not shown (it ends with '/…').",
        },
    },
    ["path", "entries", "truncated"],
)
_PROJECTS_OUT = _output(
    {
        "projects": {
            "type": "array",
            "items": _output({"path": _STR, "markers": {"type": "array", "items": _STR}}, ["path", "markers"]),
        },
        "truncated": _TRUNCATED,
    },
    ["projects", "truncated"],
)

_LINE = {"type": "integer", "minimum": 1}

TOOLS: Final = (
    ToolSpec(
        "list_roots",
        "List roots",
        "The directories and files this server may access: the client's roots intersected with the operator's "
        "directories. Relative paths in every other tool are relative to the first root listed. Roots the server "
        "refused are listed with the reason; when nothing is left it says why and how to fix it. With path: "
        "also whether that path is served, and by which root.",
        _object({"path": {**_PATH, "description": "A path to check (optional). " + _PATH_TEXT}}, []),
        _ROOTS_OUT,
        quick=True,
    ),
    ToolSpec(
        "list_directory",
        "List a directory",
        "The entries of one directory, sorted. Text: one per line; directories end with '/', symlinks with '@'. "
        "details=true adds size and modification time (UTC); sort_by orders by name, size or modified. Paged: "
        "at most max_entries (default 500) per call; when more follow, the answer ends with a cursor (nextCursor "
        "in the structured result): call again with the same path, sort_by and reverse and that cursor for the "
        "next page. Pages stay in order; an entry added or removed meanwhile may appear or not.",
        _object(
            {
                "path": _PATH,
                "details": {"type": "boolean", "description": "Add type, size and modification time (default false)."},
                "sort_by": {"type": "string", "enum": ["name", "size", "modified"], "description": "Default name."},
                "reverse": {"type": "boolean", "description": "Largest or newest first (default false)."},
                "max_entries": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 5000,
                    "description": "Entries per page (default 500).",
                },
                "cursor": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 2048,
                    "description": "The nextCursor of the previous page, unchanged.",
                },
            },
            ["path"],
        ),
        _LIST_OUT,
        walks=True,
        quick=True,
    ),
    ToolSpec(
        "directory_tree",
        "Show a directory tree",
        "The tree below a directory, indented, sorted, directories ending with '/'. Skips .git and what ignore "
        "files ignore (.gitignore, .ignore, .rgignore, .git/info/exclude; include_ignored=true to show it). "
        "Bounded: max_depth (default 3, at most 10) and max_entries (default 500); a cut is marked, and a "
        "directory at max_depth that has entries not shown ends with '/…'.",
        _object(
            {
                "path": _PATH,
                "max_depth": {"type": "integer", "minimum": 1, "maximum": 10},
                "max_entries": {"type": "integer", "minimum": 1, "maximum": 5000},
                "exclude": _EXCLUDE,
                "include_ignored": _INCLUDE_IGNORED,
            },
            ["path"],
        ),
        _TREE_OUT,
        walks=True,
    ),
    ToolSpec(
        "read_file",
        "Read a text file",
        "Text of a file, by lines or by bytes, never split inside a UTF-8 character. By default the first "
        "~64 KiB (whole lines); a cut ends with a marker saying where to read on (start_line=N or offset=N). "
        "Choose one way: start_line/end_line (1-based, inclusive), head=N (first N lines), tail=N (last N lines), "
        "or offset/length (bytes). Binary files answer 'binary' with their size and type (use read_media_file "
        "for images and audio).",
        _object(
            {
                "path": _PATH,
                "start_line": {**_LINE, "description": "First line to read (1-based)."},
                "end_line": {**_LINE, "description": "Last line to read (inclusive)."},
                "head": {**_LINE, "description": "Read the first N lines."},
                "tail": {**_LINE, "description": "Read the last N lines."},
                "offset": {"type": "integer", "minimum": 0, "description": "First byte to read."},
                "length": {"type": "integer", "minimum": 1, "description": "How many bytes to read at most."},
            },
            ["path"],
        ),
        quick=True,
    ),
    ToolSpec(
        "read_multiple_files",
        "Read several text files",
        "The text of up to 20 files in one call, each under a '==> path <==' header, in the order given. The "
        "answer is bounded in total (~64 K characters, shared among the files); a failed file shows its error "
        "inline and the others still come back. Use read_file with start_line or offset to read on in a cut file.",
        _object(
            {
                "paths": {
                    "type": "array",
                    "items": _PATH,
                    "minItems": 1,
                    "maxItems": 20,
                    "description": "Files to read. " + _PATH_TEXT,
                },
            },
            ["paths"],
        ),
        quick=True,
    ),
    ToolSpec(
        "read_media_file",
        "Read an image or audio file",
        "An image or audio file as MCP image/audio content (base64) with its MIME type detected from the content "
        "(PNG, JPEG, GIF, WebP, BMP, TIFF, ICO, AVIF, HEIC, SVG; WAV, MP3, AAC, Ogg, FLAC, AIFF, M4A, MIDI). At "
        "most 4 MiB. Anything else answers with its detected type and size.",
        _object({"path": _PATH}, ["path"]),
        quick=True,
    ),
    ToolSpec(
        "stat",
        "File information",
        "Type, size, permissions, modification time (UTC) and link count of a path; symlinks are not followed. "
        "Files also get a MIME type detected from their first bytes.",
        _object({"path": _PATH}, ["path"]),
        _STAT_OUT,
        quick=True,
    ),
    ToolSpec(
        "search_files",
        "Find files by name",
        "Paths whose name matches a glob ('*.py', 'test_*'), at any depth below path (like find -name); a glob "
        "with '/' matches the path relative to the search directory ('src/**/*.py'). Skips .git and what "
        "ignore files ignore (.gitignore, .ignore, .rgignore, .git/info/exclude) unless include_ignored=true. "
        "Sorted; at most 500 results, with a marker when more exist.",
        _object(
            {
                "pattern": {"type": "string", "minLength": 1, "maxLength": 1024, "description": "A relative glob."},
                "path": _DIR,
                "exclude": _EXCLUDE,
                "include_ignored": _INCLUDE_IGNORED,
            },
            ["pattern"],
        ),
        _SEARCH_OUT,
        walks=True,
    ),
    ToolSpec(
        "grep",
        "Search file contents",
        "Lines containing a text (or matching an RE2 regular expression with regex=true: linear time, no "
        "backreferences or lookaround; a match never spans lines) in files below path, as path:line:text, files in "
        "path order. Options: "
        "ignore_case, context (lines before and after, shown as path-line-text), files_only (just the paths), "
        "include/exclude globs, include_ignored. Skips .git and what ignore files ignore (.gitignore, .ignore, "
        ".rgignore, .git/info/exclude); also binary files, files over 4 MiB and symlinks (not followed), and the "
        "answer says how many of each. At most 200 matches in all and 20 per file (max_per_file), with a marker "
        "when cut.",
        _object(
            {
                "pattern": {"type": "string", "minLength": 1, "maxLength": 1024, "description": "Text to find."},
                "path": _DIR,
                "regex": {"type": "boolean", "description": "Treat the pattern as an RE2 regex (default false)."},
                "ignore_case": {"type": "boolean", "description": "Case-insensitive (default false)."},
                "context": {"type": "integer", "minimum": 0, "maximum": 10, "description": "Lines around a match."},
                "files_only": {"type": "boolean", "description": "List matching files only (default false)."},
                "max_per_file": {"type": "integer", "minimum": 1, "maximum": 200},
                "include": _INCLUDE,
                "exclude": _EXCLUDE,
                "include_ignored": _INCLUDE_IGNORED,
            },
            ["pattern"],
        ),
        _GREP_OUT,
        walks=True,
    ),
    ToolSpec(
        "find_projects",
        "Find projects",
        "Directories inside the roots that hold a project marker: "
        + ", ".join(PROJECT_MARKERS)
        + f". Looks {PROJECT_DEPTH} levels deep below path (default: every root) and does not enter "
        f"{', '.join(PROJECT_PRUNED)}; at most 500, with a marker when more exist.",
        _object({"path": _DIR}, []),
        _PROJECTS_OUT,
        walks=True,
    ),
)
