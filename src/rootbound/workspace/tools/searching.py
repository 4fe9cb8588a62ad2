"""The searching tools of ``rootbound serve``: ``search_files``, ``grep``, ``find_projects``.

Each walks the trees :mod:`.walk_scope` names through the search layer (:mod:`rootbound.search`), answered by the
index when there is one and by a scan otherwise; long walks call :meth:`Budget.check` per entry, so a per-call
deadline and a client's cancellation stop them promptly. Output is bounded; a cut is marked, never silent.
"""

from __future__ import annotations

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


def _answered_by(statuses: list[str]) -> str:
    """The answer's last line: which path answered (``[index]``, ``[scan: building index 40%]``); empty without an
    index."""
    if not statuses:
        return ""
    other = next((status for status in statuses if status and status != "index"), None)
    if other is None:
        return "[index]"
    return f"[{other}]" if other.startswith("scan") else f"[scan: {other}]"


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
    note = "\n".join(line for line in (not_entered_note(skipped.count), _answered_by(statuses)) if line)
    if not found:
        return ToolOutput(with_note("(no matches)", note), structured)
    shown = found if plain(found) else [escape(p) for p in found]  # one search for the whole list, most often
    text = bounded(shown, limits.max_output - len(note) - 1, more=truncated)
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
                continue
            if around and lines:
                lines.append("--")
            for hit in hits:
                if hit.gap:
                    lines.append("--")
                sep = ":" if hit.match else "-"
                lines.append(f"{shown}{sep}{hit.number}{sep}{hit.text if clean else escape_line(hit.text)}")
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
    notes = (_not_searched(why, grep_limits.max_file_size), not_entered_note(not_entered), _answered_by(statuses))
    note = "\n".join(line for line in notes if line)
    if not lines:
        text = f"(no matches in {searched} {_files(searched)} searched)"
        return ToolOutput(f"{text}\n{note}" if note else text, structured)
    text = bounded(lines, limits.max_output - len(note) - 1, more=truncated)
    if capped:
        text += f"\n[{capped} files had more than {grep_limits.max_per_file} matches: raise max_per_file to see more]"
    return ToolOutput(f"{text}\n{note}" if note else text, structured)


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
    return ToolOutput(bounded(lines, limits.max_output, more=more), structured)
