"""Pins for the one private SDK attribute ``rootbound.audit._sdk`` uses: if the SDK moves it, this fails first."""

from __future__ import annotations

import inspect

from mcp.client.session import ClientSession
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher


def test_session_keeps_its_dispatcher() -> None:
    source = inspect.getsource(ClientSession.send_request)
    assert "self._dispatcher.send_raw_request(" in source


def test_dispatcher_raw_request_signature() -> None:
    params = list(inspect.signature(JSONRPCDispatcher.send_raw_request).parameters)
    assert params[:4] == ["self", "method", "params", "opts"]
