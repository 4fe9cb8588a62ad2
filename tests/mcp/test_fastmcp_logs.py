"""FastMCP 4 with ``RootsService`` in 2026-07-28: the first round of a call asks for roots by raising
``InputRequired`` through FastMCP, which logs every tool exception with its traceback before masking it. That is
how a round works, not a failure: the log gets nothing at FastMCP's default level, one debug line at DEBUG, and
never a traceback (issue 26 #6). Other tool failures are still logged as FastMCP logs them."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator

import pytest
from mcp.shared.exceptions import MCPDeprecationWarning

from mcp import Client
from tests.helpers.client_roots import ClientRoots
from tests.helpers.mcp_server import first_text, load_example

pytestmark = pytest.mark.anyio


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def fastmcp_log() -> Iterator[tuple[Records, logging.Logger]]:
    """A handler on FastMCP's own logger (it does not propagate to the root, so caplog would see nothing), added
    after FastMCP is imported: its logging setup replaces the logger's handlers."""
    load_example("server_fastmcp")
    logger = logging.getLogger("fastmcp")
    handler, level = Records(), logger.level
    logger.addHandler(handler)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield handler, logger
    logger.removeHandler(handler)
    logger.setLevel(level)


async def _two_calls() -> None:
    module = load_example("server_fastmcp")
    roots = ClientRoots(["file:///work/x"])
    async with Client(module.app._mcp_server, mode="2026-07-28", list_roots_callback=roots.callback) as client:
        for _ in range(2):
            result = await client.call_tool("workspace_roots", {})
            assert not result.is_error and first_text(result) == "file:///work/x"
    assert roots.calls == 2  # two first rounds, each answered


async def test_input_rounds_log_nothing_at_the_default_level(fastmcp_log: tuple[Records, logging.Logger]) -> None:
    handler, _ = fastmcp_log
    await _two_calls()
    assert [r for r in handler.records if r.levelno >= logging.INFO] == []
    assert all(r.exc_info is None and r.exc_text is None for r in handler.records)
    logging.getLogger("fastmcp.server.server").warning("sentinel")  # the handler is live: it sees this
    assert [r.getMessage() for r in handler.records][-1:] == ["sentinel"]


async def test_input_rounds_are_one_debug_line_each_at_debug(fastmcp_log: tuple[Records, logging.Logger]) -> None:
    handler, logger = fastmcp_log
    logger.setLevel(logging.DEBUG)
    await _two_calls()
    rounds = [r for r in handler.records if "input required" in r.getMessage()]
    assert len(rounds) == 2
    assert {r.levelno for r in rounds} == {logging.DEBUG}
    assert all(r.exc_info is None for r in handler.records if r.name == "fastmcp.server.server")
    text = "\n".join(logging.Formatter().format(r) for r in handler.records)
    assert "Traceback" not in text and "middleware is not installed" not in text


async def test_a_real_tool_failure_is_still_logged(fastmcp_log: tuple[Records, logging.Logger]) -> None:
    """The filter passes every record that is not an input round."""
    handler, _ = fastmcp_log
    logging.getLogger("fastmcp.server.server").error(
        "Error calling tool 'x'", exc_info=(ValueError, ValueError(), None)
    )
    assert [r.getMessage() for r in handler.records] == ["Error calling tool 'x'"]
    assert handler.records[0].levelno == logging.ERROR and handler.records[0].exc_info is not None
