"""fastmcp, as its users start it (no roots), on ``rootbound serve`` started without DIRs (issue 35 #2).

fastmcp raises on a JSON-RPC error even with ``raise_on_error=False``, so the text it raises is what its user
reads: it must name the fix (``rootbound serve DIR`` and the host config field), and ``list_roots`` must answer
with the same fix. The SDK client's view is ``tests/workspace/test_first_call_help.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rootbound.workspace.effective_roots import NO_DIRS_FIX

HERE = Path(__file__).resolve().parent
PYTHON = HERE.parents[2] / ".deps" / "frameworks" / "fastmcp" / "bin" / "python"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_fastmcp_first_call_names_the_fix(mode: str) -> None:
    assert PYTHON.exists(), f"{PYTHON} is missing: run scripts/setup-test-deps.sh (make test-deps)"
    done = subprocess.run(
        [
            str(PYTHON),
            str(HERE / "drivers" / "first_call_fastmcp.py"),
            mode,
            sys.executable,
            "-m",
            "rootbound",
            "serve",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": ""},
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    found = json.loads(lines[-1])
    assert NO_DIRS_FIX in found["read_file"]["text"], found
    assert not found["list_roots"]["is_error"]
    assert f"Fix: {NO_DIRS_FIX}" in found["list_roots"]["text"]
