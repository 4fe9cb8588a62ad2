"""Shared pytest configuration: anyio tests run on asyncio (the SDK's ordering facts are asyncio facts)."""

from __future__ import annotations

import importlib.metadata

import pytest

pytest_plugins = ["tests.helpers.built_dist"]  # the session's sdist and wheel (the `dist` fixture)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# tests/mcp/v1 runs on mcp 1.x only, in the second venv (`make pytest-mcp1`, .deps/mcp1); tests/mcp/both runs in
# both. The main run (mcp 2.x) leaves v1 to that venv.
collect_ignore = ["mcp/v1"] if importlib.metadata.version("mcp").split(".")[0] != "1" else []
