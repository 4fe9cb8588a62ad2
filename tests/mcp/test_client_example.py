"""The client example runs end to end (it is documentation; keep it working)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "client_example.py"


def test_client_example_runs() -> None:
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60, check=True)
    lines = done.stdout.splitlines()
    assert "mode=legacy negotiated 2025-11-25" in lines
    assert "mode=2026-07-28 negotiated 2026-07-28" in lines
    after = [line for line in lines if "after add(docs):" in line]
    assert len(after) == 2
    assert all(line.rstrip().endswith("/docs") for line in after)
    assert any(line.startswith("bare ClientSession: file:///") for line in lines)
