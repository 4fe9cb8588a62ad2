"""The rate-limited logging filter: per-kind and global budgets per window, and the suppression count."""

from __future__ import annotations

import logging

from rootbound.workspace.limits.log_limit import RateLimit


def _record(msg: str, name: str = "x") -> logging.LogRecord:
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, (), None)


def test_burst_per_kind_then_suppressed_then_counted() -> None:
    now = [0.0]
    limit = RateLimit(burst=3, total=100, window=10.0, clock=lambda: now[0])
    assert [limit.filter(_record("storm %s")) for _ in range(5)] == [True, True, True, False, False]
    assert limit.filter(_record("other"))  # another kind has its own budget
    now[0] = 10.0
    record = _record("storm %s")
    assert limit.filter(record)
    assert "[2 similar log records suppressed in the previous window]" in str(record.msg)


def test_global_budget_caps_many_kinds() -> None:
    limit = RateLimit(burst=5, total=10, window=10.0, clock=lambda: 0.0)
    allowed = sum(limit.filter(_record(f"kind {i}")) for i in range(1000))
    assert allowed == 10
