# mypy: ignore-errors
# Runs in a framework's own venv (.deps/frameworks/NAME), against that framework's SDK: not type-checked here.
"""What an mcp 1.x client put on the wire in ``initialize``, for the drivers of the frameworks on mcp 1.x.

``record_initialize()`` must run before ``rootbound.mcp`` is imported: it wraps ``BaseSession.send_request``, the
SDK's own serializer, so rootbound's wrapper (installed later, on ``ClientSession``) delegates to it and the record
is the request after rootbound rewrote it, exactly as ``BaseSession`` then writes it.
"""

from __future__ import annotations

import sys
from typing import Any

from mcp.shared.session import BaseSession

DECLARED: list[dict[str, Any]] = []  # the capabilities of every initialize sent, as JSON


def record_initialize() -> None:
    assert "rootbound.mcp.client" not in sys.modules, "record_initialize() must run before rootbound.mcp is imported"
    original = BaseSession.send_request

    async def send_request(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        wire = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        if wire.get("method") == "initialize":
            DECLARED.append(wire["params"]["capabilities"])
        return await original(self, request, *args, **kwargs)

    BaseSession.send_request = send_request


def notes_for(provider: Any) -> list[str]:
    """What the judge checks: the ``roots`` declared, and that the provider tracked the live session(s)."""
    import json

    sessions = provider.sessions()
    return [
        f"mcp {__import__('importlib.metadata').metadata.version('mcp')}",
        "declared roots " + json.dumps([caps.get("roots") for caps in DECLARED]),
        f"provider sessions {len(sessions)}",
        f"list_changed sent {sum(provider.notifications_sent(session) for session in sessions)}",
    ]
