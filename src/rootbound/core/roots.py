"""The roots model: :class:`Root`, :class:`RootSet`, and strict parsing of roots answers per era.

Why our own model instead of the SDK's: ``mcp.types.Root.uri`` is a pydantic ``FileUrl`` that silently
normalises (collapses ``..``, accepts remote hosts, turns NUL into ``%00``). A guard must judge the raw string
the peer sent. Everything here is pure data: no I/O, no SDK import.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias, overload

from rootbound.core.errors import InvalidPath, InvalidRootsAnswer, InvalidRootURI
from rootbound.core.uri import DEFAULT_MAX_URI_LENGTH, canonical_uri, path_to_uri, uri_to_path

__all__ = ["DEFAULT_LIMITS", "Era", "Root", "RootLike", "RootLimits", "RootSet", "RootsChange"]

Era: TypeAlias = Literal["handshake", "2026-07-28"]
"""The two protocol eras, as rootbound names them everywhere: ``"handshake"`` (up to 2025-11-25: capabilities
declared once in ``initialize``, the server sends ``roots/list``) and ``"2026-07-28"`` (capabilities in every
request's ``_meta``, roots through input rounds)."""

_ERA_ALIASES: Final[Mapping[str, Era]] = MappingProxyType(
    {"handshake": "handshake", "2026-07-28": "2026-07-28", "legacy": "handshake", "modern": "2026-07-28"}
)
"""``"legacy"``/``"modern"`` are the names of rootbound 0.1.0, still accepted by :meth:`RootSet.parse`."""

_ROOT_FIELDS: Final = frozenset({"uri", "name", "_meta"})


@dataclass(frozen=True)
class RootLimits:
    """Bounds on a roots answer. Anything over a bound is an invalid answer, not a truncation."""

    max_roots: int = 1024
    max_total_bytes: int = 1024 * 1024
    max_uri_length: int = DEFAULT_MAX_URI_LENGTH
    max_name_length: int = 1024
    max_depth: int = 32


DEFAULT_LIMITS: Final = RootLimits()


class _Budget:
    """Counts the JSON size of an answer as it is walked, so a huge answer fails early and cheaply."""

    def __init__(self, limits: RootLimits) -> None:
        self.left = limits.max_total_bytes
        self.max_depth = limits.max_depth

    def spend(self, amount: int) -> None:
        self.left -= amount
        if self.left < 0:
            raise InvalidRootsAnswer("answer too large")

    def freeze(self, value: Any, depth: int = 0) -> Any:
        """Deep-copy a JSON value into immutable containers, charging its size and bounding its depth."""
        if depth > self.max_depth:
            raise InvalidRootsAnswer("answer nested too deeply")
        if value is None or isinstance(value, bool):
            self.spend(5)
            return value
        if isinstance(value, int):
            if abs(value) >= 2**64:
                raise InvalidRootsAnswer("number out of range")
            self.spend(len(str(value)))
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidRootsAnswer("number out of range")
            self.spend(24)
            return value
        if isinstance(value, str):
            self.spend(len(value) + 2)
            return value
        if isinstance(value, (list, tuple)):
            self.spend(2)
            return tuple(self.freeze(item, depth + 1) for item in value)
        if isinstance(value, Mapping):
            self.spend(2)
            out: dict[str, Any] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise InvalidRootsAnswer("object key is not a string")
                self.spend(len(key) + 3)
                out[key] = self.freeze(item, depth + 1)
            return MappingProxyType(out)
        raise InvalidRootsAnswer("value is not JSON")


def _thaw(value: Any) -> Any:
    """Frozen JSON back to plain ``dict``/``list`` for the wire."""
    if isinstance(value, tuple):
        return [_thaw(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _thaw(item) for key, item in value.items()}
    return value


_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


@dataclass(frozen=True)
class Root:
    """One root as the peer declared it. ``uri`` is kept verbatim (validated), unknown fields are kept too.

    Equality and hashing use the canonical URI and the name, so ``Root("file:///a/")`` equals
    ``Root("FILE:///a")``.
    """

    uri: str = field(compare=False)
    name: str | None = None
    meta: Mapping[str, Any] | None = field(default=None, compare=False)
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)
    canonical: str = field(init=False, repr=False, compare=True)
    path: PurePath = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        path = uri_to_path(self.uri)
        if self.name is not None and not isinstance(self.name, str):
            raise InvalidRootURI("name is not a string")
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "canonical", path_to_uri(path))
        if self.meta is not None and not isinstance(self.meta, MappingProxyType):
            object.__setattr__(self, "meta", _Budget(RootLimits()).freeze(self.meta))
        if not isinstance(self.extra, MappingProxyType):
            object.__setattr__(self, "extra", _Budget(RootLimits()).freeze(self.extra))

    @classmethod
    def from_path(cls, path: PurePath | str, name: str | None = None) -> Root:
        """A root for a local path (encoded with :func:`~rootbound.path_to_uri`)."""
        return cls(path_to_uri(path), name)

    @classmethod
    def coerce(cls, value: RootLike) -> Root:
        """Accept a ``Root``, a ``file:`` URI string or a path (``str`` without a scheme, or ``PurePath``)."""
        if isinstance(value, Root):
            return value
        if isinstance(value, PurePath):
            return cls.from_path(value)
        if isinstance(value, str):
            if value[:5].lower() == "file:":
                return cls(value)
            if ":" in value.split("/", 1)[0] and not PurePath(value).is_absolute():
                raise InvalidRootURI("scheme is not file")
            return cls.from_path(value)
        raise InvalidPath("not a root, URI or path")

    def to_wire(self) -> dict[str, Any]:
        """The JSON object for a ``Root``, unknown fields re-emitted."""
        wire: dict[str, Any] = {key: _thaw(value) for key, value in self.extra.items()}
        wire["uri"] = self.uri
        if self.name is not None:
            wire["name"] = self.name
        if self.meta is not None:
            wire["_meta"] = _thaw(self.meta)
        return wire


RootLike: TypeAlias = Root | PurePath | str
"""One root as a host gives it: a :class:`Root`, a ``file:`` URI, or an absolute path (see :meth:`Root.coerce`)."""


def _parse_root(item: Any, budget: _Budget, limits: RootLimits) -> Root:
    if not isinstance(item, Mapping):
        raise InvalidRootsAnswer("root is not an object")
    uri = item.get("uri")
    if not isinstance(uri, str):
        raise InvalidRootsAnswer("root uri is not a string")
    budget.spend(len(uri) + 10)
    if len(uri) > limits.max_uri_length:
        raise InvalidRootsAnswer("root uri too long")
    name = item.get("name")
    if name is not None:
        if not isinstance(name, str):
            raise InvalidRootsAnswer("root name is not a string")
        if len(name) > limits.max_name_length:
            raise InvalidRootsAnswer("root name too long")
        budget.spend(len(name) + 10)
    meta = item.get("_meta")
    if meta is not None and not isinstance(meta, Mapping):
        raise InvalidRootsAnswer("root _meta is not an object")
    frozen_meta = budget.freeze(meta, 2) if meta is not None else None
    extra = budget.freeze({k: v for k, v in item.items() if k not in _ROOT_FIELDS}, 2)
    try:
        return Root(uri, name, frozen_meta, extra)
    except (InvalidRootURI, InvalidPath):
        # One generic error class for every bad answer; the reason names the class, never the data.
        raise InvalidRootsAnswer("root uri is not a valid local file URI") from None


@dataclass(frozen=True)
class RootSet(Sequence[Root]):
    """An immutable, ordered, de-duplicated (by canonical URI) set of roots, with a version number.

    ``version`` orders snapshots from one source (a provider bumps it on every change); it is not on the wire.
    """

    roots: tuple[Root, ...] = ()
    version: int = 0
    meta: Mapping[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        unique: list[Root] = []
        for root in self.roots:
            if not isinstance(root, Root):
                raise InvalidPath("not a Root")
            if root.canonical not in seen:
                seen.add(root.canonical)
                unique.append(root)
        object.__setattr__(self, "roots", tuple(unique))

    @classmethod
    def of(cls, items: Iterable[RootLike], *, version: int = 0) -> RootSet:
        """Build from ``Root`` objects, URI strings or paths (see :meth:`Root.coerce`)."""
        return cls(tuple(Root.coerce(item) for item in items), version)

    @classmethod
    def parse(
        cls, answer: Any, era: Era = "handshake", *, limits: RootLimits = DEFAULT_LIMITS, version: int = 0
    ) -> RootSet:
        """Validate a roots answer: a handshake-era ``ListRootsResult`` or a 2026-07-28 ``{"roots": [...]}``.

        Raises :class:`~rootbound.InvalidRootsAnswer` (JSON-RPC -32602) for every problem; its message never
        contains submitted data. Unknown fields are tolerated (both schemas are open); in 2026-07-28 a
        ``resultType`` marks a full result sent where a bare answer belongs, which is the wrong kind.
        """
        era = _ERA_ALIASES.get(era) if isinstance(era, str) else None  # type: ignore[assignment]
        if era is None:
            raise ValueError("era must be 'handshake' or '2026-07-28'")
        if not isinstance(answer, Mapping):
            raise InvalidRootsAnswer("answer is not an object")
        if era == "2026-07-28" and "resultType" in answer:
            raise InvalidRootsAnswer("answer of the wrong kind")
        items = answer.get("roots")
        if not isinstance(items, (list, tuple)):
            raise InvalidRootsAnswer("roots is not an array")
        if len(items) > limits.max_roots:
            raise InvalidRootsAnswer("too many roots")
        budget = _Budget(limits)
        meta = answer.get("_meta")
        if meta is not None and not isinstance(meta, Mapping):
            raise InvalidRootsAnswer("_meta is not an object")
        frozen_meta = budget.freeze(meta, 1) if meta is not None else None
        roots = tuple(_parse_root(item, budget, limits) for item in items)
        return cls(roots, version, frozen_meta)

    def to_wire(self) -> dict[str, Any]:
        """``{"roots": [...]}``: valid as a ``ListRootsResult`` in every revision and as an MRTR answer."""
        return {"roots": [root.to_wire() for root in self.roots]}

    @property
    def uris(self) -> tuple[str, ...]:
        return tuple(root.canonical for root in self.roots)

    @property
    def paths(self) -> tuple[PurePath, ...]:
        return tuple(root.path for root in self.roots)

    def with_version(self, version: int) -> RootSet:
        return RootSet(self.roots, version, self.meta)

    def __contains__(self, item: object) -> bool:
        return isinstance(item, Root) and item.canonical in self.uris

    def has_uri(self, uri: str) -> bool:
        """Whether ``uri`` (any spelling) names one of these roots; an invalid URI is simply not here."""
        try:
            return canonical_uri(uri) in self.uris
        except ValueError:
            return False

    def __iter__(self) -> Iterator[Root]:
        return iter(self.roots)

    def __len__(self) -> int:
        return len(self.roots)

    @overload
    def __getitem__(self, index: int) -> Root: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Root, ...]: ...
    def __getitem__(self, index: int | slice) -> Root | tuple[Root, ...]:
        return self.roots[index]

    def __bool__(self) -> bool:
        return bool(self.roots)


@dataclass(frozen=True)
class RootsChange:
    """How a connection's roots changed between two answers: what ``RootsService.on_change`` callbacks get.

    Roots compare by canonical URI and name, so a renamed root is both ``removed`` (old name) and ``added``.
    """

    old: RootSet
    new: RootSet
    added: tuple[Root, ...]
    removed: tuple[Root, ...]
    connection: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    """The per-connection store of the connection whose roots changed (what lives as long as it), where the
    service knows it: a server keeping per-connection state (subscriptions) finds it there."""

    @classmethod
    def between(cls, old: RootSet | None, new: RootSet) -> RootsChange | None:
        """The change from ``old`` to ``new``, or ``None`` when there is no previous set or nothing changed.

        Order alone is not a change: roots are a set.
        """
        if old is None:
            return None
        before, after = set(old.roots), set(new.roots)
        if before == after:
            return None
        added = tuple(root for root in new.roots if root not in before)
        removed = tuple(root for root in old.roots if root not in after)
        return cls(old, new, added, removed)
