"""Error bridges between rootbound and the SDK: rootbound errors as ``MCPError``s, tool errors and wire results.

A rootbound error has a fixed message and a JSON-RPC code; these helpers carry exactly that across, never the
caller's input.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any, Final

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from rootbound.core.errors import RootsError
from rootbound.core.mrtr import era_of

__all__ = ["InputRequired", "is_error_result", "mcp_error", "tool_errors", "tool_failure", "wire_result"]

SERVER_INFO_META: Final = "io.modelcontextprotocol/serverInfo"


def mcp_error(error: RootsError) -> MCPError:
    """The SDK exception for a rootbound error: same code, same fixed message, same data."""
    return MCPError(code=error.code, message=error.message, data=error.data)


@contextlib.contextmanager
def tool_errors() -> Iterator[None]:
    """Inside an ``MCPServer`` tool: let a rootbound denial reach the model with its fixed, safe message.

    ``MCPServer`` shows only ``ToolError`` text and masks every other exception as "Error executing tool"; a
    denial is deliberate, so it should say why (its message never contains the caller's input).
    """
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        yield
    except RootsError as error:
        raise ToolError(str(error)) from None


class InputRequired(MCPError):
    """Raised by ``RootsService.roots`` (2026-07-28) when the client must supply input first.

    It is an ``MCPError`` so that frameworks which turn tool exceptions into ``isError`` results (``MCPServer``,
    FastMCP) let it through to the rootbound middleware, which turns it into an ``InputRequiredResult``. Without
    the middleware it reaches the client as a plain ``-32603``, never as a silent success.
    """

    _ERROR: Final = types.ErrorData(
        code=-32603, message="Input required, but the rootbound middleware is not installed"
    )

    def __init__(self) -> None:
        # Raised on every first round: reuse one ErrorData instead of building a pydantic model each time.
        Exception.__init__(self, self._ERROR.code, self._ERROR.message, None)
        self.error = self._ERROR


def is_error_result(result: Any) -> bool:
    """Whether a handler's result is a tool error (``isError: true``), as a dict or as a model."""
    if isinstance(result, Mapping):
        return result.get("isError") is True
    return getattr(result, "is_error", False) is True


def wire_result(result: BaseModel, version: str, server_info: Any = None) -> dict[str, Any]:
    """A short-circuit result in its wire form for ``version`` (the runner's serializer is bypassed on this path)."""
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if era_of(version) == "2026-07-28":
        wire.setdefault("resultType", "complete")
        if server_info is not None:
            meta = dict(wire.get("_meta") or {})
            meta.setdefault(SERVER_INFO_META, server_info)
            wire["_meta"] = meta
    else:
        wire.pop("resultType", None)  # 2026-07-28 vocabulary: the SDK's sieve would drop it on a handshake wire
    return wire


def tool_failure(error: RootsError, version: str, server_info: Any = None) -> dict[str, Any]:
    """A ``tools/call`` result with ``isError`` and the error's fixed text: a denial the model can read."""
    result = types.CallToolResult(content=[types.TextContent(type="text", text=str(error))], is_error=True)
    return wire_result(result, version, server_info)
