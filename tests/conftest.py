"""Shared pytest configuration: anyio tests run on asyncio (the SDK's ordering facts are asyncio facts)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
