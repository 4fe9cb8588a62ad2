"""The listing side of the workspace as resources: ``resources/list`` (each root and its top level, never a walk of
the tree), ``resources/directory/read`` (SEP-2640's shape: one directory's direct children as metadata-only
``Resource`` objects, paginated) and path completion for the ``file:///{+path}`` template.

Every listing is one level of one directory, walked by :func:`rootbound.search.ignore_walk.walk` (opened through
:meth:`Boundary.open`, the tools' one way in; entries read beneath the held directory fd; sorted by name; the
ignore files applied unless the request asks to show ignored entries). A page starts a new walk: between pages the
directory is opened again through the boundary, so a directory swapped for a link out between two pages is
refused, never followed. Only regular files and directories are resources; symlinks and special files are left out.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from mcp.shared.exceptions import MCPError

from rootbound.confine.boundary import Handle, Intent
from rootbound.confine.fd_access import O_PATH
from rootbound.core.errors import LimitExceeded, RootsError
from rootbound.core.uri import child_uri, path_to_uri, uri_to_path
from rootbound.search.ignore_rules import PathFilter
from rootbound.search.ignore_walk import Found, WalkLimits, walk
from rootbound.search.rooted_fs import RootedFS
from rootbound.workspace.resources.addresses import (
    bad_request,
    decode_cursor,
    encode_cursor,
    not_found,
    split_uri,
)
from rootbound.workspace.resources.name_types import mime_of_name

__all__ = [
    "DIRECTORY_MIME",
    "MAX_COMPLETIONS",
    "MAX_LISTED",
    "PAGE",
    "Listing",
    "complete_path",
    "directory_page",
    "ignored",
    "list_page",
]

DIRECTORY_MIME: Final = "inode/directory"
PAGE: Final = 200
"""Resources per page (``resources/list`` and ``resources/directory/read``)."""
MAX_LISTED: Final = 100_000
"""Entries one directory may have to be paged at all (each page lists it, sorted, up to its cursor)."""
MAX_COMPLETIONS: Final = 100
"""Values one ``completion/complete`` answers (the spec's own cap)."""
TYPED: Final = Intent("resource", O_PATH, named=True)
"""A resource opened to learn what it is (a final in-root symlink followed, as the tools do), never for reading."""
_TOO_LARGE: Final = f"this directory has over {MAX_LISTED} entries: it cannot be paged; read the files by URI"


@dataclass(frozen=True)
class Listing:
    """One listing request: the URI (or completion value), the page cursor, whether ignored entries are shown."""

    uri: object
    cursor: object = None
    show_ignored: bool = False


def _filter(show_ignored: bool) -> PathFilter:
    return PathFilter(gitignore=not show_ignored)


def resource_of(path: str, *, is_dir: bool, size: int | None, parent_uri: str | None = None) -> dict[str, Any]:
    """A metadata-only ``Resource`` for a canonical path (nothing read: the MIME type of a file is guessed from
    its name; a directory's is ``inode/directory``); ``parent_uri``, its directory's URI when known."""
    name = path.rstrip("/").rpartition("/")[2] or "/"
    uri = child_uri(parent_uri, name) if parent_uri is not None else path_to_uri(path)
    resource: dict[str, Any] = {"uri": uri, "name": name}
    if is_dir:
        resource["mimeType"] = DIRECTORY_MIME
        return resource
    mime = mime_of_name(name)
    if mime is not None:
        resource["mimeType"] = mime
    if size is not None:
        resource["size"] = size
    return resource


def _entries(fs: RootedFS, path: object, show_ignored: bool, after: str | None) -> Iterator[dict[str, Any]]:
    """The directory's shown entries after the name ``after`` (name order), as resources."""
    found: Found
    parent: str | None = None  # the directory's URI, made once: each entry's is it plus its name
    try:
        keep = None if after is None else lambda rel, name, is_dir: name > after  # no Found made for earlier ones
        limits = WalkLimits(max_depth=1, max_entries=MAX_LISTED)
        for found in walk(fs, path, _filter(show_ignored), limits=limits, keep=keep):
            if parent is None:
                parent = path_to_uri(found.display.rpartition("/")[0] or "/")
            entry = found.entry
            if found.is_dir:
                yield resource_of(found.display, is_dir=True, size=None, parent_uri=parent)
            elif entry.is_file(follow_symlinks=False):
                try:
                    size: int | None = entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue  # gone meanwhile
                yield resource_of(found.display, is_dir=False, size=size, parent_uri=parent)
    except LimitExceeded:
        bad_request(_TOO_LARGE)


def _page(items: Iterator[dict[str, Any]], room: int) -> tuple[list[dict[str, Any]], bool]:
    """Up to ``room`` items, and whether there are more (one more is looked at, never kept)."""
    page: list[dict[str, Any]] = []
    for item in items:
        if len(page) == room:
            return page, True
        page.append(item)
    return page, False


def ignored(fs: RootedFS, path: str) -> bool:
    """Whether the ignore files hide the canonical ``path`` (a root never is): its parent's one-level walk, with
    the ignore rules, does not show its name. A parent that cannot be listed hides it (fails closed)."""
    if any(str(root.path) == path for root in fs.boundary):
        return False
    parent, _, name = path.rpartition("/")
    try:
        walked = walk(
            fs,
            parent or "/",
            _filter(False),
            limits=WalkLimits(max_depth=1, max_entries=MAX_LISTED),
            keep=lambda rel, entry_name, is_dir: entry_name == name,
        )
        try:
            return next(walked, None) is None
        finally:
            walked.close()
    except (RootsError, OSError, LimitExceeded):
        return True


@contextlib.contextmanager
def served(fs: RootedFS, uri: object, base: str, show_ignored: bool) -> Iterator[tuple[Handle, os.stat_result, str]]:
    """The entry ``base`` names, held open (``O_PATH``), with its stat and canonical path; SEP-2164's not-found for
    one the ignore rules hide, unless ``show_ignored``. What every resources method opens first."""
    with fs.boundary.open(base, TYPED, resolver=fs.resolver) as handle:
        st = handle.fstat()
        display = handle.prefix[:-1] or "/"
        if not show_ignored and ignored(fs, display):
            not_found(uri)
        yield handle, st, display


def directory_page(fs: RootedFS, request: Listing) -> dict[str, Any]:
    """``resources/directory/read``: one page of the directory's direct children; ``-32602`` (invalid params) on
    a served non-directory, SEP-2164's not-found on anything not served."""
    base, _ = split_uri(request.uri)
    after = decode_cursor(request.cursor, 1)[0] if request.cursor is not None else None
    try:
        with served(fs, request.uri, base, request.show_ignored) as (_, st, _):
            is_dir = stat.S_ISDIR(st.st_mode)
        if not is_dir:
            bad_request("not a directory: resources/directory/read lists directories; read a file with resources/read")
        page, more = _page(_entries(fs, base, request.show_ignored, after), PAGE)
    except (RootsError, OSError, ValueError, UnicodeError):
        not_found(request.uri)
    result: dict[str, Any] = {"resources": page}
    if more:
        result["nextCursor"] = encode_cursor(page[-1]["name"])
    return result


def _roots_from(
    fs: RootedFS, start: int, after: str | None, show_ignored: bool
) -> Iterator[tuple[int, dict[str, Any]]]:
    for index, root in enumerate(fs.boundary):
        if index < start:
            continue
        path = str(root.path)
        if index > start or after is None:
            yield index, resource_of(path, is_dir=root.kind == "dir", size=None)
        if root.kind != "dir":
            continue
        try:
            for item in _entries(fs, path, show_ignored, after if index == start else None):
                yield index, item
        except (RootsError, OSError):
            continue  # a root that went away lists nothing; its resource above says it was served


def list_page(fs: RootedFS, request: Listing) -> dict[str, Any]:
    """``resources/list``: each root, then its top level (name order), paginated; never deeper."""
    start, after = 0, None
    if request.cursor is not None:
        where, name = decode_cursor(request.cursor, 2)
        if not where.isdigit() or len(where) > 6:
            bad_request("bad cursor: pass back the nextCursor of the previous page unchanged, or no cursor to start")
        start, after = int(where), name
    items = _roots_from(fs, start, after, request.show_ignored)
    page: list[dict[str, Any]] = []
    last: tuple[int, str] | None = None
    more = False
    for index, item in items:
        if len(page) == PAGE:
            more = True
            break
        page.append(item)
        is_root = any(str(root.path) == _path_of(item) for root in fs.boundary)
        last = (index, "" if is_root else str(item["name"]))
    result: dict[str, Any] = {"resources": page}
    if more and last is not None:
        result["nextCursor"] = encode_cursor(str(last[0]), last[1])
    return result


def _path_of(resource: dict[str, Any]) -> str:
    return str(uri_to_path(resource["uri"]))


def complete_path(fs: RootedFS, request: Listing) -> dict[str, Any]:
    """``completion/complete`` for the template's ``path``: the entries of the directory the value is in whose
    names start with its last part (one level, name order, at most :data:`MAX_COMPLETIONS`), or the roots whose
    paths start with it. A value in no served directory completes to nothing, whatever exists there."""
    value = request.uri if isinstance(request.uri, str) else ""
    full = "/" + value.lstrip("/")
    parent, _, partial = full.rpartition("/")
    parent = parent or "/"
    values: list[str] = []
    total = 0
    try:
        if not request.show_ignored and ignored(fs, parent):
            raise OSError("hidden")
        for item in _entries(fs, parent, request.show_ignored, None):
            if item["name"].startswith(partial):
                total += 1
                if len(values) < MAX_COMPLETIONS:
                    slash = "/" if item.get("mimeType") == DIRECTORY_MIME else ""
                    values.append(_path_of(item).lstrip("/") + slash)
    except (RootsError, OSError, ValueError, UnicodeError, MCPError):
        pass  # not served, or too large to list: complete nothing rather than fail (or tell) while typing
    for root in fs.boundary:
        path = str(root.path)
        if path.startswith(full) and path != parent:
            total += 1
            if len(values) < MAX_COMPLETIONS:
                values.append(path.lstrip("/") + ("/" if root.kind == "dir" else ""))
    return {"values": values, "total": total, "hasMore": total > len(values)}
