"""Shared pytest configuration: anyio tests run on asyncio (the SDK's ordering facts are asyncio facts)."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import tempfile

import pytest

pytest_plugins = ["tests.helpers.built_dist"]  # the session's sdist and wheel (the `dist` fixture)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# tests/mcp/v1 runs on mcp 1.x only, in the second venv (`make pytest-mcp1`, .deps/mcp1); tests/mcp/both runs in
# both. The main run (mcp 2.x) leaves v1 to that venv.
collect_ignore = ["mcp/v1"] if importlib.metadata.version("mcp").split(".")[0] != "1" else []


_CACHE = tempfile.mkdtemp(prefix="rootbound-tests-cache-")


def pytest_configure(config: pytest.Config) -> None:
    """Every server the suite starts keeps its search indexes here, never in the developer's own cache (16 saved
    DIRs at most, least recently used evicted: a test run would evict theirs). ``ROOTBOUND_CACHE_HOME`` is
    rootbound's alone, so pip's and uv's caches (the install tests) stay where they are."""
    os.environ["ROOTBOUND_CACHE_HOME"] = os.path.realpath(_CACHE)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_CACHE, ignore_errors=True)
