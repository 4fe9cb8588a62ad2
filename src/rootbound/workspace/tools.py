"""The tools of ``rootbound serve``: what each does on a :class:`~rootbound.RootedFS`.

The reading tools live in :mod:`rootbound.workspace.reading`, what every call shares in
:mod:`rootbound.workspace.calls`; this module has the rest and the table of all of them. Built only on rootbound's
core: every path a tool touches goes through the confined file system, so the tools
cannot do anything the boundary would not allow. Output is bounded; a cut is marked, never silent. Each tool
returns text for the model and, where the result has a shape (:mod:`rootbound.workspace.specs`), the same
result as structured content. Long walks call :meth:`Budget.check` per entry, so a per-call deadline and a
client's cancellation stop them promptly.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_module
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from rootbound.confine.boundary import LSTAT, EffectiveRoot, Intent
from rootbound.confine.fd_access import O_PATH, READ_FLAGS
from rootbound.confine.write_domain import write_wall
from rootbound.core.errors import LimitExceeded, OutsideRoots, RootsError
from rootbound.search.agent_grep import GrepLimits
from rootbound.search.chunk_scan import Lease, grep_shared
from rootbound.search.ignore_rules import PathFilter, name_matcher
from rootbound.search.ignore_walk import WalkLimits, walk
from rootbound.search.index.indexed_search import grep_with_index, names_with_index
from rootbound.search.index.registry import IndexRegistry
from rootbound.search.rooted_fs import RootedFS
from rootbound.search.safe_regex import compile_bytes, line_local
from rootbound.search.scan_helper import ScanHelper
from rootbound.text.media_types import SNIFF_BYTES, sniff
from rootbound.workspace._listing import BAD_CURSOR, MAX_CURSOR, MAX_PAGE, SORTS, Order, list_page, next_cursor
from rootbound.workspace.calls import (
    Budget,
    Limits,
    Media,
    ToolError,
    ToolOutput,
    bool_arg,
    budget_of,
    describe,
    globs_arg,
    int_arg,
    iso,
    path_arg,
    str_arg,
)
from rootbound.workspace.error_fixes import UNRESOLVED, explain
from rootbound.workspace.reading import read_file, read_media_file, read_multiple_files
from rootbound.workspace.render import bounded, escape, escape_line, plain, plain_lines
from rootbound.workspace.specs import PROJECT_DEPTH, PROJECT_MARKERS, PROJECT_PRUNED, TOOLS, ToolSpec
from rootbound.workspace.write_tools import WRITE_IMPLEMENTATIONS, WRITE_TOOLS

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


def _filter(args: Mapping[str, Any], *, include: bool = False) -> PathFilter:
    return PathFilter(
        exclude=globs_arg(args, "exclude"),
        include=globs_arg(args, "include") if include else (),
        gitignore=not bool_arg(args, "include_ignored"),
    )


def _filter_key(args: Mapping[str, Any], *, include: bool = False) -> tuple[object, ...]:
    """What :func:`_filter` was built from: the index keeps one walk result per start and key."""
    return (
        tuple(globs_arg(args, "exclude")),
        tuple(globs_arg(args, "include")) if include else (),
        not bool_arg(args, "include_ignored"),
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


def _targets(fs: RootedFS, path: str | None, context: Mapping[str, Any]) -> list[object]:
    """The search starting points: the named directory, or the directory roots whose trees make up the union of
    all of them, each once (:func:`_tree_roots`)."""
    if path is not None:
        return [path]
    return [root.path for root in _searched_roots(fs, context)]


NO_DIRECTORY_ROOT: Final = (
    "nothing to search: every root is a single file, not a directory. Fix: read the files with read_file "
    "(list_roots shows them), or have the client declare a directory as a root"
)


def _searched_roots(fs: RootedFS, context: Mapping[str, Any]) -> list[EffectiveRoot]:
    """:func:`_tree_roots`, refusing (a tool error, never an empty success) when there is none to walk: with no
    roots a search answering "(no matches)" reads as "no such files" (issue 26 #2)."""
    if not len(fs.boundary):
        raise ToolError(no_roots(context))
    roots = _tree_roots(fs)
    if not roots:
        raise ToolError(NO_DIRECTORY_ROOT)
    return roots


def _tree_roots(fs: RootedFS) -> list[EffectiveRoot]:
    """The directory roots to walk so that every file of every root is visited once (issue 16 #3).

    A root held twice under two names (a bind mount of another root: the same ``st_dev``/``st_ino``) is walked
    once. A root beneath another is left to that one's walk: its path is opened through the boundary, which
    resolves it from the outermost root lexically containing it, on that root's fd and with its mount policy
    (the walk's own), and only when that open lands on the very directory held for the inner root (same
    ``st_dev``/``st_ino``) is it beneath: never a string prefix alone. Anything unproven is walked on its own.
    """
    boundary = fs.boundary
    kept: list[EffectiveRoot] = []
    seen: set[tuple[int, int]] = set()
    for root in boundary:
        identity = (root.dev, root.ino)
        if root.kind != "dir" or identity in seen:
            continue
        seen.add(identity)
        try:
            with boundary.open(str(root.path), LSTAT, resolver=fs.resolver) as handle:
                outer, st = handle.root, handle.fstat()
        except (RootsError, OSError):
            kept.append(root)  # not provably reachable from another root: its own walk
            continue
        if outer is not root and (outer.dev, outer.ino) != identity and (st.st_dev, st.st_ino) == identity:
            continue  # beneath ``outer``, whose walk reaches it
        kept.append(root)
    return kept


NO_ROOTS_HELP: Final = (
    "no roots: every path is denied. Fix: have the client declare a root (a directory it wants this server to "
    "use), or start the server with one: rootbound serve DIR"
)


NO_ROOTS_FIX: Final = "no roots: every path is denied. Fix: {}"


def no_roots(context: Mapping[str, Any] | None) -> str:
    """ "No roots", with the fix that fits this client's situation (``EmptyRoots`` in workspace/server.py) when the
    server gave one, else the general one."""
    fix = (context or {}).get("fix")
    return NO_ROOTS_FIX.format(fix) if fix else NO_ROOTS_HELP


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
    said = context.get("why")  # the server's reading of the client's roots (workspace/server.py EmptyRoots)
    if roots and said:
        lines.append(f"why: {said}")
        structured["why"] = str(said)
    if not roots:
        why = (
            "no root the client declared could be used: see the reasons above"
            if refused
            else said or "the client declared no roots"
            if source in ("client", "none")  # "none": no DIRs and no client roots (workspace/server.py)
            else "the operator's directories are gone"
        )
        fix = context.get("fix")
        note = (
            f"no roots: every path is denied. Fix: {fix} ({why})" if fix and not refused else f"{NO_ROOTS_HELP} ({why})"
        )
        lines.insert(0, "(no roots: every path is denied)")
        lines.append(note)
        structured["note"] = note
    sandbox = context.get("sandbox")
    if sandbox:  # the kernel wall under the boundary (docs/security.md, "Defence in depth")
        lines.append(f"sandbox: {sandbox}")
        structured["sandbox"] = str(sandbox)
    located = str_arg(args, "path", required=False)
    if located is not None:
        lines.append(_locate(fs, located, structured))
    if not fs.read_only:  # issue 33 #1: which wall this root set's writes have, never a silent fallback
        wall = write_wall()
        lines.append(f"writes: held beneath these roots by {wall}")
        structured["writes"] = wall
    lines.append(f"source: {source}")
    return ToolOutput("\n".join(lines), structured)


def _locate(fs: RootedFS, path: str, structured: dict[str, Any]) -> str:
    """list_roots' ``path``: the root that serves it, or the denial (its reason class), never the input echoed."""
    try:
        found = fs.boundary.resolve(path, must_exist=False)
    except RootsError as error:
        structured["located"] = {"served": False, "reason": describe(error)}
        return f"path: not served: {describe(error)}"
    root = next((r for r in fs.boundary if found == r.path or r.path in found.parents), None)
    structured["located"] = {"served": True, "path": str(found), "root": root.uri if root else None}
    return f"path: {escape(str(found))} is served" + (f", in root {root.uri}" if root else "")


_SUFFIX: Final = {"dir": "/", "symlink": "@"}


def list_directory(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = path_arg(args)
    details = bool_arg(args, "details")
    sort_by = args.get("sort_by") or "name"
    if sort_by not in SORTS:
        raise ToolError("argument 'sort_by' must be 'name', 'size' or 'modified'")
    order = Order(SORTS[SORTS.index(sort_by)], bool_arg(args, "reverse"))
    cap = int_arg(args, "max_entries", minimum=1, maximum=MAX_PAGE) or limits.max_results
    cursor = args.get("cursor")
    if cursor is not None and (not isinstance(cursor, str) or len(cursor) > MAX_CURSOR):
        raise ToolError(BAD_CURSOR)
    page = list_page(fs, path, order, cap=cap, cursor=cursor, details=details, check=budget_of(context).check)
    rows = page.entries
    names = [row.name for row in rows]
    shown_names = names if plain(names) else [escape(name) for name in names]
    if details:
        entries: list[dict[str, Any]] = []
        lines: list[str] = []
        for row, name in zip(rows, shown_names, strict=True):
            item: dict[str, Any] = {"name": row.name, "type": row.kind}
            st, name = row.st, name + _SUFFIX.get(row.kind, "")
            if st is None:
                lines.append(f"{row.kind:<7} {'-':>12}  {'-':<25}  {name}")
            else:
                item["size"], item["modified"] = st.st_size, iso(st.st_mtime)
                lines.append(f"{row.kind:<7} {st.st_size:>12}  {item['modified']}  {name}")
            entries.append(item)
    else:
        entries = [{"name": row.name, "type": row.kind} for row in rows]
        lines = [name + _SUFFIX.get(row.kind, "") for row, name in zip(rows, shown_names, strict=True)]
    # A full text ends the page early (at least one entry); the cursor continues from the last entry shown.
    fits = _fitting(lines, limits.max_output - 512)  # room for the marker and its cursor
    del lines[fits:], entries[fits:]
    shown = len(entries)
    more = page.more or shown < len(page.entries)
    structured: dict[str, Any] = {"path": page.directory, "entries": entries, "total": page.total, "truncated": more}
    if more:
        structured["nextCursor"] = next_cursor(page, order, shown)
    if page.before or more:
        first = page.before + 1
        where = f"entries {first}-{page.before + shown} of {page.total}" if shown else "no entries after the cursor"
        lines.append(
            f'[{where}; more: call again with cursor="{structured["nextCursor"]}"]' if more else f"[{where}: the end]"
        )
    elif not shown:
        return ToolOutput("(empty directory)", structured)
    return ToolOutput("\n".join(lines), structured)


def _fitting(lines: list[str], room: int) -> int:
    """How many of ``lines`` fit in ``room`` characters, joined by newlines (at least one)."""
    if sum(map(len, lines)) + len(lines) <= room:
        return len(lines)
    for count, line in enumerate(lines):
        room -= len(line) + 1
        if room < 0:
            return max(count, 1)
    return len(lines)


class _NotEntered:
    """Counts the directories a walk could not enter, for the line that says so (nothing silent)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, path: str) -> None:
        self.count += 1


def _not_entered(count: int) -> str:
    if not count:
        return ""
    what = "directory" if count == 1 else "directories"
    return f"[not entered: {count} {what} (unreadable, on another file system, or changed while walked)]"


def _with_note(text: str, note: str) -> str:
    return f"{text}\n{note}" if note else text


def directory_tree(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = path_arg(args)
    depth = int_arg(args, "max_depth", minimum=1, maximum=limits.max_tree_depth) or limits.tree_depth
    cap = min(int_arg(args, "max_entries", minimum=1, maximum=5000) or limits.max_results, 5000)
    where = _filter(args)
    budget = budget_of(context)
    entries: list[dict[str, Any]] = []
    lines: list[str] = []
    truncated = depth_limited = False
    skipped = _NotEntered()
    try:
        walked = walk(
            fs, path, where, limits=WalkLimits(max_depth=depth), check=budget.check, peek=True, not_entered=skipped
        )
        for found in walked:
            if len(entries) >= cap:
                truncated = True
                break
            entry: dict[str, Any] = {"path": found.rel, "type": found.kind, "depth": found.depth}
            suffix = _SUFFIX.get(found.kind, "")
            if found.more:  # a directory at max_depth with something in it that would be shown: not expanded
                suffix = "/…"
                entry["more"] = depth_limited = True
            entries.append(entry)
            lines.append("  " * (found.depth - 1) + escape(found.name) + suffix)
    except LimitExceeded:
        truncated = True
    start = fs.boundary.resolve(path)
    structured = {"path": str(start), "entries": entries, "truncated": truncated, "depth_limited": depth_limited}
    header = escape(str(start)) + "/"
    note = _not_entered(skipped.count)
    if not lines:
        return ToolOutput(_with_note(header + "\n(empty)", note), structured)
    text = header + "\n" + bounded(lines, limits.max_output - len(header) - len(note) - 1, more=truncated)
    return ToolOutput(_with_note(text, note), structured)


_STAT_NAMED: Final = Intent("stat", O_PATH, follow=False, named=True)
"""What ``stat`` opens: the object itself (a final symlink not followed), with its canonical path, in one open."""
_KINDS: Final = {stat_module.S_IFDIR: "directory", stat_module.S_IFREG: "file", stat_module.S_IFLNK: "symlink"}


def stat(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = path_arg(args)
    with fs.boundary.open(path, _STAT_NAMED, resolver=fs.resolver) as handle:
        st = handle.fstat()
        kind = _KINDS.get(stat_module.S_IFMT(st.st_mode), "other")
        info: dict[str, Any] = {
            "path": handle.prefix[:-1] or "/",  # the canonical path, as a string (no Path built per call)
            "type": kind,
            "size": st.st_size,
            "mode": stat_module.filemode(st.st_mode),
            "modified": iso(st.st_mtime),
            "links": st.st_nlink,
        }
        if kind == "file" and (st.st_nlink == 1 or fs.hardlinks != "refuse"):
            # Only a regular file is opened for reading, through the O_PATH fd just checked (never by name).
            with contextlib.suppress(RootsError, OSError):
                fd = handle.reopen(READ_FLAGS)
                try:
                    info["mime"] = sniff(os.pread(fd, SNIFF_BYTES, 0)).mime
                finally:
                    os.close(fd)
    lines = [f"{key}: {escape(str(value))}" for key, value in info.items()]
    return ToolOutput("\n".join(lines), info)


def search_files(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    pattern = str_arg(args, "pattern")
    assert pattern is not None
    matches = name_matcher(pattern)
    where = _filter(args)
    budget = budget_of(context)
    found: list[str] = []
    truncated = False
    skipped = _NotEntered()
    index = _index_of(context)
    statuses: list[str] = []
    for start in _targets(fs, str_arg(args, "path", required=False), context):
        if index is not None:
            answer, status = names_with_index(
                index,
                fs,
                start,
                where,
                _filter_key(args),
                matches,
                pattern,
                limits.max_results - len(found),
                budget.check,
            )
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
    note = "\n".join(line for line in (_not_entered(skipped.count), _answered_by(statuses)) if line)
    if not found:
        return ToolOutput(_with_note("(no matches)", note), structured)
    shown = found if plain(found) else [escape(p) for p in found]  # one search for the whole list, most often
    text = bounded(shown, limits.max_output - len(note) - 1, more=truncated)
    return ToolOutput(_with_note(text, note), structured)


def grep(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    helper = _helper_of(context)
    if helper is None:
        return _grep(fs, args, limits, context, None)
    with helper.take() as lease:  # both cores for a scan, when no other call has the helper (never waits)
        return _grep(fs, args, limits, context, lease)


def _grep(
    fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any], lease: Lease | None
) -> ToolOutput:
    pattern = str_arg(args, "pattern")
    assert pattern is not None
    regex = bool_arg(args, "regex")
    ignore_case = bool_arg(args, "ignore_case")
    compiled = compile_bytes(pattern, regex=regex, ignore_case=ignore_case)
    required = None if regex or ignore_case else pattern.encode("utf-8", "surrogatepass")
    files_only = bool_arg(args, "files_only")
    around = int_arg(args, "context", minimum=0, maximum=10) or 0
    per_file = int_arg(args, "max_per_file", minimum=1, maximum=200) or limits.max_per_file
    where = _filter(args, include=True)
    budget = budget_of(context)
    grep_limits = GrepLimits(
        max_matches=limits.max_matches, max_per_file=min(per_file, limits.max_matches), context=around
    )
    lines: list[str] = []
    matches: list[dict[str, Any]] = []
    files: list[str] = []
    truncated = False
    capped = searched = skipped = not_entered = 0
    why = {"too_large": 0, "binary": 0, "links": 0, "unreadable": 0}
    index = _index_of(context)
    statuses: list[str] = []
    for start in _targets(fs, str_arg(args, "path", required=False), context):
        call_limits = GrepLimits(
            max_matches=grep_limits.max_matches - len(matches), max_per_file=grep_limits.max_per_file, context=around
        )
        report = None
        if index is not None:
            report, status = grep_with_index(
                index,
                fs,
                start,
                compiled,
                where,
                _filter_key(args, include=True),
                (pattern, regex, ignore_case),
                limits=call_limits,
                files_only=files_only,
                max_files=limits.max_results - len(files),
                check=budget.check,
                required=required,
                deadline=budget.deadline,
                line_local=line_local(pattern, regex=regex),
                lease=lease,
            )
            if status:
                statuses.append(status)
        if report is None:
            report = grep_shared(
                fs,
                start,
                compiled,
                where,
                lease,
                source=(pattern, regex, ignore_case),
                limits=call_limits,
                files_only=files_only,
                max_files=limits.max_results - len(files),
                check=budget.check,
                required=required,
                deadline=budget.deadline,
                line_local=line_local(pattern, regex=regex),
            )
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
    notes = (_not_searched(why, grep_limits.max_file_size), _not_entered(not_entered), _answered_by(statuses))
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
    for start in _targets(fs, str_arg(args, "path", required=False), context):
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
        return function(fs, args, limits, context)
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
