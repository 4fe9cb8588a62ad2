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
the cwd); every step is an ``unlink``/``rmdir`` that never follows a link.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from rootbound.audit.trap import Trap, plant_canary, remove

__all__ = ["plant_far", "remove_created", "remove_far"]


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
