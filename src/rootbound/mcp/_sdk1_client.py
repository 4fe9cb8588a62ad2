"""The one place rootbound touches private attributes of the ``mcp`` 1.x SDK's client side (handshake era only).

Why: mcp 1.x's ``ClientSession.initialize`` builds ``roots: {"listChanged": true}`` inline whenever a roots callback
is set (there is no capability builder to wrap, unlike 2.x's ``_build_capabilities``), and it keeps neither the
negotiated protocol version nor a public "initialized" flag. rootbound wraps two methods once, class-wide:

* ``ClientSession.send_request`` (inherited from ``BaseSession``): for an ``InitializeRequest`` only, the ``roots``
  entry of the declared capabilities is replaced by the provider's decision (``{"listChanged": notify}``, or no key
  without a roots source); every other request, and every session whose callback is not a provider's, passes
  through untouched;
* ``ClientSession.initialize``: once it has returned (the ``initialized`` notification is sent), the negotiated
  version is remembered, so ``list_changed`` is never sent before the handshake completed.

Private attributes used here, each pinned by ``tests/mcp/v1/test_sdk1_pins_client.py``:

* ``ClientSession._list_roots_callback`` - read, to find the owning provider;
* ``BaseSession._task_group`` - the session's own task group, where the coalesced ``list_changed`` sender runs.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol, TypeVar, runtime_checkable

from mcp.client.session import ClientSession

from mcp import types

__all__ = [
    "ORIGINAL_INITIALIZE",
    "ORIGINAL_SEND_REQUEST",
    "RootsCapabilityHook",
    "hook_of",
    "install",
    "installed",
    "negotiated",
    "spawn",
]

_T = TypeVar("_T")


@runtime_checkable
class RootsCapabilityHook(Protocol):
    """An object whose bound method is a session's roots callback and that decides the ``roots`` capability."""

    def _rootbound_roots_capability(self, session: ClientSession, version: str) -> types.RootsCapability | None:
        """The ``roots`` entry to advertise to a peer speaking ``version`` (``None``: no ``roots`` key)."""
        ...


_MARKER: Final = "__rootbound_wrapped__"

ORIGINAL_SEND_REQUEST: Final[Callable[..., Awaitable[Any]]] = getattr(
    ClientSession.send_request, "__wrapped__", ClientSession.send_request
)
"""The SDK's own ``send_request`` (``BaseSession``'s), which the wrapper delegates to."""

ORIGINAL_INITIALIZE: Final[Callable[[ClientSession], Awaitable[types.InitializeResult]]] = getattr(
    ClientSession.initialize, "__wrapped__", ClientSession.initialize
)
"""The SDK's own ``initialize``, kept so tests can pin what it declares unwrapped."""

_NEGOTIATED: weakref.WeakKeyDictionary[ClientSession, str] = weakref.WeakKeyDictionary()


def hook_of(session: ClientSession) -> RootsCapabilityHook | None:
    """The provider behind ``session``'s roots callback: the callback is a provider's bound method; or a
    framework's wrapper (a closure, like fastmcp's ``create_roots_callback``) around a provider's roots handler; or
    a bound method of a framework object that keeps a provider's callback and delegates to it (mcp-use's connector
    stores ``list_roots_callback`` and answers through it). One level deep, never a guess further."""
    callback = getattr(session, "_list_roots_callback", None)
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, RootsCapabilityHook):
        return owner
    held: list[object] = []
    for cell in getattr(callback, "__closure__", None) or ():
        try:
            held.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    if owner is not None and not isinstance(owner, type):
        held.extend(getattr(owner, "__dict__", {}).values())
    for inner in held:
        if isinstance(inner, RootsCapabilityHook) and not isinstance(inner, type):
            return inner
        inner_owner = getattr(inner, "__self__", None)
        if isinstance(inner_owner, RootsCapabilityHook) and not isinstance(inner_owner, type):
            return inner_owner
    return None


def negotiated(session: ClientSession) -> str | None:
    """The protocol version ``session`` negotiated, once its ``initialize()`` has returned (``None`` before, and for
    sessions without a provider)."""
    return _NEGOTIATED.get(session)


def _with_roots(
    initialize: types.InitializeRequest, capability: types.RootsCapability | None
) -> types.InitializeRequest:
    """A copy of ``initialize`` whose declared ``roots`` is ``capability`` (``None``: no ``roots`` key)."""
    capabilities = initialize.params.capabilities.model_copy(update={"roots": capability})
    params = initialize.params.model_copy(update={"capabilities": capabilities})
    return initialize.model_copy(update={"params": params})


async def _send_request(self: ClientSession, request: Any, result_type: type[_T], *args: Any, **kwargs: Any) -> _T:
    # ``initialize()`` sends a ``ClientRequest`` around the ``InitializeRequest``; a bare one serializes the same.
    wrapped = isinstance(request, types.ClientRequest)
    initialize = request.root if wrapped else request
    if isinstance(initialize, types.InitializeRequest):
        hook = hook_of(self)
        if hook is not None:
            capability = hook._rootbound_roots_capability(self, str(initialize.params.protocolVersion))
            rewritten = _with_roots(initialize, capability)
            request = types.ClientRequest(rewritten) if wrapped else rewritten
    result: _T = await ORIGINAL_SEND_REQUEST(self, request, result_type, *args, **kwargs)
    return result


async def _initialize(self: ClientSession) -> types.InitializeResult:
    result = await ORIGINAL_INITIALIZE(self)
    if hook_of(self) is not None:
        _NEGOTIATED[self] = str(result.protocolVersion)
    return result


_send_request.__wrapped__ = ORIGINAL_SEND_REQUEST  # type: ignore[attr-defined]
_initialize.__wrapped__ = ORIGINAL_INITIALIZE  # type: ignore[attr-defined]
setattr(_send_request, _MARKER, True)
setattr(_initialize, _MARKER, True)


def installed() -> bool:
    """Whether both class-wide wrappers are in place."""
    return all(
        getattr(ClientSession.__dict__.get(name), _MARKER, False) is True for name in ("send_request", "initialize")
    )


def install() -> None:
    """Wrap ``ClientSession.send_request`` and ``ClientSession.initialize`` once (idempotent). Raises if the SDK no
    longer has them."""
    if installed():
        return
    if not callable(getattr(ClientSession, "send_request", None)) or not callable(
        ClientSession.__dict__.get("initialize")
    ):
        raise RuntimeError("this mcp SDK has no ClientSession.send_request/initialize; rootbound cannot set roots")
    ClientSession.send_request = _send_request  # type: ignore[method-assign,assignment]
    ClientSession.initialize = _initialize  # type: ignore[method-assign]


def spawn(session: ClientSession, func: Callable[..., Awaitable[Any]], *args: Any) -> bool:
    """Start ``func(*args)`` in the session's own task group; ``False`` when the session is not running."""
    task_group = getattr(session, "_task_group", None)
    if task_group is None:
        return False
    try:
        task_group.start_soon(func, *args)
    except RuntimeError:  # the task group has exited: the connection is gone
        return False
    return True
