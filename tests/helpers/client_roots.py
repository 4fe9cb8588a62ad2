"""The client's roots for server-side tests, on either SDK major: mutable, counted, able to misbehave."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio

from mcp import types

__all__ = ["ClientRoots"]


class ClientRoots:
    """The client's roots: mutable, counted, and able to misbehave on purpose."""

    def __init__(self, uris: Sequence[str] = ("file:///work/a",)) -> None:
        self.uris = list(uris)
        self.calls = 0
        self.delay = 0.0
        self.fail = False
        self.hang = False

    async def callback(self, context: Any) -> types.ListRootsResult | types.ErrorData:
        """The SDK's ``list_roots_callback`` (``context``: either major's request context)."""
        self.calls += 1
        if self.hang:
            await anyio.sleep_forever()
        if self.delay:
            await anyio.sleep(self.delay)
        if self.fail:
            return types.ErrorData(code=-32603, message="no roots today")
        return types.ListRootsResult.model_validate({"roots": [{"uri": uri} for uri in self.uris]})
