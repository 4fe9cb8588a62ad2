"""The one place ``rootbound.audit`` reaches past the ``mcp`` SDK's public client API (pinned by
``tests/audit/test_sdk_pins.py``).

Why: an audit must survive servers the SDK's typed client rejects (a ``tools/list`` or ``tools/call`` result
that fails validation). For those, the audit sends the same request through the session's own JSON-RPC
dispatcher and reads the raw result dict. A handshake-era ``ping`` goes the same way (the SDK's ``send_ping``
warns that 2026-07-28 dropped it). Private attribute used: ``ClientSession._dispatcher`` and its
``send_raw_request(method, params, opts)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.client.session import ClientSession

__all__ = ["raw_request"]


async def raw_request(session: ClientSession, method: str, params: Mapping[str, Any] | None, timeout: float) -> Any:
    """Send ``method`` on the session's wire and return the raw ``result`` (raises ``MCPError`` on an error)."""
    dispatcher = getattr(session, "_dispatcher", None)
    if dispatcher is None or not hasattr(dispatcher, "send_raw_request"):
        raise RuntimeError("this mcp SDK has no ClientSession._dispatcher.send_raw_request")
    return await dispatcher.send_raw_request(method, params, {"timeout": timeout})
