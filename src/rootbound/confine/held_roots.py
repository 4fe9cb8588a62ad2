"""What one effective root is: its public description (:class:`EffectiveRoot`) and the fds held for it.

Why its own module: the intake opens :class:`HeldRoot` objects, the resolvers open beneath them, and the boundary
owns them; none of the three should have to import another to know what a held root is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from rootbound.core.roots import Root
from rootbound.core.uri import path_to_uri

__all__ = ["Dropped", "EffectiveRoot", "HeldRoot"]


class Dropped(NamedTuple):
    """A root (or allowlist entry) that did not make it into the boundary, and why (a fixed string)."""

    original: object
    reason: str


@dataclass(frozen=True)
class EffectiveRoot:
    """One root of the boundary: its canonical path and the identity of the object held open for it."""

    path: Path
    kind: Literal["dir", "file"]
    source: Root
    narrowed: bool
    dev: int
    ino: int

    @property
    def uri(self) -> str:
        return path_to_uri(self.path)

    @property
    def name(self) -> str | None:
        """The client's name for the root (``None`` when the root was narrowed to an allowlist entry)."""
        return None if self.narrowed else self.source.name


class HeldRoot:
    """The fds and identity of one effective root (``parent_fd`` only for a file root, else -1)."""

    __slots__ = ("aliases", "fd", "info", "is_file", "mnt", "name", "parent_fd", "parts", "path_str", "prefix")

    def __init__(self, info: EffectiveRoot, parts: tuple[str, ...], fd: int, parent_fd: int, mnt: int | None) -> None:
        self.aliases: list[tuple[str, ...]] = []
        self.info = info
        self.parts = parts
        self.path_str = str(info.path)
        self.prefix = "/" if not parts else self.path_str + "/"
        self.fd = fd
        self.parent_fd = parent_fd
        self.is_file = info.kind == "file"
        self.name = parts[-1] if parts else ""
        self.mnt = mnt

    def display(self, parts: tuple[str, ...] | list[str]) -> Path:
        """The canonical path of ``parts`` below this root (what users see; never reopened by name)."""
        if not parts:
            return self.info.path
        return Path(self.prefix + "/".join(parts))
