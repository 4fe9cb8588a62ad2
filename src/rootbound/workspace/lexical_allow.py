"""Client roots outside the operator's allowlist are refused by their spelling alone, before any system call.

Root intake resolves a root (``realpath``) and ``stat``s it before it meets the allowlist, and its drop reasons
differ ("does not exist", "not a directory or regular file"): through ``list_roots`` that was an existence and
type oracle for any host path, up to a thousand probes an answer. Here a root whose lexically normalised path is
neither inside a DIR nor above one (``/`` and ``/home`` are narrowed to the DIRs below them) is refused with the
one reason every other refusal outside the allowlist gives, ``not in allowlist``, and never reaches the
filesystem. What passes is still confined by intake, beneath the held DIRs (a symlink inside cannot lead out).

A client must name a DIR by its canonical path (or a path inside or above it): ``rootbound serve`` resolves the
DIRs at start, so a client root spelled through a symlinked prefix of a DIR is refused.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from rootbound.core.roots import Root

__all__ = ["split_lexically"]


def _parts(path: str) -> tuple[str, ...]:
    return tuple(part for part in posixpath.normpath(path).split("/") if part)


def split_lexically(roots: Iterable[Root], dirs: Sequence[Path]) -> tuple[list[Root], list[Root]]:
    """``(kept, refused)``: refused are the roots whose spelling is neither inside nor above any of ``dirs``.

    A root that is not a local absolute path is kept: intake refuses it with its own, path-free reason.
    """
    anchors = [_parts(str(d)) for d in dirs]
    kept: list[Root] = []
    refused: list[Root] = []
    for root in roots:
        path = root.path
        if not isinstance(path, PurePosixPath) or not str(path).startswith("/"):
            kept.append(root)
            continue
        parts = _parts(str(path))
        related = any(parts[: len(a)] == a or a[: len(parts)] == parts for a in anchors)
        (kept if related else refused).append(root)
    return kept, refused
