"""RootsService on every server flavour (lowlevel, MCPServer, FastMCP 4), the examples run as real stdio
subprocesses, and the SEP-2577 warning. Connection-scoped cache lifetime at scale and raw-peer behaviour run on
both SDK majors in ``tests/mcp/both/test_server_wire.py``."""

from __future__ import annotations

import sys
import warnings
from types import ModuleType
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning

import rootbound.mcp.server as server_module
from mcp import Client, MCPError
from rootbound.mcp import RootsService
from tests.fixtures.roots_server import build_server
from tests.helpers.client_roots import ClientRoots
from tests.helpers.mcp_server import EXAMPLES, first_text, load_example

pytestmark = pytest.mark.anyio

FLAVOURS = ("server_lowlevel", "server_mcpserver", "server_fastmcp")


def target_of(module: ModuleType) -> Any:
    if hasattr(module, "server"):
        return module.server
    app = module.app
    return getattr(app, "_mcp_server", app)  # FastMCP: connect the SDK client to its lowlevel server


@pytest.fixture(autouse=True)
def quiet_deprecation() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_example_in_memory(flavour: str, mode: str) -> None:
    module = load_example(flavour)
    roots = ClientRoots(["file:///work/x", "file:///work/y"])
    async with Client(target_of(module), mode=mode, list_roots_callback=roots.callback) as client:
        for _ in range(3):
            result = await client.call_tool("workspace_roots", {})
            assert not result.is_error, first_text(result)
            assert first_text(result) == "file:///work/x\nfile:///work/y"
    assert roots.calls == (1 if mode == "legacy" else 3)
    async with Client(target_of(module), mode=mode) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("workspace_roots", {})
        assert info.value.code == -32021


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28", "auto"])
async def test_example_over_stdio(flavour: str, mode: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[str(EXAMPLES / f"{flavour}.py")], env={"ROOTBOUND_SILENCE_SEP2577": "1"}
    )
    roots = ClientRoots(["file:///work/stdio"])
    with anyio.fail_after(60):
        async with Client(params, mode=mode, list_roots_callback=roots.callback) as client:
            result = await client.call_tool("workspace_roots", {})
            assert first_text(result) == "file:///work/stdio"
            result = await client.call_tool("workspace_roots", {})
            assert first_text(result) == "file:///work/stdio"
    assert roots.calls == (1 if mode == "legacy" else 2)


async def test_sep2577_warning_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_module, "_warned", False)
    monkeypatch.delenv(server_module.SILENCE_ENV, raising=False)
    server = build_server(RootsService())
    roots = ClientRoots()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for mode in ("legacy", "2026-07-28", "legacy"):
            async with Client(server, mode=mode, list_roots_callback=roots.callback) as client:
                await client.call_tool("roots", {})
    ours = [w for w in caught if issubclass(w.category, MCPDeprecationWarning) and "SEP-2577" in str(w.message)]
    assert len(ours) == 1
    assert issubclass(ours[0].category, DeprecationWarning) or issubclass(ours[0].category, UserWarning)


@pytest.mark.parametrize("switch", ["flag", "env"])
async def test_sep2577_warning_can_be_silenced(monkeypatch: pytest.MonkeyPatch, switch: str) -> None:
    monkeypatch.setattr(server_module, "_warned", False)
    if switch == "env":
        monkeypatch.setenv(server_module.SILENCE_ENV, "1")
        service = RootsService()
    else:
        monkeypatch.delenv(server_module.SILENCE_ENV, raising=False)
        service = RootsService(warn_deprecated=False)
    server = build_server(service)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with Client(server, mode="legacy", list_roots_callback=ClientRoots().callback) as client:
            await client.call_tool("roots", {})
    assert not [w for w in caught if "SEP-2577" in str(w.message)]
