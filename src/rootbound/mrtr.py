"""Sans-I/O helpers for roots in Multi Round-Trip Requests (2026-07-28) and for capability checks.

Plain dicts in, plain dicts or :class:`~rootbound.RootSet` out, so the same rules serve the SDK adapters, the
tests and a raw JSON-RPC peer. No SDK import.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final, Literal

from .errors import InvalidRootsAnswer, InvalidRootsRequest, MissingCapability
from .roots import DEFAULT_LIMITS, Era, RootLimits, RootSet

__all__ = [
    "MISSING",
    "MODERN_PROTOCOL_VERSIONS",
    "ROOTS_KEY",
    "ROOTS_METHOD",
    "Missing",
    "client_supports_roots",
    "era_of",
    "missing_capability_error",
    "read_roots_response",
    "roots_input_request",
    "validate_roots_request",
]

ROOTS_METHOD: Final = "roots/list"
ROOTS_KEY: Final = "roots"
"""The ``inputRequests`` key rootbound uses: stable, and it says nothing about the server's code."""

MODERN_PROTOCOL_VERSIONS: Final = ("2026-07-28",)


class Missing(enum.Enum):
    """Type of :data:`MISSING`: the retry carried no answer under the key (ask again; not an error)."""

    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = Missing.MISSING


def era_of(protocol_version: str | None) -> Era:
    """``"modern"`` for the stateless revisions (2026-07-28), ``"legacy"`` for handshake ones and unknown."""
    return "modern" if protocol_version in MODERN_PROTOCOL_VERSIONS else "legacy"


def roots_input_request(meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The bare roots input request for ``InputRequiredResult.inputRequests``: no ``jsonrpc``, no ``id``."""
    request: dict[str, Any] = {"method": ROOTS_METHOD}
    if meta is not None:
        request["params"] = {"_meta": dict(meta)}
    return request


def validate_roots_request(request: Any) -> dict[str, Any]:
    """Check a ``roots/list`` request (JSON-RPC or MRTR input request) a peer sent; return it normalised.

    ``params`` is optional and may carry only ``_meta`` (an object); unknown params keys are tolerated as the
    schema is open. Raises :class:`~rootbound.InvalidRootsRequest`.
    """
    if not isinstance(request, Mapping):
        raise InvalidRootsRequest("request is not an object")
    if request.get("method") != ROOTS_METHOD:
        raise InvalidRootsRequest("method is not roots/list")
    params = request.get("params")
    if params is None:
        return {"method": ROOTS_METHOD}
    if not isinstance(params, Mapping):
        raise InvalidRootsRequest("params is not an object")
    meta = params.get("_meta")
    if meta is not None and not isinstance(meta, Mapping):
        raise InvalidRootsRequest("params._meta is not an object")
    return {"method": ROOTS_METHOD, "params": dict(params)}


def client_supports_roots(capabilities: Any) -> bool:
    """True only when ``capabilities.roots`` is an object (``{}``; a ``listChanged`` member is tolerated)."""
    if not isinstance(capabilities, Mapping):
        return False
    return isinstance(capabilities.get("roots"), Mapping)


def read_roots_response(
    input_responses: Any, key: str = ROOTS_KEY, *, limits: RootLimits = DEFAULT_LIMITS
) -> RootSet | Literal[Missing.MISSING]:
    """Read the roots answer under ``key`` from a retry's ``inputResponses``.

    Returns :data:`MISSING` when there is none (the server should ask again), a validated
    :class:`~rootbound.RootSet` otherwise. Other keys are ignored. An answer of the wrong kind (not
    ``{"roots": [...]}``) raises :class:`~rootbound.InvalidRootsAnswer`.
    """
    if input_responses is None:
        return MISSING
    if not isinstance(input_responses, Mapping):
        raise InvalidRootsAnswer("inputResponses is not an object")
    if key not in input_responses:
        return MISSING
    return RootSet.parse(input_responses[key], "modern", limits=limits)


def missing_capability_error(*required: str | Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The ``-32021`` JSON-RPC error object; several kinds merge into one ``requiredCapabilities``.

    ``missing_capability_error("roots", "elicitation")`` or
    ``missing_capability_error({"roots": {}}, {"sampling": {}})``.
    """
    return missing_capability(*required).to_error()


def missing_capability(*required: str | Mapping[str, Mapping[str, Any]]) -> MissingCapability:
    """The ``-32021`` error as an exception (see :func:`missing_capability_error`)."""
    merged: dict[str, dict[str, Any]] = {}
    for item in required or ("roots",):
        entries: Mapping[str, Mapping[str, Any]] = {item: {}} if isinstance(item, str) else item
        for name, value in entries.items():
            merged.setdefault(name, {}).update(value)
    return MissingCapability(merged)
