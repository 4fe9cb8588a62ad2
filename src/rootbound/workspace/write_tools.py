"""The writing tools of ``rootbound serve --writable``: thin wrappers over :class:`~rootbound.RootedFS` operations.

Each tool checks its arguments, calls one ``RootedFS`` method (which does all confinement, atomicity and race
handling) and renders the outcome as text plus structured content. None of them exists without ``--writable``.
Annotations are truthful: ``create_directory`` only adds (not destructive); ``edit_file`` and ``move_file`` are
not idempotent (repeating an edit or a move does something else, or fails).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rootbound.confine.rooted_fs import RootedFS
from rootbound.core.errors import PathExists
from rootbound.text.edit import Edit, content_hash
from rootbound.workspace.calls import Limits, ToolError, ToolOutput, bool_arg, path_arg
from rootbound.workspace.render import bounded, escape, fitting
from rootbound.workspace.specs import (  # one set of schema pieces for every tool
    _INT,
    _PATH,
    _STR,
    ToolSpec,
    _object,
    _output,
)

__all__ = ["WRITE_IMPLEMENTATIONS", "WRITE_TOOLS"]

MAX_EDITS: Final = 100
MAX_TEXT: Final = 16 * 1024 * 1024


_BOOL = {"type": "boolean"}
_SHA256 = {"type": "string", "pattern": "^[0-9a-fA-F]{64}$"}
_TOLERANCE = {"type": "string", "enum": ["line-endings", "trailing-whitespace", "indentation"]}

_EDIT = _object(
    {
        "old_text": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_TEXT,
            "description": "Text to replace, quoted from the file with enough lines around it to be unique.",
        },
        "new_text": {"type": "string", "maxLength": MAX_TEXT, "description": "The replacement."},
        "replace_all": {
            "type": "boolean",
            "description": "Replace every occurrence instead of requiring exactly one (default false).",
        },
    },
    ["old_text", "new_text"],
)
_EDIT_OUT = _output(
    {
        "path": _STR,
        "written": _BOOL,
        "dry_run": _BOOL,
        "diff": _STR,
        "diff_truncated": _BOOL,
        "sha256": _SHA256,
        "mtime_ns": _INT,
        "edits": {
            "type": "array",
            "items": _output(
                {"lines": {"type": "array", "items": _INT}, "tolerances": {"type": "array", "items": _TOLERANCE}},
                ["lines", "tolerances"],
            ),
        },
    },
    ["path", "written", "dry_run", "diff", "sha256", "mtime_ns", "edits"],
)
_PATH_OUT = _output({"path": _STR}, ["path"])

WRITE_TOOLS: Final = (
    ToolSpec(
        "edit_file",
        "Edit a file",
        "Replace text in one file: each edit's old_text must match exactly once (or set replace_all), edits apply "
        "in order, all or nothing, and the answer is a unified diff. Matching tolerates CRLF/LF differences, "
        "trailing whitespace and a block quoted at another indentation, and says when it did. Use dry_run to "
        "preview the diff; pass expected_sha256 (from an earlier answer) to refuse if the file changed since.",
        _object(
            {
                "path": _PATH,
                "edits": {"type": "array", "items": _EDIT, "minItems": 1, "maxItems": MAX_EDITS},
                "dry_run": {"type": "boolean", "description": "Return the diff without writing (default false)."},
                "expected_sha256": {
                    **_SHA256,
                    "description": "Refuse unless the file's SHA-256 is this (it changed since you read it).",
                },
                "expected_mtime_ns": {
                    **_INT,
                    "description": "Refuse unless the file's modification time (ns) is this.",
                },
            },
            ["path", "edits"],
        ),
        _EDIT_OUT,
        writes=True,
        idempotent=False,
    ),
    ToolSpec(
        "write_file",
        "Write a file",
        "Write a UTF-8 text file inside the roots atomically (readers never see a partial file). Replaces an "
        "existing file unless overwrite is false; create_parents creates missing directories. Never follows a "
        "symlink out of its root.",
        _object(
            {
                "path": _PATH,
                "content": {"type": "string", "maxLength": MAX_TEXT, "description": "UTF-8 text."},
                "overwrite": {
                    "type": "boolean",
                    "description": "Replace an existing file (default true); false creates only.",
                },
                "create_parents": {
                    "type": "boolean",
                    "description": "Create missing parent directories (default false).",
                },
            },
            ["path", "content"],
        ),
        _output({"path": _STR, "bytes": _INT, "sha256": _SHA256}, ["path", "bytes", "sha256"]),
        writes=True,
    ),
    ToolSpec(
        "create_directory",
        "Create a directory",
        "Create a directory inside the roots, with any missing parents; an existing directory is fine.",
        _object({"path": _PATH}, ["path"]),
        _PATH_OUT,
        writes=True,
        destructive=False,
    ),
    ToolSpec(
        "move_file",
        "Move or rename",
        "Move or rename a file or directory; both ends inside the roots (possibly two different roots). Refuses "
        "an existing destination unless overwrite is true (which replaces only a regular file), a root itself, "
        "and a directory into itself.",
        _object(
            {
                "source": _PATH,
                "destination": _PATH,
                "overwrite": {"type": "boolean", "description": "Replace an existing file (default false)."},
            },
            ["source", "destination"],
        ),
        _output({"destination": _STR}, ["destination"]),
        writes=True,
        idempotent=False,
    ),
    ToolSpec(
        "delete_file",
        "Delete a file",
        "Delete one file (or one symlink, never its target) inside the roots. Directories are refused.",
        _object({"path": _PATH}, ["path"]),
        _PATH_OUT,
        writes=True,
    ),
)


def _edits(args: Mapping[str, Any]) -> list[Edit]:
    raw = args.get("edits")
    if not isinstance(raw, list) or not raw or len(raw) > MAX_EDITS:
        raise ToolError(f"argument 'edits' must be a list of 1 to {MAX_EDITS} edits")
    edits = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ToolError(f"edits[{index}] must be an object with old_text and new_text")
        old, new, every = item.get("old_text"), item.get("new_text"), item.get("replace_all", False)
        if not isinstance(old, str) or not old or not isinstance(new, str):
            raise ToolError(f"edits[{index}]: old_text must be a non-empty string and new_text a string")
        if not isinstance(every, bool):
            raise ToolError(f"edits[{index}]: replace_all must be a boolean")
        edits.append(Edit(old, new, every))
    return edits


def edit_file(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = path_arg(args)
    edits = _edits(args)
    expected = args.get("expected_sha256")
    if expected is not None and (not isinstance(expected, str) or len(expected) != 64):
        raise ToolError("argument 'expected_sha256' must be 64 hex digits")
    mtime = args.get("expected_mtime_ns")
    if mtime is not None and (isinstance(mtime, bool) or not isinstance(mtime, int)):
        raise ToolError("argument 'expected_mtime_ns' must be an integer")
    dry_run = bool_arg(args, "dry_run")
    outcome = fs.edit_file(path, edits, expected_hash=expected, expected_mtime_ns=mtime, dry_run=dry_run)
    shown = escape(str(outcome.path))
    if dry_run:
        head = f"dry run: {shown} would change as below (nothing written)"
    elif outcome.written:
        head = f"edited {shown}"
    else:
        head = f"{shown} unchanged: the edits replace text with the same text"
    tolerant = outcome.tolerances
    if tolerant:
        head += f"\nmatched tolerantly ({', '.join(tolerant)}): check the diff"
    # Split on "\n" only: a CRLF file's lines keep their "\r" in the diff, as diff -u shows them (issue 27).
    diff_lines = outcome.diff.split("\n")[:-1]  # a diff ends with "\n"
    room = limits.max_output - len(head) - 200
    truncated = fitting(diff_lines, room) < len(diff_lines)
    diff = bounded(diff_lines, room) if diff_lines else "(no changes)"
    if dry_run:
        tail = f"current sha256 {outcome.sha256} (pass it as expected_sha256 to apply exactly this diff)"
    else:
        tail = f"{'new ' if outcome.written else ''}sha256 {outcome.sha256}"
    text = f"{head}\n{diff}\n{tail}"
    structured = {
        "path": str(outcome.path),
        "written": outcome.written,
        "dry_run": outcome.dry_run,
        "diff": diff if truncated else outcome.diff,
        "diff_truncated": truncated,
        "sha256": outcome.sha256,
        "mtime_ns": outcome.mtime_ns,
        "edits": [{"lines": list(a.lines), "tolerances": list(a.tolerances)} for a in outcome.applied],
    }
    return ToolOutput(text, structured)


def write_file(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = path_arg(args)
    content = args.get("content")
    if not isinstance(content, str):
        raise ToolError("argument 'content' must be a string")
    data = content.encode("utf-8", "surrogatepass")
    overwrite = bool_arg(args, "overwrite", True)
    written = fs.write_bytes(path, data, exclusive=not overwrite, create_parents=bool_arg(args, "create_parents"))
    digest = content_hash(data)
    text = f"wrote {len(data)} bytes to {escape(str(written))}"
    return ToolOutput(text, {"path": str(written), "bytes": len(data), "sha256": digest})


def create_directory(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = path_arg(args)
    try:
        made = fs.create_directory(path, exist_ok=False)
        said = "created directory {}"
    except PathExists:  # only a directory that is there already (anything else is another error)
        made = fs.create_directory(path)
        said = "directory {} already exists: nothing created"
    return ToolOutput(said.format(escape(str(made))), {"path": str(made)})


def move_file(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    source, destination = path_arg(args, "source"), path_arg(args, "destination")
    moved = fs.move(source, destination, overwrite=bool_arg(args, "overwrite"))
    return ToolOutput(f"moved to {escape(str(moved))}", {"destination": str(moved)})


def delete_file(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    removed = fs.delete_file(path_arg(args))
    return ToolOutput(f"deleted {escape(str(removed))}", {"path": str(removed)})


WRITE_IMPLEMENTATIONS: Final = {
    "edit_file": edit_file,
    "write_file": write_file,
    "create_directory": create_directory,
    "move_file": move_file,
    "delete_file": delete_file,
}
