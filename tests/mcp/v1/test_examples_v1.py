"""The mcp 1.x examples the docs show (``examples/v1_*.py``), run as written in the 1.x venv: a FastMCP 1.x server
with ``RootsService`` over a real stdio pipe, and a ``ClientSession`` with ``RootsProvider`` narrowing its roots."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).parents[3] / "examples"


def test_the_v1_client_reads_inside_then_is_refused_after_narrowing(tmp_path: Path) -> None:
    project = tmp_path.resolve() / "app"
    (project / "docs").mkdir(parents=True)
    (project / "README.md").write_text("hello from the project")
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "v1_client_session.py"), str(project), str(project / "docs")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    inside, after = done.stdout.strip().splitlines()
    assert inside == "inside: hello from the project | error: False"
    assert after.startswith("after narrowing: ") and after.endswith("| error: True")
    assert "outside roots" in after
    assert "hello from the project" not in after
