"""The roots protocol rules, sans I/O: eras, declared capabilities, the roots input request and its answer.

Plain dicts in, plain dicts or :class:`~rootbound.RootSet` out, so the same rules serve the SDK adapters
(``rootbound.mcp`` drives them) and a raw JSON-RPC peer. No SDK import, no I/O.

The two eras: **handshake** (every revision up to 2025-11-25: ``initialize`` declares the client's capabilities
once per connection, and the server sends its own ``roots/list`` request) and **2026-07-28** (no handshake:
every request declares its capabilities in ``_meta``, and the server asks for roots with an input request in an
``InputRequiredResult``, answered in the retry's ``inputResponses``: a Multi Round-Trip Request, MRTR).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final, Literal

from rootbound.core.errors import InvalidRootsAnswer, InvalidRootsRequest, MissingCapability
from rootbound.core.roots import DEFAULT_LIMITS, Era, RootLimits, RootSet

__all__ = [
    "CAPABILITIES_META",
    "INPUT_ROUND_METHODS",
    "INPUT_ROUND_VERSIONS",
    "LIST_CHANGED",
    "MISSING",
    "ROOTS_KEY",
    "ROOTS_METHOD",
    "Era",
    "Missing",
    "advertised_roots_capability",
    "client_supports_roots",
    "era_of",
    "missing_capability",
    "read_roots_response",
    "request_capabilities",
    "roots_answer_over_limit",
    "roots_input_request",
    "validate_roots_request",
]

ROOTS_METHOD: Final = "roots/list"
LIST_CHANGED: Final = "notifications/roots/list_changed"
ROOTS_KEY: Final = "roots"
"""The ``inputRequests`` key rootbound uses: stable, and it says nothing about the server's code."""

INPUT_ROUND_VERSIONS: Final = ("2026-07-28",)
"""Protocol versions of the 2026-07-28 era (no handshake; roots come through input rounds)."""

INPUT_ROUND_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
"""The requests that may answer with an ``InputRequiredResult`` (and so carry ``inputResponses``)."""

CAPABILITIES_META: Final = "io.modelcontextprotocol/clientCapabilities"
"""The ``_meta`` key under which a 2026-07-28 request declares its client's capabilities."""


class Missing(enum.Enum):
    """Type of :data:`MISSING`: the retry carried no answer under the key (ask again; not an error)."""

    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = Missing.MISSING


def era_of(protocol_version: str | None) -> Era:
    """``"2026-07-28"`` for the input-round revisions, ``"handshake"`` for every earlier one and unknown."""
    return "2026-07-28" if protocol_version in INPUT_ROUND_VERSIONS else "handshake"


def request_capabilities(params: Mapping[str, Any] | None) -> Any:
    """The client capabilities a 2026-07-28 request declares in its ``_meta``, exactly as sent (or ``None``).

    Read from the raw params, before any model normalises them: a malformed declaration must count as none.
    """
    meta = (params or {}).get("_meta")
    return meta.get(CAPABILITIES_META) if isinstance(meta, Mapping) else None


def client_supports_roots(capabilities: Any) -> bool:
    """True only when ``capabilities.roots`` is an object (``{}``; a ``listChanged`` member is tolerated).

    ``capabilities`` is the raw declaration: ``initialize``'s ``capabilities`` in the handshake era,
    :func:`request_capabilities` in 2026-07-28.
    """
    if not isinstance(capabilities, Mapping):
        return False
    return isinstance(capabilities.get("roots"), Mapping)


def advertised_roots_capability(era: Era, *, has_source: bool, list_changed: bool) -> dict[str, Any] | None:
    """The ``roots`` capability a client should declare: none without a roots source; ``{"listChanged": ...}``
    (its promise to notify) in ``initialize``; exactly ``{}`` in 2026-07-28, where ``listChanged`` means nothing."""
    if not has_source:
        return None
    return {} if era == "2026-07-28" else {"listChanged": list_changed}


def roots_input_request(meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The bare roots input request for ``InputRequiredResult.inputRequests``: no ``jsonrpc``, no ``id``."""
    request: dict[str, Any] = {"method": ROOTS_METHOD}
    if meta is not None:
        request["params"] = {"_meta": dict(meta)}
    return request


def validate_roots_request(request: Any) -> dict[str, Any]:
    """Check a ``roots/list`` request (JSON-RPC or input request) a peer sent; return it normalised.

    For a raw JSON-RPC client (the SDK's client session already applies the same rule on the wire).
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


def roots_answer_over_limit(input_responses: Any, key: str = ROOTS_KEY, *, limits: RootLimits = DEFAULT_LIMITS) -> bool:
    """Whether the answer under ``key`` has more roots than ``limits`` allow: an O(1) count.

    Lets an adapter refuse a flood before any schema check walks it (100,000 roots cost the SDK's check over a
    second); everything else is left to :func:`read_roots_response`.
    """
    answer = input_responses.get(key) if isinstance(input_responses, Mapping) else None
    items = answer.get("roots") if isinstance(answer, Mapping) else None
    return isinstance(items, list) and len(items) > limits.max_roots


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
    return RootSet.parse(input_responses[key], "2026-07-28", limits=limits)


def missing_capability(*required: str | Mapping[str, Mapping[str, Any]]) -> MissingCapability:
    """The ``-32021`` error; several kinds merge into one ``requiredCapabilities`` (``.to_error()``: the dict).

    ``missing_capability("roots", "elicitation")`` or ``missing_capability({"roots": {}}, {"sampling": {}})``.
    """
    merged: dict[str, dict[str, Any]] = {}
    for item in required or ("roots",):
        entries: Mapping[str, Mapping[str, Any]] = {item: {}} if isinstance(item, str) else item
        for name, value in entries.items():
            merged.setdefault(name, {}).update(value)
    return MissingCapability(merged)
