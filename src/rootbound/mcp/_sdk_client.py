"""The one place rootbound touches private attributes of the ``mcp`` SDK's client side.

Why: mcp 2.3.0's ``ClientSession._build_capabilities`` advertises ``roots: {"listChanged": true}`` whenever a
roots callback is set, in every era (2026-07-28 ``_meta`` included), and ``mcp.Client`` offers no public hook to
change it. rootbound wraps that builder once, class-wide, and rewrites only the ``roots`` entry, and only for
sessions whose roots callback belongs to a :class:`RootsCapabilityHook` (a ``RootsProvider``); every other
session gets the SDK's answer untouched. The wrapper also tells the provider which sessions exist, which is how
``set_roots`` reaches live sessions.

Private attributes used here, each pinned by ``tests/mcp/test_sdk_pins.py``:

* ``ClientSession._build_capabilities(version)`` - wrapped (``initialize``, ``send_discover`` and ``adopt`` call
  it);
* ``ClientSession._list_roots_callback`` - read, to find the owning provider;
* ``ClientSession._task_group`` - the session's own task group, where the coalesced ``list_changed`` sender
  runs, so it dies with the connection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol, runtime_checkable

import mcp_types as types
from mcp.client.session import ClientSession

__all__ = ["ORIGINAL_BUILD_CAPABILITIES", "RootsCapabilityHook", "hook_of", "install", "installed", "spawn"]


@runtime_checkable
class RootsCapabilityHook(Protocol):
    """An object whose bound method is a session's roots callback and that decides the ``roots`` capability."""

    def _rootbound_roots_capability(self, session: ClientSession, version: str) -> types.RootsCapability | None:
        """The ``roots`` entry to advertise to a peer speaking ``version`` (``None``: no ``roots`` key)."""
        ...


_MARKER: Final = "__rootbound_wrapped__"

ORIGINAL_BUILD_CAPABILITIES: Final[Callable[[ClientSession, str], types.ClientCapabilities]] = getattr(
    ClientSession._build_capabilities, "__wrapped__", ClientSession._build_capabilities
)
"""The SDK's own builder, kept so tests can pin its behaviour and the wrapper can delegate to it."""


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


def _build_capabilities(self: ClientSession, version: str) -> types.ClientCapabilities:
    capabilities = ORIGINAL_BUILD_CAPABILITIES(self, version)
    hook = hook_of(self)
    if hook is None:
        return capabilities
    return capabilities.model_copy(update={"roots": hook._rootbound_roots_capability(self, version)})


_build_capabilities.__wrapped__ = ORIGINAL_BUILD_CAPABILITIES  # type: ignore[attr-defined]
setattr(_build_capabilities, _MARKER, True)


def installed() -> bool:
    """Whether the class-wide wrapper is in place."""
    return getattr(ClientSession.__dict__.get("_build_capabilities"), _MARKER, False) is True


def install() -> None:
    """Wrap ``ClientSession._build_capabilities`` once (idempotent). Raises if the SDK no longer has it."""
    if installed():
        return
    current = ClientSession.__dict__.get("_build_capabilities")
    if not callable(current):
        raise RuntimeError("this mcp SDK has no ClientSession._build_capabilities; rootbound cannot set roots")
    ClientSession._build_capabilities = _build_capabilities  # type: ignore[method-assign]


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
