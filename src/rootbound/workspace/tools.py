"""The tools of ``rootbound serve``: what each does on a :class:`~rootbound.RootedFS`.

Built only on rootbound's core: every path a tool touches goes through the confined file system, so the tools
cannot do anything the boundary would not allow. Output is bounded; a cut is marked, never silent. Each tool
returns text for the model and, where the result has a shape (:mod:`rootbound.workspace.specs`), the same
result as structured content. Long walks call :meth:`Budget.check` per entry, so a per-call deadline and a
client's cancellation stop them promptly.
"""

from __future__ import annotations

import base64
import contextlib
import os
import stat as stat_module
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from .._files import check_file
from .._grep_filtered import GrepLimits, grep_tree
from .._ignore import PathFilter, name_matcher
from .._media import SNIFF_BYTES, sniff
from .._regex import compile_bytes
from .._text import BINARY_SNIFF, TextSlice, looks_binary, read_byte_range, read_lines, read_tail
from .._walk import READ_NAMED, WalkLimits, walk
from ..errors import InvalidPath, LimitExceeded, RootsError, TooLarge
from ..fs import RootedFS
from .render import bounded, escape, escape_line
from .specs import PROJECT_MARKERS, TOOLS, ToolSpec

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
]


class ToolError(Exception):
    """A tool failure whose message is safe to show (fixed text, never the caller's input)."""


@dataclass(frozen=True)
class Limits:
    """Bounds on what one tool call reads or returns."""

    max_read: int = 1024 * 1024
    """The most a read returns when asked for more (``--max-read``)."""
    default_read: int = 64 * 1024
    """What a read returns when not told how much: about 16k tokens, room left in a model's context."""
    max_results: int = 500
    max_matches: int = 200
    max_per_file: int = 20
    max_output: int = 256 * 1024
    max_media: int = 4 * 1024 * 1024
    max_files: int = 20
    tree_depth: int = 3
    max_tree_depth: int = 10
    deadline: float = 30.0
    """Seconds a call may run; a walk past it stops with a tool error (``--tool-timeout``)."""


class Cancelled(ToolError):
    """The client cancelled the request (``notifications/cancelled``); nobody reads the answer."""


class Budget:
    """The time a call may still take and whether its client cancelled it, checked per walked entry.

    ``steps`` counts the entries seen, for progress notifications sent by the server while the call runs.
    """

    __slots__ = ("_cancelled", "deadline", "seconds", "steps")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self._cancelled = threading.Event()
        self.steps = 0

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check(self, steps: int = 1) -> None:
        """Count ``steps`` more units of work; raise if the client cancelled or the deadline passed."""
        self.steps += steps
        if self._cancelled.is_set():
            raise Cancelled("cancelled")
        if time.monotonic() > self.deadline:
            raise ToolError(f"stopped after {self.seconds:g} s (the per-call deadline); narrow the path or pattern")


@dataclass(frozen=True)
class Media:
    """An image or audio block: ``kind`` is ``image`` or ``audio``, ``data`` base64."""

    kind: str
    mime: str
    data: str


@dataclass(frozen=True)
class ToolOutput:
    """What a tool answers: text for the model, the same as JSON when the tool has an output schema, media."""

    text: str
    structured: dict[str, Any] | None = None
    media: tuple[Media, ...] = ()


# -- arguments -------------------------------------------------------------------------------------------------


def _str_arg(args: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    value = args.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise ToolError(f"argument '{name}' must be a non-empty string")
    return value


def _path_arg(args: Mapping[str, Any], name: str = "path") -> str:
    value = _str_arg(args, name)
    assert value is not None
    return value


def _int_arg(args: Mapping[str, Any], name: str, *, minimum: int, maximum: int | None = None) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (maximum and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise ToolError(f"argument '{name}' must be an integer {bound}")
    return value


def _bool_arg(args: Mapping[str, Any], name: str) -> bool:
    value = args.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ToolError(f"argument '{name}' must be a boolean")
    return value


def _globs_arg(args: Mapping[str, Any], name: str) -> list[str]:
    value = args.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ToolError(f"argument '{name}' must be a list of strings")
    return value


def _filter(args: Mapping[str, Any], *, include: bool = False) -> PathFilter:
    return PathFilter(
        exclude=_globs_arg(args, "exclude"),
        include=_globs_arg(args, "include") if include else (),
        gitignore=not _bool_arg(args, "include_ignored"),
    )


def _budget(context: Mapping[str, Any]) -> Budget:
    budget = context.get("budget")
    return budget if isinstance(budget, Budget) else Budget(Limits.deadline)


def _targets(fs: RootedFS, path: str | None) -> list[object]:
    """The search starting points: the named directory, or every effective root."""
    if path is not None:
        return [path]
    return [root.path for root in fs.boundary if root.kind == "dir"]


@contextlib.contextmanager
def _opened(fs: RootedFS, path: object) -> Iterator[tuple[int, os.stat_result, str]]:
    """A regular file opened for reading through the boundary's one way in: ``(fd, stat, canonical path)``."""
    with fs._open(path, READ_NAMED) as handle:
        st = handle.fstat()
        check_file(st, fs.hardlinks, writing=False)
        yield handle.fd, st, str(handle.path)


def _pread(fd: int) -> Callable[[int, int], bytes]:
    def pread(offset: int, length: int) -> bytes:
        chunks: list[bytes] = []
        got = 0
        while got < length:
            chunk = os.pread(fd, length - got, offset + got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    return pread


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="seconds")


# -- roots -----------------------------------------------------------------------------------------------------

NO_ROOTS_HELP: Final = (
    "no roots: every path is denied. Fix: have the client declare a root (a directory it wants this server to "
    "use), or start the server with one: rootbound serve DIR"
)


def list_roots(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    roots: list[dict[str, Any]] = []
    lines = []
    for root in fs.boundary:
        label = f" ({escape(root.name)})" if root.name else ""
        narrowed = " [narrowed to the allowlist]" if root.narrowed else ""
        lines.append(f"{root.uri}{label} {root.kind}{narrowed}")
        roots.append(
            {"uri": root.uri, "path": str(root.path), "name": root.name, "kind": root.kind, "narrowed": root.narrowed}
        )
    refused: list[dict[str, Any]] = []
    for dropped in fs.boundary.dropped:
        uri = getattr(dropped.original, "canonical", None)
        uri = uri if isinstance(uri, str) else None  # a validated, percent-encoded URI, or nothing
        refused.append({"uri": uri, "reason": dropped.reason})
        lines.append(f"refused a client root: {uri + ' ' if uri else ''}({dropped.reason})")
    source = str(context.get("source") or "client")
    structured: dict[str, Any] = {"roots": roots, "refused": refused, "source": source}
    if not roots:
        why = (
            "every root the client declared was refused (see above)"
            if refused
            else "the client declared no roots"
            if source == "client"
            else "the operator's directories are gone"
        )
        note = f"{NO_ROOTS_HELP} ({why})"
        lines.insert(0, "(no roots: every path is denied)")
        lines.append(note)
        structured["note"] = note
    lines.append(f"source: {source}")
    return ToolOutput("\n".join(lines), structured)


# -- listing ---------------------------------------------------------------------------------------------------


def list_directory(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = _path_arg(args)
    details = _bool_arg(args, "details")
    sort_by = args.get("sort_by", "name") or "name"
    if sort_by not in ("name", "size", "modified"):
        raise ToolError("argument 'sort_by' must be 'name', 'size' or 'modified'")
    reverse = _bool_arg(args, "reverse")
    want_stat = details or sort_by != "name"
    budget = _budget(context)
    rows: list[dict[str, Any]] = []
    base = ""
    try:
        plain = PathFilter(gitignore=False, skip_git=False)
        for found in walk(fs, path, plain, limits=WalkLimits(max_depth=1), check=budget.check):
            row: dict[str, Any] = {"name": found.name, "path": found.display, "type": found.kind}
            base = found.display[: -len(found.name)]
            if want_stat:
                with contextlib.suppress(OSError):
                    st = found.entry.stat(follow_symlinks=False)
                    row["size"], row["modified"], row["_mtime"] = st.st_size, _iso(st.st_mtime), st.st_mtime
            rows.append(row)
    except LimitExceeded:
        raise ToolError("the directory has too many entries to list") from None
    if sort_by == "size":
        rows.sort(key=lambda row: (row.get("size", -1), row["name"]), reverse=reverse)
    elif sort_by == "modified":
        rows.sort(key=lambda row: (row.get("_mtime", 0.0), row["name"]), reverse=reverse)
    elif reverse:
        rows.reverse()
    total = len(rows)
    shown = rows[: limits.max_results]
    for row in shown:
        row.pop("_mtime", None)
    lines = []
    for row in shown:
        name = escape(row["name"]) + {"dir": "/", "symlink": "@"}.get(row["type"], "")
        if details:
            size = row.get("size")
            lines.append(f"{row['type']:<7} {'-' if size is None else size:>12}  {row.get('modified', '-')}  {name}")
        else:
            lines.append(name)
    structured = {
        "path": base.rstrip("/") or str(path),
        "entries": shown,
        "total": total,
        "truncated": total > len(shown),
    }
    if not rows:
        return ToolOutput("(empty directory)", structured)
    return ToolOutput(bounded(lines, limits.max_output, total=total), structured)


def directory_tree(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = _path_arg(args)
    depth = _int_arg(args, "max_depth", minimum=1, maximum=limits.max_tree_depth) or limits.tree_depth
    cap = min(_int_arg(args, "max_entries", minimum=1, maximum=5000) or limits.max_results, 5000)
    where = _filter(args)
    budget = _budget(context)
    entries: list[dict[str, Any]] = []
    lines: list[str] = []
    truncated = depth_limited = False
    try:
        for found in walk(fs, path, where, limits=WalkLimits(max_depth=depth), check=budget.check):
            if len(entries) >= cap:
                truncated = True
                break
            entries.append({"path": found.rel, "type": found.kind, "depth": found.depth})
            suffix = {"dir": "/", "symlink": "@"}.get(found.kind, "")
            if found.kind == "dir" and found.depth >= depth:
                suffix = "/…"  # not expanded: max_depth
                depth_limited = True
            lines.append("  " * (found.depth - 1) + escape(found.name) + suffix)
    except LimitExceeded:
        truncated = True
    start = fs.boundary.resolve(path)
    structured = {"path": str(start), "entries": entries, "truncated": truncated, "depth_limited": depth_limited}
    header = escape(str(start)) + "/"
    if not lines:
        return ToolOutput(header + "\n(empty)", structured)
    text = header + "\n" + bounded(lines, limits.max_output - len(header), more=truncated)
    return ToolOutput(text, structured)


# -- reading ---------------------------------------------------------------------------------------------------


def _binary_answer(head: bytes, size: int) -> str:
    kind = sniff(head[:SNIFF_BYTES] if len(head) > SNIFF_BYTES else head)
    label = kind.label if kind.kind != "text" else "binary data"
    mime = kind.mime if kind.kind != "text" else "application/octet-stream"
    hint = "; use read_media_file to see it" if kind.kind in ("image", "audio") else ""
    return f"[binary file: {size} bytes, {label} ({mime}){hint}]"


def _window_args(args: Mapping[str, Any]) -> dict[str, int | None]:
    window = {
        "start_line": _int_arg(args, "start_line", minimum=1),
        "end_line": _int_arg(args, "end_line", minimum=1),
        "head": _int_arg(args, "head", minimum=1),
        "tail": _int_arg(args, "tail", minimum=1),
        "offset": _int_arg(args, "offset", minimum=0),
        "length": _int_arg(args, "length", minimum=1),
    }
    ways = sum(
        (
            window["start_line"] is not None or window["end_line"] is not None,
            window["head"] is not None,
            window["tail"] is not None,
            window["offset"] is not None or window["length"] is not None,
        )
    )
    if ways > 1:
        raise ToolError("choose one of start_line/end_line, head, tail, or offset/length")
    start, end = window["start_line"], window["end_line"]
    if start is not None and end is not None and end < start:
        raise ToolError("end_line must be >= start_line")
    return window


def _read_window(
    fd: int, size: int, window: Mapping[str, int | None], budget_bytes: int, check: Callable[[int], None]
) -> TextSlice:
    pread = _pread(fd)
    if window["offset"] is not None or window["length"] is not None:
        length = min(window["length"] or budget_bytes, budget_bytes)
        return read_byte_range(pread, size, window["offset"] or 0, length)
    if window["tail"] is not None:
        return read_tail(pread, size, window["tail"], budget_bytes)
    if window["head"] is not None:
        return read_lines(pread, size, 1, window["head"], budget_bytes, check=check)
    return read_lines(pread, size, window["start_line"] or 1, window["end_line"], budget_bytes, check=check)


def _render_slice(piece: TextSlice, window: Mapping[str, int | None]) -> str:
    text = piece.text
    hint = piece.hint()
    if window["tail"] is not None and piece.start > 0 and piece.first_line is not None:
        got = (piece.last_line or 0) - piece.first_line + 1
        if got < window["tail"]:
            hint = (
                f"[truncated: the last {got} lines that fit (lines {piece.first_line}-{piece.last_line}, bytes "
                f"{piece.start}-{piece.end} of {piece.size}); earlier lines: end_line={piece.first_line - 1}]"
            )
    elif window["tail"] is not None and piece.start > 0 and piece.first_line is None:
        hint = f"[bytes {piece.start}-{piece.end} of {piece.size}; earlier text: offset and length]"
    if (
        piece.first_line is not None
        and piece.text == ""
        and piece.size > 0
        and window["tail"] is None
        and window["start_line"] is not None
    ):
        return f"[the file has fewer than {piece.first_line} lines ({piece.size} bytes)]"
    if hint is None:
        return text
    return text + ("" if text.endswith("\n") or not text else "\n") + hint


def _read_text(
    fs: RootedFS, path: object, window: Mapping[str, int | None], room: int, budget: Budget
) -> tuple[str, str]:
    """``(canonical path, text to show)``: the window asked for, or the binary answer."""
    with _opened(fs, path) as (fd, st, display):
        head = os.pread(fd, BINARY_SNIFF, 0)
        if looks_binary(head):
            return display, _binary_answer(head, st.st_size)
        return display, _render_slice(_read_window(fd, st.st_size, window, room, budget.check), window)


def read_file(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = _path_arg(args)
    window = _window_args(args)
    explicit = window["length"] is not None
    room = min(limits.max_read, window["length"] or 0) if explicit else min(limits.default_read, limits.max_read)
    return ToolOutput(_read_text(fs, path, window, room, _budget(context))[1])


def read_multiple_files(
    fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]
) -> ToolOutput:
    paths = args.get("paths")
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
        raise ToolError("argument 'paths' must be a non-empty list of non-empty strings")
    if len(paths) > limits.max_files:
        raise ToolError(f"at most {limits.max_files} paths per call")
    budget = _budget(context)
    room = limits.max_output
    window = {key: None for key in ("start_line", "end_line", "head", "tail", "offset", "length")}
    parts: list[str] = []
    for index, path in enumerate(paths):
        per_file = min(limits.default_read, limits.max_read, room)
        if per_file <= 0:
            parts.append(f"==> paths[{index}] <==\n[not read: the answer is full; read it with read_file]")
            continue
        try:
            display, body = _read_text(fs, path, window, per_file, budget)
        except ToolError as error:
            if isinstance(error, Cancelled) or "deadline" in str(error):
                raise
            parts.append(f"==> paths[{index}] <==\nerror: {error}")
            continue
        except RootsError as error:
            parts.append(f"==> paths[{index}] <==\nerror: {describe(error)}")
            continue
        except (OSError, ValueError, UnicodeError):
            parts.append(f"==> paths[{index}] <==\nerror: denied: the path could not be resolved safely")
            continue
        room -= len(body.encode("utf-8", "surrogatepass"))
        parts.append(f"==> {escape(display)} <==\n{body}")
    return ToolOutput("\n\n".join(parts))


def read_media_file(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = _path_arg(args)
    with _opened(fs, path) as (fd, st, _display):
        head = os.pread(fd, max(SNIFF_BYTES, 4096), 0)
        kind = sniff(head)
        if kind.kind not in ("image", "audio"):
            what = "text" if kind.kind == "text" else f"{kind.label} ({kind.mime})"
            raise ToolError(f"not an image or audio file: {what}, {st.st_size} bytes; use read_file for text")
        if st.st_size > limits.max_media:
            raise ToolError(f"{kind.label} of {st.st_size} bytes is over the {limits.max_media}-byte media limit")
        data = _pread(fd)(0, limits.max_media + 1)
        if len(data) > limits.max_media:
            raise TooLarge()
    encoded = base64.b64encode(data).decode("ascii")
    return ToolOutput(f"{kind.label}, {len(data)} bytes, {kind.mime}", None, (Media(kind.kind, kind.mime, encoded),))


def stat(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = _path_arg(args)
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
    info: dict[str, Any] = {}
    if kind != "symlink":
        info["path"] = str(fs.boundary.resolve(path, must_exist=True))
    info.update(
        {
            "type": kind,
            "size": st.st_size,
            "mode": stat_module.filemode(st.st_mode),
            "modified": _iso(st.st_mtime),
            "links": st.st_nlink,
        }
    )
    if kind == "file":
        with contextlib.suppress(RootsError, OSError), _opened(fs, path) as (fd, _st, _display):
            head = os.pread(fd, SNIFF_BYTES, 0)
            info["mime"] = sniff(head).mime
    lines = [f"{key}: {escape(str(value))}" for key, value in info.items()]
    return ToolOutput("\n".join(lines), info)


# -- searching -------------------------------------------------------------------------------------------------


def search_files(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    pattern = _str_arg(args, "pattern")
    assert pattern is not None
    matches = name_matcher(pattern)
    where = _filter(args)
    budget = _budget(context)
    found: list[str] = []
    truncated = False
    for start in _targets(fs, _str_arg(args, "path", required=False)):
        try:
            for item in walk(fs, start, where, check=budget.check):
                if matches(item.rel, item.name, item.kind == "dir"):
                    if len(found) >= limits.max_results:
                        truncated = True
                        break
                    found.append(item.display)
        except LimitExceeded:
            truncated = True
        if truncated:
            break
    found.sort()
    structured = {"matches": found, "truncated": truncated}
    if not found:
        return ToolOutput("(no matches)", structured)
    return ToolOutput(bounded([escape(p) for p in found], limits.max_output, more=truncated), structured)


def grep(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    pattern = _str_arg(args, "pattern")
    assert pattern is not None
    regex = _bool_arg(args, "regex")
    ignore_case = _bool_arg(args, "ignore_case")
    compiled = compile_bytes(pattern, regex=regex, ignore_case=ignore_case)
    required = None if regex or ignore_case else pattern.encode("utf-8", "surrogatepass")
    files_only = _bool_arg(args, "files_only")
    around = _int_arg(args, "context", minimum=0, maximum=10) or 0
    per_file = _int_arg(args, "max_per_file", minimum=1, maximum=200) or limits.max_per_file
    where = _filter(args, include=True)
    budget = _budget(context)
    grep_limits = GrepLimits(
        max_matches=limits.max_matches, max_per_file=min(per_file, limits.max_matches), context=around
    )
    lines: list[str] = []
    matches: list[dict[str, Any]] = []
    files: list[str] = []
    truncated = False
    capped = searched = skipped = 0
    for start in _targets(fs, _str_arg(args, "path", required=False)):
        report = grep_tree(
            fs,
            start,
            compiled,
            where,
            limits=GrepLimits(
                max_matches=grep_limits.max_matches - len(matches),
                max_per_file=grep_limits.max_per_file,
                context=around,
            ),
            files_only=files_only,
            max_files=limits.max_results - len(files),
            check=budget.check,
            required=required,
        )
        searched += report.searched
        skipped += report.skipped
        capped += report.capped_files
        for display, hits in report.files:
            files.append(display)
            shown = escape(display)
            if files_only:
                lines.append(shown)
                continue
            if around and lines:
                lines.append("--")
            for hit in hits:
                if hit.gap:
                    lines.append("--")
                sep = ":" if hit.match else "-"
                lines.append(f"{shown}{sep}{hit.number}{sep}{escape_line(hit.text)}")
                matches.append({"path": display, "line": hit.number, "text": hit.text, "context": not hit.match})
        if report.truncated:
            truncated = True
            break
    structured = {
        "matches": matches,
        "files": files,
        "files_searched": searched,
        "files_skipped": skipped,
        "truncated": truncated,
    }
    if not lines:
        return ToolOutput("(no matches)", structured)
    text = bounded(lines, limits.max_output, more=truncated)
    if capped:
        text += f"\n[{capped} files had more than {grep_limits.max_per_file} matches: raise max_per_file to see more]"
    return ToolOutput(text, structured)


def find_projects(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
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
    projects = dict(sorted(projects.items()))
    items = [{"path": str(path), "markers": sorted(names)} for path, names in projects.items()]
    structured = {"projects": items, "truncated": more}
    if not projects:
        return ToolOutput("(no projects found)", structured)
    lines = [
        f"{escape(str(path))}  [{', '.join(map(escape, sorted(names)))}]" for path, names in sorted(projects.items())
    ]
    return ToolOutput(bounded(lines, limits.max_output, more=more), structured)


def write_file(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = _path_arg(args)
    content = args.get("content")
    if not isinstance(content, str):
        raise ToolError("argument 'content' must be a string")
    written = fs.write_text(path, content)
    return ToolOutput(f"wrote {len(content.encode('utf-8'))} bytes to {escape(str(written))}")


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
    "write_file": write_file,
}
assert set(_IMPLEMENTATIONS) == {spec.name for spec in TOOLS}


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
        raise ToolError("unknown tool")
    try:
        return function(fs, args, limits, context or {})
    except ToolError:
        raise
    except RootsError as error:
        message = describe(error)
        if not len(fs.boundary) and "outside roots" in message:
            message = f"{message}: {NO_ROOTS_HELP}"
        raise ToolError(message) from None
    except (OSError, ValueError, UnicodeError):
        raise ToolError("denied: the path could not be resolved safely") from None


def run_tool(
    name: str, fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any] | None = None
) -> str:
    """:func:`call_tool`'s text."""
    return call_tool(name, fs, args, limits, context).text


def describe(error: RootsError) -> str:
    """The user-facing text for a denial: its fixed message and reason class, never the input."""
    if isinstance(error, InvalidPath):
        return f"denied: invalid path ({error.reason})"
    return f"{error.message} ({error.reason})" if error.reason else error.message


def tool_specs(writable: bool) -> Sequence[ToolSpec]:
    """The tools a server offers: the write tools only when ``writable``."""
    return [spec for spec in TOOLS if writable or not spec.writes]
