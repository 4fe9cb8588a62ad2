"""One page of a sorted directory listing, and the cursor that continues it (issue 16 #5).

Why: a directory can hold millions of entries, and reading them all to sort them costs memory in proportion
(1,000,000 entries: +480 MB). A page here is one streaming pass over the directory (``os.scandir`` on an fd the
boundary opened) that keeps only the ``cap`` smallest entries after the cursor (sort and trim, see :class:`_Pass`):
memory O(cap), time O(n log cap) per page. The order is total (name, or size/mtime then name), so pages neither repeat
nor skip an entry that stays put; the cursor holds the last key returned, nothing else.

The cursor is untrusted input that comes back from the client. It is authenticated (HMAC with a key made when the
process starts, so it dies with the process), bounded in length, bound to the directory it was made for (its
device and inode) and to the order. It names no path: every page opens the directory again through
:meth:`Boundary.open`, by the path the client passes, so a cursor can lead nowhere the client could not list.
A bad cursor gets a fixed message that never echoes it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import operator
import os
import re
import secrets
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

from rootbound.confine.boundary import LIST
from rootbound.confine.fd_access import scandir_fd
from rootbound.search.rooted_fs import RootedFS
from rootbound.workspace.tools.calls import ToolError

__all__ = [
    "BAD_CURSOR",
    "MAX_CURSOR",
    "MAX_PAGE",
    "SORTS",
    "Entry",
    "Order",
    "Page",
    "decode_cursor",
    "encode_cursor",
    "list_page",
    "next_cursor",
]

SortBy = Literal["name", "size", "modified"]
Kind = Literal["file", "dir", "symlink", "other"]

MAX_CURSOR: Final = 2048
"""Longest cursor accepted: a name of up to 1,024 bytes, base64 (~390 characters for Linux's 255-byte names)."""
MAX_PAGE: Final = 5000
"""Most entries one page may hold (``max_entries``); memory per listing is in proportion to it."""
_MAX_NAME: Final = 1024  # bytes of a name in a cursor (NAME_MAX is 255 on Linux)
_VERSION: Final = 1
SORTS: Final[tuple[SortBy, ...]] = ("name", "size", "modified")
_HEAD: Final = struct.Struct(">BB8sB")  # version, order, directory tag, length of the numeric key
_MAX_NUMBER: Final = 16  # bytes of the numeric key: a size, or an mtime in ns (past 2262 it outgrows 64 bits)
_MAC_BYTES: Final = 16
_TOKEN: Final = re.compile(f"[A-Za-z0-9_-]{{{((_HEAD.size + _MAC_BYTES) * 4 + 2) // 3},{MAX_CURSOR}}}")
_SECRET: Final = secrets.token_bytes(32)  # per process: a cursor from another server (or a restart) is refused
CHECK_EVERY: Final = 1024
"""The budget (deadline, cancellation) is checked once per this many entries."""

BAD_CURSOR: Final = (
    "invalid cursor: pass back the nextCursor of the previous page unchanged (cursors expire when the server "
    "restarts); omit cursor to start from the first page"
)
FOREIGN_CURSOR: Final = "invalid cursor: it continues a listing of another directory; omit cursor to start again"
ORDER_CURSOR: Final = "invalid cursor: it continues a listing in another order; pass the same sort_by and reverse"


@dataclass(frozen=True)
class Order:
    """How a listing is sorted: by ``sort_by`` (ties by name, so the order is total), descending with ``reverse``."""

    sort_by: SortBy = "name"
    reverse: bool = False

    @property
    def code(self) -> int:
        return SORTS.index(self.sort_by) | (4 if self.reverse else 0)


Key = tuple[int, str]
"""An entry's place in the order: ``(size or mtime in ns, or 0 when sorting by name, name)``."""


class Entry(NamedTuple):
    """One listed entry: its place in the order, name, type (``d_type``) and ``lstat`` (when taken)."""

    key: Key
    name: str
    kind: Kind
    st: os.stat_result | None


@dataclass(frozen=True)
class Page:
    """``entries`` in order; ``total``: entries in the directory during the pass; ``before``: entries ahead of the
    cursor; ``more``: entries after this page; ``directory``: canonical path; ``st``: the directory's ``fstat``
    (its identity, for the next cursor)."""

    directory: str
    entries: list[Entry]
    total: int
    before: int
    more: bool
    st: os.stat_result


def _mac(body: bytes) -> bytes:
    return hmac.new(_SECRET, body, hashlib.sha256).digest()[:_MAC_BYTES]


def directory_tag(st: os.stat_result) -> bytes:
    """What binds a cursor to one directory: its device and inode, keyed (so a tag reveals neither)."""
    return hmac.new(_SECRET, b"dir:%d:%d" % (st.st_dev, st.st_ino), hashlib.sha256).digest()[:8]


def encode_cursor(tag: bytes, order: Order, key: Key) -> str:
    """The opaque token that continues a listing after ``key``."""
    number = key[0].to_bytes((key[0].bit_length() + 8) // 8, "big", signed=True)
    body = _HEAD.pack(_VERSION, order.code, tag, len(number)) + number + os.fsencode(key[1])
    return base64.urlsafe_b64encode(body + _mac(body)).rstrip(b"=").decode("ascii")


def decode_cursor(token: object, tag: bytes, order: Order) -> Key:
    """The key a cursor continues after; a :class:`ToolError` with a fixed message for anything else."""
    if not isinstance(token, str) or _TOKEN.fullmatch(token) is None:
        raise ToolError(BAD_CURSOR)
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except ValueError:
        raise ToolError(BAD_CURSOR) from None
    body, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
    if len(body) < _HEAD.size or not hmac.compare_digest(mac, _mac(body)):
        raise ToolError(BAD_CURSOR)
    version, code, their_tag, size = _HEAD.unpack_from(body)
    number, name = body[_HEAD.size : _HEAD.size + size], body[_HEAD.size + size :]
    if version != _VERSION or not 1 <= size <= _MAX_NUMBER or not name or len(name) > _MAX_NAME:
        raise ToolError(BAD_CURSOR)  # authentic but not ours to read: a later format
    if not hmac.compare_digest(their_tag, tag):
        raise ToolError(FOREIGN_CURSOR)
    if code != order.code:
        raise ToolError(ORDER_CURSOR)
    return int.from_bytes(number, "big", signed=True), os.fsdecode(name)


def kind_of(entry: os.DirEntry[str]) -> Kind:
    """The entry's type from ``d_type`` (no system call on most file systems); symlinks are not followed."""
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "symlink" if entry.is_symlink() else "other"


def _lstat(entry: os.DirEntry[str]) -> os.stat_result | None:
    try:
        return entry.stat(follow_symlinks=False)
    except OSError:
        return None  # vanished since the listing: sorted as size -1 / mtime -1


Row = tuple[Key, os.DirEntry[str], os.stat_result | None]
_NAME: Final = operator.attrgetter("name")
_KEY_OF: Final = operator.itemgetter(0)


class _Pass:
    """One streaming pass over a listing that keeps the first ``count`` entries after ``last`` in the order.

    Sort and trim: entries are kept in a list; when it holds ``2 * count`` it is sorted and cut to ``count``, and
    the last one kept becomes a bound that rejects most later entries with one comparison. Memory O(count), time
    O(n log count), and a small directory is read once and sorted once. Counts every entry (``total``) and those
    after the cursor (``after``), and checks the budget every :data:`CHECK_EVERY` entries.
    """

    __slots__ = ("after", "check", "total")

    def __init__(self, check: Callable[[int], None]) -> None:
        self.check, self.total, self.after = check, 0, 0

    def by_name(self, entries: Iterable[os.DirEntry[str]], last: str | None, reverse: bool, count: int) -> list[Row]:
        kept: list[os.DirEntry[str]] = []
        bound: str | None = None
        n = after = 0
        check = self.check
        for entry in entries:
            n += 1
            if n % CHECK_EVERY == 0:
                check(CHECK_EVERY)
            name = entry.name
            if last is not None and ((name >= last) if reverse else (name <= last)):
                continue
            after += 1
            if bound is not None and ((name <= bound) if reverse else (name >= bound)):
                continue
            kept.append(entry)
            if len(kept) >= 2 * count:
                kept.sort(key=_NAME, reverse=reverse)
                del kept[count:]
                bound = kept[-1].name
        self.total, self.after = n, after
        check(n % CHECK_EVERY)
        kept.sort(key=_NAME, reverse=reverse)
        return [((0, entry.name), entry, None) for entry in kept[:count]]

    def by_stat(
        self, entries: Iterable[os.DirEntry[str]], field: str, last: Key | None, reverse: bool, count: int
    ) -> list[Row]:
        """Like :meth:`by_name`, keyed by ``(lstat field, name)``: one ``lstat`` per entry."""
        kept: list[Row] = []
        bound: Key | None = None
        n = after = 0
        check = self.check
        for entry in entries:
            n += 1
            if n % CHECK_EVERY == 0:
                check(CHECK_EVERY)
            st = _lstat(entry)
            key = (-1 if st is None else int(getattr(st, field)), entry.name)
            if last is not None and ((key >= last) if reverse else (key <= last)):
                continue
            after += 1
            if bound is not None and ((key <= bound) if reverse else (key >= bound)):
                continue
            kept.append((key, entry, st))
            if len(kept) >= 2 * count:
                kept.sort(key=_KEY_OF, reverse=reverse)
                del kept[count:]
                bound = kept[-1][0]
        self.total, self.after = n, after
        check(n % CHECK_EVERY)
        kept.sort(key=_KEY_OF, reverse=reverse)
        return kept[:count]


def _select(entries: Iterable[os.DirEntry[str]], order: Order, last: Key | None, count: int, tally: _Pass) -> list[Row]:
    """The first ``count`` entries after ``last`` in ``order``: one pass, O(count) memory."""
    if order.sort_by == "name":
        return tally.by_name(entries, None if last is None else last[1], order.reverse, count)
    field = "st_size" if order.sort_by == "size" else "st_mtime_ns"
    return tally.by_stat(entries, field, last, order.reverse, count)


def list_page(
    fs: RootedFS,
    path: object,
    order: Order,
    *,
    cap: int,
    cursor: str | None,
    details: bool,
    check: Callable[[int], None],
) -> Page:
    """One page of at most ``cap`` entries of the directory ``path``, after ``cursor`` (first page: ``None``).

    The directory is opened through the boundary on every call; the cursor is checked against what was opened.
    ``details``: each returned entry gets its ``lstat`` (sorting by size or modified takes one per entry anyway).
    """
    with fs.boundary.open(path, LIST, resolver=fs.resolver) as handle:
        st_dir = handle.fstat()
        last = None if cursor is None else decode_cursor(cursor, directory_tag(st_dir), order)
        tally = _Pass(check)
        with scandir_fd(handle.fd) as listing:
            chosen = _select(listing, order, last, cap + 1, tally)
            rows: list[Entry] = []
            for key, entry, st in chosen[:cap]:
                if st is None and details:
                    st = _lstat(entry)
                rows.append(Entry(key, entry.name, kind_of(entry), st))
        directory = handle.prefix[:-1] or "/"  # the canonical path, as a string
        return Page(directory, rows, tally.total, tally.total - tally.after, len(chosen) > cap, st_dir)


def next_cursor(page: Page, order: Order, shown: int) -> str:
    """The cursor that continues after the first ``shown`` entries of ``page``."""
    return encode_cursor(directory_tag(page.st), order, page.entries[shown - 1].key)
