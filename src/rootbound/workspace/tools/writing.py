"""The writing tools of ``rootbound serve --writable``: thin wrappers over :class:`~rootbound.RootedFS` operations.

Each tool checks its arguments, calls one ``RootedFS`` method (which does all confinement, atomicity and race
handling) and renders the outcome as text plus structured content. None of them exists without ``--writable``.
Annotations are truthful: ``create_directory`` only adds (not destructive); ``edit_file`` and ``move_file`` are
not idempotent (repeating an edit or a move does something else, or fails).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rootbound.confine.patch_ops import PatchOpFailed
from rootbound.core.errors import PathExists
from rootbound.search.rooted_fs import RootedFS
from rootbound.text.edit import Edit, FileChanged, content_hash
from rootbound.text.patch_grammar import MAX_FILES, MAX_HUNKS, MAX_PATCH_CHARS, parse_patch
from rootbound.workspace.tools.calls import Limits, ToolError, ToolOutput, bool_arg, path_arg
from rootbound.workspace.tools.conditions import (
    IF_MATCH,
    IF_NONE_MATCH,
    PATCH_IF_MATCH,
    changed,
    changed_since_read,
    create_only,
    expected_digest,
    patch_digests,
)
from rootbound.workspace.tools.error_fixes import explain
from rootbound.workspace.tools.patching import render_patch
from rootbound.workspace.tools.render import bounded, escape, fitting
from rootbound.workspace.tools.specs import (  # one set of schema pieces for every tool
    _INT,
    _PATH,
    _STR,
    ToolSpec,
    _object,
    _output,
)

__all__ = ["WRITE_IMPLEMENTATIONS", "WRITE_TOOLS"]

MAX_EDITS: Final = 100
LINES_LISTED: Final = 50
"""An edit's replaced occurrences listed in the structured result: a replace_all over a large file stays a short
answer (issue 50 item 4; the diff shows them all, cut to the answer's limit)."""
MAX_TEXT: Final = 16 * 1024 * 1024


_BOOL = {"type": "boolean"}
_SHA256 = {"type": "string", "pattern": "^[0-9a-fA-F]{64}$"}
_TOLERANCE = {"type": "string", "enum": ["line-endings", "trailing-whitespace", "indentation"]}


_OLD = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_TEXT,
    "description": "Text to replace, quoted from the file with enough lines around it to be unique.",
}
_NEW = {"type": "string", "maxLength": MAX_TEXT, "description": "The replacement (may be empty)."}
_REPLACE_ALL = {
    "type": "boolean",
    "description": "Replace every occurrence instead of requiring exactly one (default false).",
}
_EXPECTED_COUNT = {
    "type": "integer",
    "minimum": 1,
    "maximum": 10_000,
    "description": "Replace every occurrence, and refuse unless there are exactly this many (default: exactly 1).",
}
_EDIT = _object(
    {
        "old_text": _OLD,
        "new_text": _NEW,
        "old_string": {**_OLD, "description": "Same as old_text."},
        "new_string": {**_NEW, "description": "Same as new_text."},
        "oldText": {**_OLD, "description": "Same as old_text."},
        "newText": {**_NEW, "description": "Same as new_text."},
        "replace_all": _REPLACE_ALL,
        "expected_replacements": _EXPECTED_COUNT,
    },
    [],
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
                {
                    "lines": {
                        "type": "array",
                        "items": _INT,
                        "description": f"The first line of each occurrence replaced (the first {LINES_LISTED}).",
                    },
                    "tolerances": {"type": "array", "items": _TOLERANCE},
                },
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
        "Replace text in one file. Either old_string + new_string (one replacement), or edits: a list of "
        "{old_text, new_text} (old_string/new_string or oldText/newText also accepted) applied in order, all or "
        "nothing. The old text "
        "must occur exactly once, unless replace_all (every occurrence) or expected_replacements=N (exactly N, "
        "all replaced). Matching tolerates CRLF/LF differences, trailing whitespace and a block quoted at another "
        "indentation, and says when it did; the answer is a unified diff. dry_run previews it; expected_sha256 "
        "(from an earlier answer) refuses if the file changed since.",
        _object(
            {
                "path": _PATH,
                "old_string": {**_OLD, "description": "Text to replace (with new_string; instead of edits)."},
                "new_string": {**_NEW, "description": "Its replacement (may be empty)."},
                "replace_all": {**_REPLACE_ALL, "description": "With old_string: replace every occurrence."},
                "expected_replacements": {
                    **_EXPECTED_COUNT,
                    "description": "With old_string: exactly this many occurrences, all replaced.",
                },
                "edits": {
                    "type": "array",
                    "items": _EDIT,
                    "minItems": 1,
                    "maxItems": MAX_EDITS,
                    "description": "Several replacements, in order (instead of old_string/new_string).",
                },
                "dry_run": {"type": "boolean", "description": "Return the diff without writing (default false)."},
                "dryRun": {"type": "boolean", "description": "Same as dry_run."},
                "expected_sha256": {
                    **_SHA256,
                    "description": "Refuse unless the file's SHA-256 is this (it changed since you read it).",
                },
                "if_match": IF_MATCH,
                "expected_mtime_ns": {
                    **_INT,
                    "description": "Refuse unless the file's modification time (ns) is this.",
                },
            },
            ["path"],
        ),
        _EDIT_OUT,
        writes=True,
        idempotent=False,
    ),
    ToolSpec(
        "apply_patch",
        "Apply a patch",
        "Create, update, move and delete files with one patch in the apply_patch format: '*** Begin Patch', then "
        "per file '*** Add File: PATH' (every line '+'), '*** Delete File: PATH', or '*** Update File: PATH' "
        "(optionally '*** Move to: NEW_PATH') with hunks: '@@' (optionally '@@ ' + a line such as a def or class "
        "header), then lines prefixed ' ' (context, about 3 before and after), '-' (remove), '+' (add); "
        "'*** End of File' if a hunk ends the file; finally '*** End Patch'. Paths are relative to the first "
        "root or absolute within the roots. All or nothing: if any file or hunk fails, no file changes. "
        "Context matching tolerates trailing whitespace and a consistent indentation shift, and says so. "
        "dry_run shows the diff without writing.",
        _object(
            {
                "patch": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_PATCH_CHARS,
                    "description": (
                        f"The whole patch, '*** Begin Patch' to '*** End Patch'; at most {MAX_FILES} files and "
                        f"{MAX_HUNKS} hunks per file."
                    ),
                },
                "dry_run": {
                    "type": "boolean",
                    "description": "Show what would change without writing (default false).",
                },
                "if_match": PATCH_IF_MATCH,
                "if_none_match": {
                    **IF_NONE_MATCH,
                    "description": 'With "*": no Add File or Move to replaces an existing file.',
                },
            },
            ["patch"],
        ),
        _output(
            {
                "written": _BOOL,
                "dry_run": _BOOL,
                "files": {
                    "type": "array",
                    "items": _output(
                        {
                            "action": {"type": "string", "enum": ["added", "updated", "moved", "deleted"]},
                            "path": _STR,
                            "destination": _STR,
                            "added": _INT,
                            "removed": _INT,
                            "replaced": _BOOL,
                            "tolerances": {"type": "array", "items": _TOLERANCE},
                        },
                        ["action", "path", "added", "removed"],
                    ),
                },
                "diff": _STR,
                "diff_truncated": _BOOL,
            },
            ["written", "dry_run", "files"],
        ),
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
                "if_match": IF_MATCH,
                "if_none_match": IF_NONE_MATCH,
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
                "if_match": {**IF_MATCH, "description": f"The source file's digest: {IF_MATCH['description']}"},
                "if_none_match": {**IF_NONE_MATCH, "description": 'With "*": refuse if the destination exists.'},
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
        "Delete one file (or one symlink, never its target) inside the roots. Directories are refused. if_match: "
        "only if the file still has that SHA-256 (else nothing is deleted and the current digest is given).",
        _object({"path": _PATH, "if_match": IF_MATCH}, ["path"]),
        _PATH_OUT,
        writes=True,
    ),
)


# The names an edit's two texts go by: rootbound's, Claude Code's and Gemini CLI's, the reference server's.
_EDIT_NAMES: Final = (("old_text", "new_text"), ("old_string", "new_string"), ("oldText", "newText"))


def _edits(args: Mapping[str, Any]) -> list[Edit]:
    """The edits of a call: ``old_string``/``new_string`` at the top level (Claude Code's and Gemini CLI's form),
    or ``edits`` whose items use one pair of :data:`_EDIT_NAMES`."""
    raw = args.get("edits")
    single = any(name in args for name in ("old_string", "new_string"))
    if single:
        if raw is not None:
            raise ToolError("send either old_string and new_string or edits, not both")
        return [_edit(args, "old_string", "new_string", "arguments")]
    if "replace_all" in args or "expected_replacements" in args:
        raise ToolError(
            "top-level replace_all and expected_replacements go with old_string and new_string; "
            "with edits, put them in each edit"
        )
    if not isinstance(raw, list) or not raw or len(raw) > MAX_EDITS:
        raise ToolError(f"argument 'edits' must be a list of 1 to {MAX_EDITS} edits, or send old_string and new_string")
    edits = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ToolError(f"edits[{index}] must be an object with old_text and new_text")
        used = [pair for pair in _EDIT_NAMES if pair[0] in item or pair[1] in item]
        if len(used) > 1:
            raise ToolError(
                f"edits[{index}]: use old_text/new_text or old_string/new_string or oldText/newText, not two"
            )
        edits.append(_edit(item, *(used[0] if used else _EDIT_NAMES[0]), f"edits[{index}]"))
    return edits


def _dry_run(args: Mapping[str, Any]) -> bool:
    """``dry_run``, or ``dryRun`` as the reference filesystem server spells it (one of them)."""
    if args.get("dry_run") is not None and args.get("dryRun") is not None:
        raise ToolError("send dry_run or dryRun, not both")
    return bool_arg(args, "dryRun") if args.get("dryRun") is not None else bool_arg(args, "dry_run")


def _edit(item: Mapping[str, Any], old_name: str, new_name: str, where: str) -> Edit:
    old, new = item.get(old_name), item.get(new_name)
    if not isinstance(old, str) or not old or not isinstance(new, str):
        raise ToolError(f"{where}: the old text must be a non-empty string and the new text a string")
    every, count = item.get("replace_all", False), item.get("expected_replacements")
    if not isinstance(every, bool):
        raise ToolError(f"{where}: replace_all must be a boolean")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ToolError(f"{where}: expected_replacements must be a positive integer")
    if every and count is not None:
        raise ToolError(f"{where}: replace_all and expected_replacements exclude each other: send one")
    return Edit(old, new, every, count)


def edit_file(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = path_arg(args)
    edits = _edits(args)
    expected = expected_digest(args, legacy=True)
    mtime = args.get("expected_mtime_ns")
    if mtime is not None and (isinstance(mtime, bool) or not isinstance(mtime, int)):
        raise ToolError("argument 'expected_mtime_ns' must be an integer")
    dry_run = _dry_run(args)
    try:
        outcome = fs.edit_file(path, edits, expected_hash=expected, expected_mtime_ns=mtime, dry_run=dry_run)
    except FileChanged:
        if expected is None:
            raise
        raise changed(fs, path) from None
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
        "edits": [{"lines": list(a.lines[:LINES_LISTED]), "tolerances": list(a.tolerances)} for a in outcome.applied],
    }
    return ToolOutput(text, structured)


def write_file(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = path_arg(args)
    content = args.get("content")
    if not isinstance(content, str):
        raise ToolError("argument 'content' must be a string")
    data = content.encode("utf-8", "surrogatepass")
    overwrite = bool_arg(args, "overwrite", True) and not create_only(args)
    expected = expected_digest(args)
    try:
        written = fs.write_bytes(
            path, data, exclusive=not overwrite, create_parents=bool_arg(args, "create_parents"), expected_hash=expected
        )
    except FileChanged:
        raise changed(fs, path) from None
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
    only_new = create_only(args, one_file=False)
    try:
        moved = fs.move(
            source,
            destination,
            overwrite=bool_arg(args, "overwrite") and not only_new,
            expected_hash=expected_digest(args),
        )
    except FileChanged:
        raise changed(fs, source) from None
    return ToolOutput(f"moved to {escape(str(moved))}", {"destination": str(moved)})


def delete_file(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = path_arg(args)
    try:
        removed = fs.delete_file(path, expected_hash=expected_digest(args))
    except FileChanged:
        raise changed(fs, path) from None
    return ToolOutput(f"deleted {escape(str(removed))}", {"path": str(removed)})


def apply_patch(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    text = args.get("patch")
    if not isinstance(text, str) or not text:
        raise ToolError("argument 'patch' must be a non-empty string")
    dry_run = bool_arg(args, "dry_run")
    patch = parse_patch(text)
    digests = patch_digests(args, patch)
    try:
        outcome = fs.apply_patch(
            patch, dry_run=dry_run, if_match=digests, create_only=create_only(args, one_file=False)
        )
    except PatchOpFailed as failure:
        where = failure.op.label + (f" ({escape(str(failure.path))})" if failure.path is not None else "")
        why = explain("apply_patch", failure.error)
        if isinstance(failure.error, FileChanged) and failure.op.path in digests and not failure.kept:
            why = changed_since_read(fs, failure.op.path)
        if failure.kept:
            raise ToolError(
                f"failed, and {len(failure.kept)} files could not be put back (another writer changed them, or their "
                f"directory left the roots): their previous content is kept beside them as .rootbound-*.tmp; the "
                f"rest was undone: {where}: {why}"
            ) from None
        raise ToolError(f"nothing changed: {where}: {why}") from None
    return render_patch(outcome, limits)


WRITE_IMPLEMENTATIONS: Final = {
    "edit_file": edit_file,
    "apply_patch": apply_patch,
    "write_file": write_file,
    "create_directory": create_directory,
    "move_file": move_file,
    "delete_file": delete_file,
}
