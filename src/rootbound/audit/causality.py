"""Causality: which change or access outside the roots a probe *caused*, as against what the server does for
itself (its start-up files, its cache, its index in HOME) while the probe happens to run.

An outside change or kernel event counts against a call only when

* **its place derives from the call**: it is (or lies under, or extends: ``W`` -> ``W.md``) a name the audit
  itself made (a canary, a listing-only entry, a name :meth:`Trap.new_name` gave out, a typed canary) or the last
  component of the probe's own path (a look-alike leaf such as ``W"``); a listing of an outside directory counts
  when the probe aimed there. A server's own ``~/.cache/x``, ``~/.pdf_tools_temp`` or ``~/.code-index`` never
  derives from any probe;
* **it happens in the call's window** (the runner's kernel windows and the snapshot after each write);
* **the same call with an inside control path does not produce it** (:class:`Noise`, the differential: what the
  control call does outside the roots is the server's noise for that tool, and is never a finding of it).

The kernel events carry no process id (inotify): the audit's own reads are kept out by draining the watches after
each of its own walks (the baseline, every snapshot and restore), not by pid. See docs/audit.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from rootbound.audit.kernel_events import KernelEvent
from rootbound.audit.trap import PREFIX_SIBLING, Change, Trap
from rootbound.core.escape_table import OUT

__all__ = [
    "ATTRIBUTION",
    "CONTROL",
    "LINKED",
    "Noise",
    "audit_names",
    "caused_changes",
    "caused_events",
    "derived_name",
    "probe_leaf",
]

CONTROL = "control"  # the aim of a control call: W's own paths
LINKED = frozenset({OUT, PREFIX_SIBLING, "hardlink"})  # where W's own links lead (a control reaches only these)
ATTRIBUTION = {
    "inotify": "inotify windows + differential control (no process id: fanotify unavailable here)",
    "fanotify": "fanotify with process ids (the audit's own accesses dropped by pid) + windows + differential control",
}


def probe_leaf(path: str) -> str:
    """The last component a probe names (``file:`` URIs decoded, trailing slashes dropped)."""
    text = path[7:] if path.startswith("file://") else path
    text = unquote(text) if path.startswith("file://") else text
    text = text.split("\x00", 1)[0].rstrip("/")
    return text.rsplit("/", 1)[-1] if text else ""


def probe_target(trap: Trap, probe: str) -> str:
    """Where a probe's path leads, as the file system resolves it now (relative paths from W, ``~`` as the trap's
    home, ``file:`` URIs decoded): an outside change at or under it (or extending its name) derives from it."""
    text = unquote(probe[7:]) if probe.startswith("file://") else probe
    text = text.split("\x00", 1)[0]
    if text == "~" or text.startswith("~/"):
        text = str(trap.home) + text[1:]
    if not text:
        return ""
    if not os.path.isabs(text):
        text = os.path.join(str(trap.workspace), text)
    try:
        return os.path.realpath(text)
    except (OSError, ValueError):
        return os.path.normpath(text)


def _location_dir(trap: Trap, location: str) -> str:
    where = trap.extra_dirs.get(location)
    return str(where) if where is not None else str(trap.base / location) if location != "trap" else str(trap.base)


def audit_names(trap: Trap) -> set[str]:
    """Every name the audit put (or may put) in the trap and beyond it."""
    names = {p.name for p in trap.planted} | set(trap.issued) | set(trap.entries.values())
    names |= {c.name for c in trap.canaries.values()} | {trap.marker.name}
    if trap.hardlink is not None:
        names.add(trap.hardlink.name)
    if trap.dangling_target is not None:
        names.add(trap.dangling_target.name)
    for files in trap.typed.values():
        names |= {p.name for p in files.values()}
    # a canary's random token as a name: only a server that read that canary can make it (an archive's member,
    # extracted next to the archive, is named by it)
    names |= {c.token for c in (*trap.canaries.values(), trap.marker)}
    return {n for n in names if n}


def _stem(name: str) -> str:
    return name.split(".", 1)[0]


def _derives(name: str, stems: Iterable[str]) -> bool:
    """``name`` is ``s``, extends it (``W`` -> ``W.md``) or is ``s`` with its extension changed (a converter's or an
    archiver's output beside its input: ``rbt-far-1a2b.txt`` -> ``rbt-far-1a2b.zip``; a stem of 8 characters or
    more, as every name the audit makes has)."""
    return any(
        name == s or name.startswith(s) or (len(_stem(s)) >= 8 and _stem(name) == _stem(s))
        for s in stems
        if len(s) >= 2
    )


def derived_name(trap: Trap, name: str) -> bool:
    """A name the audit made, or one derived from it (extended, its extension changed, a canary's token)."""
    return _derives(name, audit_names(trap))


def _deep_target(trap: Trap, probe: str, deep: bool) -> str:
    """The probe's target, for the "at or under it" rule. A whole outside location (``A/far``, HOME) as the target
    would make every file a server keeps there "caused": only in a repository trap (``deep``, where a commit writes
    ``.git/objects/...`` under the repository a probe names) does the rule reach below a location's root."""
    target = probe_target(trap, probe)
    roots = {str(trap.base / loc) for loc in (*LINKED, "home", "second", "cwd")} | {str(trap.home), str(trap.base)}
    roots |= {str(where) for where in trap.extra_dirs.values()}
    roots |= {str(p.parent) for c in trap.canaries.values() for p in (c.path,)}
    return target if deep or target not in roots else ""


def caused_changes(
    trap: Trap, probe: str, changes: list[Change], *, control: bool = False, deep: bool = False
) -> tuple[list[Change], list[Change]]:
    """(caused, not caused): a change whose path below its location has a component derived from an audit name
    or from the probe's last component (a look-alike leaf created beside W is its own top-level name), or that
    lies at or under the probe's resolved path (not a whole location's, but in a repository trap). A control (W's
    own paths) causes changes only where W's links lead."""
    names = audit_names(trap)
    leaf = probe_leaf(probe)
    target = _deep_target(trap, probe, deep)
    caused: list[Change] = []
    other: list[Change] = []
    for change in changes:
        try:
            parts = change.path.relative_to(trap.base).parts
        except ValueError:
            other.append(change)
            continue
        below = parts[1:]
        if control:
            (caused if parts and parts[0] in LINKED else other).append(change)
        elif (
            (target and str(change.path).startswith(target))
            or (parts and _derives(parts[0], [leaf]))
            or any(_derives(p, names) or _derives(p, [leaf]) for p in below)
        ):
            caused.append(change)
        else:
            other.append(change)
    return caused, other


def caused_events(
    trap: Trap, probe: str, aim: str, events: list[KernelEvent], *, deep: bool = False
) -> list[KernelEvent]:
    """The events a probe can have caused: on an audit name (or one derived from it or from the probe's leaf); a
    directory itself (a listing, name ``""``) only where the probe aimed, or the trap base when the probe names it.
    A control (``aim`` :data:`CONTROL`) names W: it reaches outside only through W's own links."""
    names = audit_names(trap)
    leaf = probe_leaf(probe)
    base = str(trap.base)
    target = _deep_target(trap, probe, deep)
    kept: list[KernelEvent] = []
    for ev in events:
        where = _location_dir(trap, ev.location)
        path = f"{where}/{ev.name}" if ev.name else where
        if aim == CONTROL:
            if ev.location in LINKED:
                kept.append(ev)
        elif target and path.startswith(target):
            kept.append(ev)
        elif ev.name:
            if _derives(ev.name, names) or _derives(ev.name, [leaf]):
                kept.append(ev)
        elif ev.location == aim or (ev.location == "trap" and os.path.normpath(probe.split("\x00")[0]) == base):
            kept.append(ev)
    return kept


@dataclass
class Noise:
    """What each tool did outside the roots when called with an inside control path: (tool, location, name)."""

    seen: set[tuple[str, str, str]] = field(default_factory=set)

    def add_events(self, tool: str, events: list[KernelEvent]) -> None:
        self.seen |= {(tool, ev.location, ev.name) for ev in events}

    def add_changes(self, tool: str, base: Path, changes: list[Change]) -> None:
        for change in changes:
            rel = change.path.relative_to(base).parts
            self.seen.add((tool, rel[0] if rel else "", "/".join(rel[1:])))

    def event(self, tool: str, ev: KernelEvent) -> bool:
        return (tool, ev.location, ev.name) in self.seen

    def change(self, tool: str, base: Path, change: Change) -> bool:
        rel = change.path.relative_to(base).parts
        return (tool, rel[0] if rel else "", "/".join(rel[1:])) in self.seen
