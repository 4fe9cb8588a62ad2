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

from rootbound.mcp._roots_owner import owner_behind

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
    """The provider behind ``session``'s roots callback (``_roots_owner``: its bound method, a framework's closure
    around it, or a framework object delegating to it; one level deep)."""
    owner = owner_behind(
        getattr(session, "_list_roots_callback", None), lambda found: isinstance(found, RootsCapabilityHook)
    )
    return owner if isinstance(owner, RootsCapabilityHook) else None


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
