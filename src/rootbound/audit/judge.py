"""The evidence judge: what in a server's answer proves an escape. Never a guess.

* **read**: an outside canary's token appears in the result (text, structured content, embedded resources, and
  base64 blobs decoded), and not in the request;
* **list**: a name that only a listing of an outside directory can reveal appears in a *successful* result;
* **meta**: an outside canary's unique mtime appears in a successful result;
* **write**: the trap's snapshot changed outside the allowed roots (judged by the runner from the diff);
* **meta (a named path)**: for a tool whose control proved it answers only with resolved paths (a path check, a
  stat that says where a spelling leads), a successful answer that names an outside canary's absolute path on a
  line that does not refuse it.

Anything the request itself contains never counts, so an error that echoes the request proves nothing; names and
timestamps in error results never count either (an error may describe a link target without opening it).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from rootbound.audit.classes import Kind
from rootbound.audit.kernel_events import IN_ACCESS as KERNEL_ACCESS
from rootbound.audit.kernel_events import KernelEvent
from rootbound.audit.trap import Canary, Trap

__all__ = [
    "Evidence",
    "control_evidence",
    "control_names_path",
    "judge",
    "kernel_evidence",
    "names_path",
    "result_text",
]

_B64 = re.compile(r"^[A-Za-z0-9+/=\s]{12,}$")


@dataclass(frozen=True)
class Evidence:
    kind: Kind
    location: str  # the canary's location ("far", "ws-evil", "hardlink", ...)
    detail: str  # what was found, in words


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def result_text(result: Any) -> str:
    """Every string in the result, plus the decoding of anything that looks like base64 (blobs, images)."""
    parts: list[str] = []
    for text in _strings(result):
        parts.append(text)
        if _B64.match(text):
            with contextlib.suppress(binascii.Error, ValueError):
                parts.append(base64.b64decode("".join(text.split()), validate=True).decode("utf-8", "replace"))
    return "\n".join(parts)


def _has_time(text: str, spelling: str) -> bool:
    """The timestamp as a whole token: epoch seconds inside a longer number (a size, an inode) do not count."""
    return re.search(rf"(?<![0-9]){re.escape(spelling)}(?![0-9])", text) is not None


def _in_request(needle: str, request: str) -> bool:
    return needle in request or json.dumps(needle)[1:-1] in request


# Words that make a line that names a path a refusal or a report of absence, not a claim that it is served.
_REFUSES = re.compile(
    r"\b(not|no|never|outside|denied|deny|forbidden|refused?|rejected?|blocked|disallowed|invalid|cannot|"
    r"can't|unable|error|fail(ed|s|ure)?|escapes?|missing|unknown|beyond)\b",
    re.IGNORECASE,
)


def refusal_words(text: str) -> bool:
    """Whether an answer holds a word of refusal or absence ("denied", "only", "error", "not"...)."""
    return bool(_REFUSES.search(text))


def _spellings(path: os.PathLike[str] | str) -> set[str]:
    return {str(path), os.path.realpath(path)}


def names_path(text: str, request: str, paths: Iterable[str]) -> str | None:
    """The first of ``paths`` that the answer names as resolved and not refused: a whole path (not the tail of a
    longer one) on a line with no refusal word, and never a spelling the request itself contains (an echo proves
    nothing)."""
    wanted = [p for p in paths if p and not _in_request(p, request)]
    if not wanted:
        return None
    for line in text.splitlines()[:2000]:
        if _REFUSES.search(line):
            continue
        for path in wanted:
            if re.search(rf"(?:^|(?<=[\s'\"`(=])|(?<=file://)){re.escape(path)}(?=$|[\s'\"`),;:]|\.(?:\s|$))", line):
                return path
    return None


def judge(
    trap: Trap, request: str, result: Any, is_error: bool, allowed: frozenset[str], *, names_paths: bool = False
) -> list[Evidence]:
    """Evidence of an escape in one answer, given the request's exact JSON and the locations the roots allow.
    ``names_paths``: the tool's control proved it answers with resolved paths, so an outside canary's path named
    as served is evidence too (metadata: the server resolved it, whether or not it opened it)."""
    text = result_text(result)
    found: list[Evidence] = []
    for canary in trap.outside(allowed):
        if canary.token in text and not _in_request(canary.token, request):
            found.append(Evidence("read", canary.location, f"token of {_rel(trap, canary)} in the result"))
    if is_error:
        return found
    if names_paths:
        for canary in trap.outside(allowed):
            if canary.location in {e.location for e in found}:
                continue
            named = names_path(text, request, _spellings(canary.path))
            if named is not None:
                found.append(
                    Evidence("meta", canary.location, f"the answer names {_rel(trap, canary)} as resolved/served")
                )
    for loc, entry in trap.entries.items():
        if loc in allowed:
            continue
        if entry in text and not _in_request(entry, request):
            found.append(Evidence("list", loc, f"listing-only name {entry!r} of {loc}/ in the result"))
    for canary in trap.outside(allowed):
        for spelling in canary.mtime_spellings():
            if _has_time(text, spelling) and not _in_request(spelling, request):
                found.append(Evidence("meta", canary.location, f"mtime of {_rel(trap, canary)} ({spelling})"))
                break
    return found


def control_evidence(trap: Trap, request: str, result: Any, is_error: bool) -> Kind | None:
    """Which kind of positive control succeeded: W's token (read), W's names (list), W's marker mtime (meta)."""
    if is_error:
        return None
    text = result_text(result)
    marker = trap.marker
    if marker.token in text and not _in_request(marker.token, request):
        return "read"
    if marker.name in text and not _in_request(marker.name, request):
        return "list"
    if any(_has_time(text, s) and not _in_request(s, request) for s in marker.mtime_spellings()):
        return "meta"
    return None


def control_names_path(trap: Trap, request: str, result: Any, is_error: bool) -> bool:
    """A metadata-only control: the successful answer names W's marker by its resolved absolute path, which the
    request spelt otherwise (relative, a URI): the parameter reached the server's resolver. (W itself is not
    enough: an answer may name the roots whatever it was asked.)"""
    if is_error:
        return False
    return names_path(result_text(result), request, _spellings(trap.marker.path)) is not None


def canary_rel(trap: Trap, canary: Canary) -> str:
    return _rel(trap, canary)


def _rel(trap: Trap, canary: Canary) -> str:
    try:
        return canary.path.relative_to(trap.base).as_posix()
    except ValueError:  # a canary beyond the trap (temp dir, home, the server's cwd)
        return str(canary.path)


# Watched locations beyond the trap where other programs (the server's own imports, a shell) touch files too:
# only the names the audit planted there count, and never a listing of the directory itself.
_SHARED = frozenset({"cwd"})


def kernel_evidence(trap: Trap, events: list[KernelEvent], allowed: frozenset[str]) -> list[Evidence]:
    """Evidence from what the kernel saw during one call: an outside canary (or an outside directory) opened, read,
    listed; beyond the trap (temp dir, home, the server's cwd), also created, changed or removed (inside the trap
    the snapshot judges writes). One piece of evidence per (location, kind), and only the write where the call
    wrote; the hard link's inode is never seen here (only directories are watched, and W is allowed)."""
    found: dict[tuple[str, str], Evidence] = {}
    far = set(trap.extra_dirs)
    ours = {p.name for p in trap.planted}
    merged: dict[tuple[str, str], int] = {}  # an open, then a read, of one entry: one access, judged as a whole
    for ev in events:
        merged[ev.location, ev.name] = merged.get((ev.location, ev.name), 0) | ev.mask
    for (location, name), mask in merged.items():
        ev = KernelEvent(location, name, mask)
        loc = ev.location
        if loc == "trap":
            if ev.name:  # a child of the trap base: its own watch reports it
                continue
            loc = "trap"
        if loc in allowed:
            continue
        if loc in _SHARED and loc in far and ev.name not in ours and ev.name.removesuffix("2") not in trap.issued:
            continue  # someone else's file (another audit running in the same directory, the server's own)
        kind = ev.kind
        if kind == "write" and loc not in far:
            continue  # the trap snapshot sees writes inside the trap, with the exact change
        if kind in ("read", "list") and not ev.mask & KERNEL_ACCESS:
            kind = "meta"  # opened, never read: the server reached the file, the content may not have left
        name = f"{trap.extra_dirs[loc]}/{ev.name}" if loc in far else f"{loc}/{ev.name}" if ev.name else f"{loc}/"
        if loc == "trap":
            name = "the trap's base directory (W's parent)"
        key = (loc, kind)
        if key not in found:
            found[key] = Evidence(kind, loc, f"the kernel saw the server: {ev.what} {name} (inotify)")  # type: ignore[arg-type]
    # what the call opened, read or listed where it also created or changed a file is part of that write (SQLite
    # opens the directory to sync the file it created there): one piece of evidence, the write
    wrote = {loc for loc, kind in found if kind == "write"}
    return [ev for (loc, kind), ev in found.items() if kind == "write" or loc not in wrote]
