"""Canaries beyond the trap, where servers grant access without being asked: the system temp directory, the
user's home, and the server's own working directory. A server that always allows one of those is invisible to
canaries that live only in the trap.

* ``tmp``: a fresh ``rbaudit-tmp-*`` directory in the system temp dir (unless the trap itself is there);
* ``userhome``: a fresh ``rbaudit-home-*`` directory in the user's home (unless the trap itself is there);
* ``cwd``: the server's working directory (the directory the audit runs in, so that ``python my_server.py``
  finds its script); the token file and the listing-only entry are planted *directly* in it, because a
  relative path is joined to the cwd itself.

Each holds a token file and an entry only a listing shows, named from the trap's seed (``--replay`` plants the
same names). :func:`remove_far` removes exactly what was planted (and the ``rbt-`` files a write probe created in
the cwd), :func:`remove_trees` the directories a probe made in the cwd that hold only names the audit gave out; every
step is an ``unlink``/``rmdir`` that never follows a link.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from rootbound.audit.causality import derived_name
from rootbound.audit.shown import shown
from rootbound.audit.trap import Trap, plant_canary, remove

__all__ = ["plant_far", "remove_created", "remove_far", "remove_trees"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_MAX_DEPTH = 64  # a deeper tree is not checked (left, and said): a path probe's components are far fewer
_MAX_ENTRIES = 10_000


def _under(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent.resolve())
    except (ValueError, OSError):
        return False
    return True


def plant_far(
    trap: Trap, *, server_cwd: Path | None, temp_dir: Path | None = None, home: Path | None = None
) -> list[str]:
    """Plant the canaries beyond the trap; returns what could not be planted (said in the report's notes)."""
    skipped: list[str] = []
    temp_dir = Path(tempfile.gettempdir()) if temp_dir is None else temp_dir
    for loc, parent, prefix in (("tmp", temp_dir, "rbaudit-tmp-"), ("userhome", home, "rbaudit-home-")):
        if parent is None or _under(trap.base, parent):
            continue  # the trap itself is there: its canaries already cover it
        names = trap.names()
        where = parent / f"{prefix}{names.hex(6)}"  # from the seed: --replay plants the same directory
        try:
            where.mkdir(mode=0o700)
        except OSError as exc:
            skipped.append(f"no canary in {parent} ({exc.strerror or exc})")
            continue
        trap.planted.append(where)
        trap.extra_dirs[loc] = where
        plant_canary(trap, where, loc)
    skipped += _plant_folded(trap)
    if server_cwd is not None and server_cwd != trap.cwd:
        try:
            files = plant_canary(trap, server_cwd, "cwd")
        except OSError as exc:
            skipped.append(f"no canary in the server's working directory ({exc.strerror or exc})")
        else:
            trap.planted.extend(files)
            trap.cwd = server_cwd
            trap.extra_dirs["cwd"] = server_cwd
    return skipped


def _plant_folded(trap: Trap) -> list[str]:
    """W's path with its parent case-folded: ``<parent>/<TRAP>/ws`` beside the trap (``A/ws`` for ``a/ws``; the
    trap's own ``WS`` sibling is ``a/WS``), a canary in it. A check that compares case-folded (or NFKC-normalised)
    spellings of the whole path takes it for W; the file system, where it is case-sensitive, opens another
    directory. Not planted where the file system folds case itself."""
    upper = trap.base.parent / trap.base.name.upper()
    if upper.name == trap.base.name:
        return []
    try:
        upper.mkdir(mode=0o700)
    except FileExistsError:
        if upper.exists() and os.path.samefile(upper, trap.base):
            return ["no case-folded canary: the file system folds case (the case probes are moot there)"]
        return [f"no case-folded canary: {upper.name} exists beside the trap"]
    except OSError as exc:
        return [f"no case-folded canary ({exc.strerror or exc})"]
    trap.planted.append(upper)
    where = upper / trap.workspace.name
    try:
        where.mkdir(mode=0o700)
        plant_canary(trap, where, "casefold")
    except OSError as exc:
        return [f"no case-folded canary ({exc.strerror or exc})"]
    trap.extra_dirs["casefold"] = where
    return []


def remove_far(trap: Trap, created: list[Path] | None = None) -> bool:
    """Remove what :func:`plant_far` planted (and ``created``: files a server made in the cwd); True if all went."""
    ok = True
    for path in [*trap.planted, *(created or [])]:
        if path.parent == trap.cwd and path.name.startswith("rbt-") and not path.is_dir():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            continue
        ok = remove(path) and ok
    trap.planted.clear()
    return ok


def remove_created(trap: Trap, location: str, name: str) -> bool | None:
    """Remove an entry a probe created directly in a place beyond the trap (``location`` one of
    ``trap.extra_dirs``): no snapshot restores those, and a file left there turns the next probe of the same name
    into an open of an existing file (SQLite's ``VACUUM INTO`` refuses it, a read by the kernel's word). Only an
    ``rbt-`` name that is not a planted canary (else None: left for the end of the audit, which removes the temp
    dir and home canaries whole); a link is unlinked, never followed. True if it is gone, False if it could not
    be removed."""
    where = trap.extra_dirs.get(location)
    planted = {p.name for p in trap.planted} | {c.path.name for c in trap.canaries.values()}
    planted |= set(trap.entries.values())
    if where is None or not name.startswith("rbt-") or "/" in name or name in planted:
        return None
    try:
        return remove(where / name)  # relative to the place's fd: a link is unlinked, a directory removed whole
    except FileNotFoundError:
        return True
    except OSError:
        return False


class _Foreign(Exception):
    """An entry under a directory the audit means to remove that the audit did not name (or that it could not
    check): the whole directory is left."""


def _audit_files(parent: int, leaf: str, trap: Trap, depth: int, seen: list[int]) -> int:
    """How many entries under directory ``leaf`` (relative to ``parent``) bear a name the audit gave out (or one
    derived from it); raises :class:`_Foreign` at the first file or link that does not (its path below ``leaf``).
    Any directory may lie between (a ``file:`` URI's path components). Read through directory fds opened with
    O_NOFOLLOW: a link is an entry, never followed."""
    if depth > _MAX_DEPTH:
        raise _Foreign("(deeper than the audit checks)")
    fd = os.open(leaf, _DIR, dir_fd=parent)
    try:
        found = 0
        for child in os.listdir(fd):
            seen[0] += 1
            if seen[0] > _MAX_ENTRIES:
                raise _Foreign("(more entries than the audit checks)")
            named = child.startswith("rbt-") and derived_name(trap, child)
            if stat.S_ISDIR(os.stat(child, dir_fd=fd, follow_symlinks=False).st_mode):
                try:
                    found += named + _audit_files(fd, child, trap, depth + 1, seen)
                except _Foreign as exc:
                    raise _Foreign(f"{child}/{exc}") from None
            elif named:
                found += 1
            else:
                raise _Foreign(child)
        return found
    finally:
        os.close(fd)


def remove_trees(trap: Trap, names: list[str]) -> list[str]:
    """Remove the top-level directories a probe created in the server's cwd (``names``: the kernel saw each one
    made there during a call) whose whole tree holds only directories and files named by the audit: a converter
    given ``file:///…/rbt-new-X.pdf`` makes ``<cwd>/file:/…/rbt-new-X.pdf``. Fails closed: a tree with any other
    file, one that cannot be read, or one with no name of the audit's (the server's own directory) is left; the
    notes say which were left because of what they hold. Removal is :func:`remove`'s (dir fds, links unlinked).
    Called once the server is gone: nothing changes the tree between the check and the removal."""
    where = trap.extra_dirs.get("cwd")
    if where is None:
        return []
    notes: list[str] = []
    try:
        parent = os.open(where, _DIR)
    except OSError:
        return []
    try:
        for name in names:
            if "/" in name or name in (".", ".."):
                continue
            try:
                ours = _audit_files(parent, name, trap, 0, [0]) + (name.startswith("rbt-") and derived_name(trap, name))
            except FileNotFoundError:
                continue  # gone already (a later probe's undo, or the server)
            except (_Foreign, OSError) as exc:
                what = str(exc) if isinstance(exc, _Foreign) else f"(unreadable: {exc.strerror or exc})"
                notes.append(
                    f"could not remove {shown(where / name, 200)}, which a probe created in the server's working "
                    f"directory: it holds files the audit did not make ({shown(name + '/' + what, 120)})"
                )
                continue
            if ours and not remove(where / name):
                notes.append(f"could not remove {shown(where / name, 200)}, which a probe created there")
    finally:
        os.close(parent)
    return notes
