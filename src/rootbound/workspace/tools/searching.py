"""The searching tools of ``rootbound serve``: ``search_files``, ``grep``, ``find_projects``.

Each walks the trees :mod:`.walk_scope` names through the search layer (:mod:`rootbound.search`), answered by the
index when there is one and by a scan otherwise; long walks call :meth:`Budget.check` per entry, so a per-call
deadline and a client's cancellation stop them promptly. Output is bounded; a cut is marked, never silent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from rootbound.core.errors import LimitExceeded
from rootbound.search.chunk_scan import Lease, grep_shared
from rootbound.search.grep_query import NamesQuery
from rootbound.search.ignore_rules import name_matcher
from rootbound.search.ignore_walk import walk
from rootbound.search.index.indexed_search import grep_with_index, names_with_index
from rootbound.search.index.registry import IndexRegistry
from rootbound.search.rooted_fs import RootedFS
from rootbound.search.scan_helper import ScanHelper
from rootbound.workspace.tools.answer_fit import cut_marker, fit_count, json_chars
from rootbound.workspace.tools.calls import (
    GrepRequest,
    Limits,
    ToolOutput,
    budget_of,
    grep_request,
    str_arg,
)
from rootbound.workspace.tools.render import bounded, escape, escape_line, plain, plain_lines
from rootbound.workspace.tools.specs import PROJECT_DEPTH, PROJECT_MARKERS, PROJECT_PRUNED
from rootbound.workspace.tools.walk_scope import (
    NotEntered,
    filter_key,
    not_entered_note,
    path_filter,
    start_points,
    with_note,
)


def _index_of(context: Mapping[str, Any]) -> IndexRegistry | None:
    index = context.get("index")
    return index if isinstance(index, IndexRegistry) else None


def _helper_of(context: Mapping[str, Any]) -> ScanHelper | None:
    helper = context.get("scan_helper")
    return helper if isinstance(helper, ScanHelper) else None


def _answered_by(statuses: list[str], context: Mapping[str, Any]) -> str:
    """The answer's last line about the index (``[scan: building index 40%]``), or nothing.

    In a session (``context["index_said"]``, the server's per-connection set) each kind of status is said once,
    the first time it applies, and ``[index]`` never: the answer is the same whichever path gave it, so the line
    only explains a slow search, once (issue 50 item 6). What an answer leaves out is said by its own markers,
    every time. A library caller, with no session, is told on every answer."""
    if not statuses:
        return ""
    other = next((status for status in statuses if status and status != "index"), None)
    line = "[index]" if other is None else f"[{other}]" if other.startswith("scan") else f"[scan: {other}]"
    said = context.get("index_said")
    if not isinstance(said, set):
        return line
    # "building index 40%", "building index 60%" and "index not ready" are one kind: the index is on its way.
    kind = "building" if "building index" in line or "index not ready" in line else re.sub(r"\d+", "", line)
    if line == "[index]" or kind in said:
        return ""
    said.add(kind)
    return line


def _running(context: Mapping[str, Any]) -> AbstractContextManager[None]:
    """This call counted as under way for the server's index builds, which make way for it (``index/calls.py``)."""
    index = _index_of(context)
    return nullcontext() if index is None else index.calls.running()


def search_files(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    with _running(context):
        return _search_files(fs, args, limits, context)


def _search_files(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    pattern = str_arg(args, "pattern")
    assert pattern is not None
    matches = name_matcher(pattern)
    where = path_filter(args)
    budget = budget_of(context)
    found: list[str] = []
    truncated = False
    skipped = NotEntered()
    index = _index_of(context)
    statuses: list[str] = []
    for start in start_points(fs, str_arg(args, "path", required=False), context):
        if index is not None:
            asked = NamesQuery(where, filter_key(args), matches, pattern, limits.max_results - len(found), budget.check)
            answer, status = names_with_index(index, fs, start, asked)
            statuses.append(status)
            if answer is not None:
                names, more, not_entered = answer
                found.extend(names)
                skipped.count += not_entered
                if more:
                    truncated = True
                    break
                continue
        try:
            for item in walk(fs, start, where, check=budget.check, keep=matches, not_entered=skipped):
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
    note = "\n".join(line for line in (not_entered_note(skipped.count), _answered_by(statuses, context)) if line)
    if not found:
        return ToolOutput(with_note("(no matches)", note), structured)
    shown = found if plain(found) else [escape(p) for p in found]  # one search for the whole list, most often
    room = limits.max_output - len(note) - 512
    fits = fit_count([len(line) + 1 for line in shown], [json_chars(name) + 1 for name in found], room, room)
    if fits < len(found):
        total = f"the first {fits} matches" if truncated else f"{fits} of {len(found)} matches"
        shown = [*shown[:fits], cut_marker(total, limits.max_output, "a deeper path, a longer pattern or exclude")]
        structured = {"matches": found[:fits], "truncated": True}
        return ToolOutput(with_note("\n".join(shown), note), structured)
    text = bounded(shown, len(shown) + sum(map(len, shown)), more=truncated)
    return ToolOutput(with_note(text, note), structured)


def grep(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    request = grep_request(args, limits, budget_of(context))
    helper = _helper_of(context)
    with _running(context):
        if helper is None:
            return _grep(fs, request, context, None)
        with helper.take() as lease:  # both cores for a scan, when no other call has the helper (never waits)
            return _grep(fs, request, context, lease)


def _grep(fs: RootedFS, request: GrepRequest, context: Mapping[str, Any], lease: Lease | None) -> ToolOutput:
    whole, limits = request.query, request.limits
    grep_limits, files_only, around = whole.limits, whole.files_only, whole.limits.context
    lines: list[str] = []
    matches: list[dict[str, Any]] = []
    files: list[str] = []
    truncated = False
    capped = searched = skipped = not_entered = 0
    why = {"too_large": 0, "binary": 0, "links": 0, "unreadable": 0}
    sizes = _Sizes()
    index = _index_of(context)
    statuses: list[str] = []
    for start in start_points(fs, request.path, context):
        query = whole.narrowed(grep_limits.max_matches - len(matches), limits.max_results - len(files))
        report = None
        if index is not None:
            report, status = grep_with_index(index, fs, start, query, lease)
            if status:
                statuses.append(status)
        if report is None:
            report = grep_shared(fs, start, query, lease)
        searched += report.searched
        skipped += report.skipped
        not_entered += report.dirs_not_entered
        for reason in why:
            why[reason] += getattr(report, reason)
        capped += report.capped_files
        # One check for the whole report, most often: a line is escaped one at a time only if any needs it.
        clean = plain_lines([hit.text for _, hits in report.files for hit in hits])
        for display, hits in report.files:
            files.append(display)
            shown = escape(display)
            if files_only:
                lines.append(shown)
                sizes.add(len(lines), len(shown) + 1, json_chars(display) + 1, len(files))
                continue
            before = len(lines)
            if around and lines:
                lines.append("--")
            file_json = json_chars(display) + 1  # counted with its first line: "files" names it once
            for hit in hits:
                if hit.gap:
                    lines.append("--")
                sep = ":" if hit.match else "-"
                lines.append(f"{shown}{sep}{hit.number}{sep}{hit.text if clean else escape_line(hit.text)}")
                matches.append({"path": display, "line": hit.number, "text": hit.text, "context": not hit.match})
                added = sum(len(line) + 1 for line in lines[before:])
                sizes.add(len(lines), added, json_chars(matches[-1]) + 1 + file_json, len(files))
                before, file_json = len(lines), 0
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
    answered = _answered_by(statuses, context)
    notes = (_not_searched(why, grep_limits.max_file_size), not_entered_note(not_entered), answered)
    note = "\n".join(line for line in notes if line)
    if not lines:
        text = f"(no matches in {searched} {_files(searched)} searched)"
        return ToolOutput(f"{text}\n{note}" if note else text, structured)
    room = limits.max_output - len(note) - 1024  # the note, the cut's marker, the capped files' line
    fits = fit_count(sizes.text, sizes.json, room, room - json_chars(structured) + json_chars(matches + files))
    if fits < len(sizes.text):
        structured["matches"] = matches[:fits] if not files_only else []
        structured["files"] = files[: sizes.files[fits - 1] if fits else 0]
        structured["truncated"] = True
        what = "files" if files_only else "lines"
        cut = cut_marker(f"the first {fits} {what}", limits.max_output, "a deeper path, include, or a lower context")
        lines = [*lines[: sizes.lines[fits - 1] if fits else 0], cut]
        truncated = False  # said by the marker
    text = bounded(lines, len(lines) + sum(map(len, lines)), more=truncated)
    if capped:
        text += f"\n[{capped} files had more than {grep_limits.max_per_file} matches: raise max_per_file to see more]"
    return ToolOutput(f"{text}\n{note}" if note else text, structured)


class _Sizes:
    """Per line of a grep answer (a match or context line; a file with files_only): the characters it adds to the
    text and to the structured result's JSON, and how many lines and files the answer has up to it."""

    __slots__ = ("files", "json", "lines", "text")

    def __init__(self) -> None:
        self.text: list[int] = []
        self.json: list[int] = []
        self.lines: list[int] = []
        self.files: list[int] = []

    def add(self, lines: int, text: int, json: int, files: int) -> None:
        self.lines.append(lines)
        self.text.append(text)
        self.json.append(json)
        self.files.append(files)


def _files(count: int, kind: str = "file") -> str:
    return kind if count == 1 else f"{kind}s"


def _not_searched(why: Mapping[str, int], max_size: int) -> str:
    """The files grep passed over, by reason, for the text a model reads (not only ``files_skipped``)."""
    mib = f"{max_size / (1024 * 1024):g} MiB"
    parts = []
    if why["too_large"]:
        count = why["too_large"]
        parts.append(f"{count} {_files(count)} over {mib} (grep reads files up to {mib}; read_file reads parts)")
    if why["binary"]:
        parts.append(f"{why['binary']} binary {_files(why['binary'])}")
    if why["links"]:
        parts.append(f"{why['links']} {_files(why['links'], 'symlink')} (not followed; grep its target's path)")
    if why["unreadable"]:
        parts.append(f"{why['unreadable']} unreadable {_files(why['unreadable'])}")
    return f"[not searched: {', '.join(parts)}]" if parts else ""


def find_projects(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    projects: dict[Path, list[str]] = {}
    markers = frozenset(PROJECT_MARKERS)
    more = False
    for start in start_points(fs, str_arg(args, "path", required=False), context):
        if more:
            continue
        for entry in fs.walk(start, max_depth=PROJECT_DEPTH, prune=PROJECT_PRUNED):
            if entry.path.name in markers:
                if entry.path.parent not in projects and len(projects) >= limits.max_results:
                    more = True
                    break
                projects.setdefault(entry.path.parent, []).append(entry.path.name)
    projects = dict(sorted(projects.items()))
    items = [{"path": str(path), "markers": sorted(names)} for path, names in projects.items()]
    structured = {"projects": items, "truncated": more}
    if not projects:
        return ToolOutput(
            f"(no projects found: looked {PROJECT_DEPTH} levels deep, not entering {', '.join(PROJECT_PRUNED)}; "
            "search_files finds a marker at any depth)",
            structured,
        )
    lines = [
        f"{escape(str(path))}  [{', '.join(map(escape, sorted(names)))}]" for path, names in sorted(projects.items())
    ]
    room = limits.max_output - 512
    fits = fit_count([len(line) + 1 for line in lines], [json_chars(item) + 1 for item in items], room, room)
    if fits < len(lines):
        total = f"the first {fits} projects" if more else f"{fits} of {len(lines)} projects"
        lines = [*lines[:fits], cut_marker(total, limits.max_output, "a deeper path")]
        return ToolOutput("\n".join(lines), {"projects": items[:fits], "truncated": True})
    return ToolOutput(bounded(lines, len(lines) + sum(map(len, lines)), more=more), structured)
