"""``resources/read`` of a served file: its text with its MIME type, or its bytes as a base64 blob, whole or a
window (lines or bytes, from the URI's query), with the same caps as ``read_file``; and its content identity
(``sha256`` digest and size), on every read.

The file is opened once through :meth:`Boundary.open` (the tools' one way in, ``O_PATH`` and typed first, so a FIFO
or device is never opened for reading), reopened for reading through that fd, and read and hashed through it:
what is named, hashed and returned is one object. A file that changed while it was read (its size or mtime moved)
says so rather than pairing a digest with other bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from typing import Any, Final

from rootbound.confine.fd_access import READ_FLAGS
from rootbound.confine.regular_files import check_file
from rootbound.core.call_budget import checkpoint
from rootbound.core.errors import RootsError
from rootbound.core.uri import path_to_uri
from rootbound.search.rooted_fs import RootedFS
from rootbound.text.media_types import SNIFF_BYTES, sniff
from rootbound.text.read_windows import BINARY_SNIFF, TextSlice, looks_binary, read_byte_range, read_lines
from rootbound.workspace.limits.answer_budget import Ledger, base64_size
from rootbound.workspace.resources.addresses import EXTENSION, Window, bad_request, not_found, split_uri
from rootbound.workspace.resources.listings import served
from rootbound.workspace.resources.name_types import mime_of_name
from rootbound.workspace.tools.reading import PREAD_CHUNK, pread_all

__all__ = ["ANSWER_ENVELOPE", "HASH_CAP", "ReadRequest", "digest_of", "fits", "read_resource"]

HASH_CAP: Final = 16 * 1024 * 1024
"""Files up to this size carry a digest on every read, windows included (the whole file is hashed through the
same fd); a larger one carries its size and says why it has no digest. 16 MiB: SEP-2640's per-skill size bound."""

ANSWER_ENVELOPE: Final = 4096
"""Room in one answer for what surrounds a read's text or blob (the URI, the MIME type, the identity, JSON-RPC)."""


@dataclass(frozen=True)
class ReadRequest:
    """One ``resources/read``: the URI (its query a window), the caps (``read_file``'s), and the ignore choice."""

    uri: object
    max_read: int
    max_media: int
    show_ignored: bool = False
    answers: Ledger | None = None
    """Where a large answer reserves its room before anything is read (issue 24 #4's budget, as ``read_file``)."""

    def reserve(self, answer_bytes: int) -> None:
        if self.answers is not None:
            self.answers.reserve(answer_bytes)  # AnswersFull: busy, before anything is read


def digest_of(fd: int, size: int) -> str | None:
    """``sha256:<hex>`` of the file's first ``size`` bytes read through ``fd`` (``None`` over :data:`HASH_CAP`)."""
    if size > HASH_CAP:
        return None
    hasher = hashlib.sha256()
    offset = 0
    while True:
        checkpoint()  # the deadline, and a read tried on the event loop going on to a thread past its slice
        chunk = os.pread(fd, PREAD_CHUNK, offset)
        if not chunk:
            break
        hasher.update(chunk)
        offset += len(chunk)
    return "sha256:" + hasher.hexdigest()


def _identity(fd: int, before: os.stat_result, data: bytes | None) -> dict[str, Any]:
    """The content identity of what was read: digest and size, or why there is no digest."""
    identity: dict[str, Any] = {"size": before.st_size}
    if data is not None and len(data) == before.st_size:
        digest: str | None = "sha256:" + hashlib.sha256(data).hexdigest()
    else:
        digest = digest_of(fd, before.st_size)
    after = os.fstat(fd)
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        identity["size"] = after.st_size
        identity["digestOmitted"] = "the file changed while it was read: read it again"
    elif digest is None:
        identity["digestOmitted"] = f"over {HASH_CAP} bytes: no digest is computed"
    else:
        identity["digest"] = digest
    return identity


def _window_slice(fd: int, size: int, window: Window, max_read: int) -> TextSlice:
    pread = pread_all(fd)
    if window.bytes:
        return read_byte_range(pread, size, window.offset or 0, min(window.length or max_read, max_read))
    return read_lines(pread, size, window.start_line or 1, window.end_line, max_read)


def _text_mime(name: str) -> str:
    guessed = mime_of_name(name)
    return guessed if guessed is not None and not guessed.startswith(("image/", "application/pdf")) else "text/plain"


def _content(fd: int, st: os.stat_result, name: str, request: ReadRequest, window: Window) -> dict[str, Any]:
    head = os.pread(fd, max(BINARY_SNIFF, SNIFF_BYTES), 0)
    binary = looks_binary(head[:BINARY_SNIFF])
    if window.whole:
        cap = request.max_media if binary else request.max_read
        if st.st_size > cap:
            bad_request(
                f"the file is over the {cap}-byte limit for a whole read: read it in parts, "
                "?offset=N&length=M (bytes) or ?start_line=N&end_line=M (lines)"
            )
        request.reserve(base64_size(st.st_size) if binary else st.st_size)
        data = pread_all(fd)(0, st.st_size)  # a file that grows meanwhile: its identity says it changed
        if not binary:
            try:
                return {"mimeType": _text_mime(name), "text": data.decode("utf-8")} | _meta(fd, st, data, None)
            except UnicodeDecodeError:
                binary = True
        mime = sniff(head[:SNIFF_BYTES]).mime
        return {"mimeType": mime, "blob": base64.b64encode(data).decode("ascii")} | _meta(fd, st, data, None)
    if binary:
        if not window.bytes:
            bad_request("a binary file has no lines: read a window of it with ?offset=N&length=M")
        length = min(window.length or request.max_read, request.max_read, request.max_media)
        request.reserve(base64_size(length))
        data = pread_all(fd)(window.offset or 0, length)
        span: dict[str, Any] = {"offset": window.offset or 0, "length": len(data)}
        return {"mimeType": sniff(head[:SNIFF_BYTES]).mime, "blob": base64.b64encode(data).decode("ascii")} | _meta(
            fd, st, None, span
        )
    request.reserve(min(st.st_size, request.max_read))
    piece = _window_slice(fd, st.st_size, window, request.max_read)
    span = {"offset": piece.start, "length": piece.end - piece.start}
    if piece.first_line is not None:
        span |= {"startLine": piece.first_line, "endLine": piece.last_line}
    if piece.next_offset is not None:
        span["nextOffset"] = piece.next_offset
        if piece.next_line is not None:
            span["nextLine"] = piece.next_line
    return {"mimeType": _text_mime(name), "text": piece.text} | _meta(fd, st, None, span)


def _meta(fd: int, st: os.stat_result, data: bytes | None, span: dict[str, Any] | None) -> dict[str, Any]:
    identity = _identity(fd, st, data)
    if span is not None:
        identity["range"] = span
    return {"_meta": {EXTENSION: identity}}


def fits(result: dict[str, Any], limit: int | None) -> dict[str, Any]:
    """``-32602`` saying how to read in parts when a read's answer would not fit in one message of ``limit`` bytes
    (its text JSON-escaped; measured exactly only when it could be over)."""
    if limit is None:
        return result
    content = result["contents"][0]
    text = content.get("text")
    size = len(content.get("blob", "")) + (6 * len(text) if text is not None else 0)
    if size + ANSWER_ENVELOPE > limit and text is not None:
        size = len(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size + ANSWER_ENVELOPE > limit:
        bad_request(
            f"the answer would be over the {limit} bytes one message to this client may hold: read it in parts, "
            "?offset=N&length=M (bytes) or ?start_line=N&end_line=M (lines)"
        )
    return result


def read_resource(fs: RootedFS, request: ReadRequest) -> dict[str, Any]:
    """The ``ReadResourceResult`` (wire form) of a served regular file; a served directory is ``-32602`` naming
    ``resources/directory/read``; anything not served is SEP-2164's not-found."""
    base, window = split_uri(request.uri, windowed=True)
    try:
        with served(fs, request.uri, base, request.show_ignored) as (handle, st, display):
            if stat.S_ISDIR(st.st_mode):
                bad_request("a directory: list it with resources/directory/read (or read a file in it)")
            if not stat.S_ISREG(st.st_mode):
                not_found(request.uri)
            check_file(st, fs.hardlinks, writing=False)
            fd = handle.reopen(READ_FLAGS)
            try:
                opened = os.fstat(fd)
                if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
                    not_found(request.uri)
                content = _content(fd, opened, display.rpartition("/")[2], request, window)
            finally:
                os.close(fd)
    except (RootsError, OSError, ValueError, UnicodeError):
        not_found(request.uri)
    uri = path_to_uri(display)
    if not window.whole and isinstance(request.uri, str):
        uri += "?" + request.uri.partition("?")[2]
    return {"contents": [{"uri": uri} | content]}
