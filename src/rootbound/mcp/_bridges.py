"""Error bridges between rootbound and the SDK: rootbound errors as the SDK's error, tool errors and wire results.

A rootbound error has a fixed message and a JSON-RPC code; these helpers carry exactly that across, never the
caller's input. Both SDK majors: mcp 2.x's ``MCPError(code, message, data)``, mcp 1.x's ``McpError(ErrorData)``.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import Any, Final

from pydantic import BaseModel

from rootbound.core.errors import RootsError
from rootbound.core.mrtr import era_of
from rootbound.mcp._sdk_major import MCP_V2, MCP_VERSION, NEEDS_MCP_2

if MCP_V2:
    import mcp_types as types
    from mcp.shared.exceptions import MCPError as SdkError
else:
    from mcp.shared.exceptions import McpError as SdkError

    from mcp import types

__all__ = [
    "InputRequired",
    "Refusal",
    "RequiresMcp2",
    "SdkError",
    "is_error_result",
    "mcp_error",
    "note_refusal",
    "shows_refusal",
    "tool_errors",
    "tool_failure",
    "wire_result",
]

SERVER_INFO_META: Final = "io.modelcontextprotocol/serverInfo"


class RequiresMcp2(RuntimeError):
    """A 2026-07-28 feature called on mcp 1.x, which speaks only the handshake era."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what} is 2026-07-28 only, which needs the mcp SDK {NEEDS_MCP_2} (this environment has mcp "
            f"{MCP_VERSION}, handshake era only); on mcp 1.x call `await service.roots(ctx)` in the tool instead"
        )


def mcp_error(error: RootsError) -> SdkError:
    """The SDK exception for a rootbound error: same code, same fixed message, same data."""
    if MCP_V2:
        return SdkError(code=error.code, message=error.message, data=error.data)
    return SdkError(types.ErrorData(code=error.code, message=error.message, data=error.data))


class Refusal:
    """What one request (mcp 1.x) raised through rootbound: the request-handler wrapper of ``_sdk1_server``
    reads it to give the tool's error the same wire form as mcp 2.x's middleware does."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: BaseException | None = None


REFUSAL: contextvars.ContextVar[Refusal | None] = contextvars.ContextVar("rootbound_refusal", default=None)


def note_refusal(error: BaseException) -> None:
    """Remember ``error`` (a ``RootsError`` or the ``-32021`` refusal) for the request being handled (mcp 1.x)."""
    refusal = REFUSAL.get()
    if refusal is not None:
        refusal.error = error


@contextlib.contextmanager
def tool_errors() -> Iterator[None]:
    """Inside an ``MCPServer`` / FastMCP tool: let a rootbound denial reach the model with its fixed, safe message.

    ``MCPServer`` (mcp 2.x) shows a ``ToolError``'s text after "Error executing tool NAME: " and masks every other
    exception as "Error executing tool NAME"; a denial is deliberate, so it should say why (its message never
    contains the caller's input). FastMCP 1.x shows any exception's text after that prefix. On both majors
    ``RootsService.install`` strips the prefix from a denial this context (or ``service.roots``) raised (2.x: its
    middleware; 1.x: its request-handler wrapper), so the model reads the fixed text alone.
    """
    if MCP_V2:
        from mcp.server.mcpserver.exceptions import ToolError
    else:
        from mcp.server.fastmcp.exceptions import ToolError

    try:
        yield
    except RootsError as error:
        note_refusal(error)
        raise ToolError(str(error)) from None


class InputRequired(SdkError):
    """Raised by ``RootsService.roots`` (2026-07-28) when the client must supply input first.

    It is an ``MCPError`` so that frameworks which turn tool exceptions into ``isError`` results (``MCPServer``,
    FastMCP) let it through to the rootbound middleware, which turns it into an ``InputRequiredResult``. Without
    the middleware it reaches the client as a plain ``-32603``, never as a silent success. Never raised on mcp
    1.x (no 2026-07-28 there); the name exists so that code importing it runs on both majors.
    """

    _ERROR: Final = types.ErrorData(
        code=-32603, message="Input required, but the rootbound middleware is not installed"
    )

    def __init__(self) -> None:
        # Raised on every first round: reuse one ErrorData instead of building a pydantic model each time.
        if MCP_V2:
            Exception.__init__(self, self._ERROR.code, self._ERROR.message, None)
        else:
            Exception.__init__(self, self._ERROR.message)  # as mcp 1.x's McpError does
        self.error = self._ERROR


def shows_refusal(result: Any, message: str) -> bool:
    """Whether ``result`` is a tool error whose first text is ``message``, alone or after a framework's prefix
    ("Error executing tool NAME: "): the framework's rendering of the denial, not the tool's own text (mcp 2.x)."""
    if not is_error_result(result):
        return False
    content = result.get("content") if isinstance(result, Mapping) else getattr(result, "content", None)
    first = content[0] if isinstance(content, list) and content else None
    text = first.get("text") if isinstance(first, Mapping) else getattr(first, "text", None)
    return isinstance(text, str) and (text == message or text.endswith(": " + message))


def is_error_result(result: Any) -> bool:
    """Whether a handler's result is a tool error (``isError: true``), as a dict or as a model (either major)."""
    if isinstance(result, Mapping):
        return result.get("isError") is True
    root = getattr(result, "root", result)  # mcp 1.x wraps results in a ServerResult root model
    return getattr(root, "is_error", None) is True or getattr(root, "isError", None) is True


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
    result = types.CallToolResult.model_validate({"content": [{"type": "text", "text": str(error)}], "isError": True})
    return wire_result(result, version, server_info)
