"""The listing tools of ``rootbound serve``: ``list_roots``, ``list_directory``, ``directory_tree``, ``stat``.

What a model asks first: which roots it has, and what is in them. Every path goes through the confined file system;
output is bounded and a cut is marked, never silent.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_module
from collections.abc import Mapping
from typing import Any, Final

from rootbound.confine.boundary import Intent
from rootbound.confine.fd_access import O_PATH, READ_FLAGS
from rootbound.confine.write_domain import write_wall
from rootbound.core.errors import LimitExceeded, RootsError
from rootbound.search.ignore_walk import WalkLimits, walk
from rootbound.search.rooted_fs import RootedFS
from rootbound.text.media_types import SNIFF_BYTES, sniff
from rootbound.workspace.tools.answer_fit import cut_marker, fit_count, json_chars
from rootbound.workspace.tools.calls import (
    Limits,
    ToolError,
    ToolOutput,
    bool_arg,
    budget_of,
    describe,
    int_arg,
    iso,
    path_arg,
    str_arg,
)
from rootbound.workspace.tools.directory_pages import (
    BAD_CURSOR,
    MAX_CURSOR,
    MAX_PAGE,
    SORTS,
    Order,
    list_page,
    next_cursor,
)
from rootbound.workspace.tools.render import TRUNCATED, escape, plain
from rootbound.workspace.tools.walk_scope import NO_ROOTS_HELP, NotEntered, not_entered_note, path_filter, with_note


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
    said = context.get("why")  # the server's reading of the client's roots (workspace/effective_roots.py EmptyRoots)
    if roots and said:
        lines.append(f"why: {said}")
        structured["why"] = str(said)
    if not roots:
        why = (
            "no root the client declared could be used: see the reasons above"
            if refused
            else said or "the client declared no roots"
            if source in ("client", "none")  # "none": no DIRs and no client roots (workspace/effective_roots.py)
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
    # Both forms fit the answer's limit: room for the path, the marker and its cursor (twice: text and JSON).
    room = limits.max_output - json_chars(page.directory) - 2 * MAX_CURSOR - 512
    fits = max(fit_count([len(line) + 1 for line in lines], [json_chars(e) + 1 for e in entries], room, room), 1)
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


def directory_tree(fs: RootedFS, args: Mapping[str, Any], limits: Limits, context: Mapping[str, Any]) -> ToolOutput:
    path = path_arg(args)
    depth = int_arg(args, "max_depth", minimum=1, maximum=limits.max_tree_depth) or limits.tree_depth
    cap = min(int_arg(args, "max_entries", minimum=1, maximum=5000) or limits.max_results, 5000)
    where = path_filter(args)
    budget = budget_of(context)
    entries: list[dict[str, Any]] = []
    lines: list[str] = []
    truncated = depth_limited = False
    skipped = NotEntered()
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
    note = not_entered_note(skipped.count)
    if not lines:
        return ToolOutput(with_note(header + "\n(empty)", note), structured)
    room = limits.max_output - 2 * len(header) - len(note) - 512  # the header twice: as text and as "path"
    fits = fit_count([len(line) + 1 for line in lines], [json_chars(e) + 1 for e in entries], room, room)
    if fits < len(lines):
        shown = f"the first {fits} entries" if truncated else f"{fits} of {len(lines)} entries"
        del lines[fits:], entries[fits:]
        lines.append(cut_marker(shown, limits.max_output, "a smaller max_depth, exclude, or a deeper path"))
        structured["truncated"] = True
    elif truncated:
        lines.append(TRUNCATED.format(shown=f"the first {fits}"))
    text = header + "\n" + "\n".join(lines)
    return ToolOutput(with_note(text, note), structured)


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
