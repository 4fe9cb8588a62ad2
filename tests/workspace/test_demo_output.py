"""``make demo`` reads in one piece (issue 50 item 8): the servers' start-up lines (300 characters on stderr, the
host's log) came into the middle of its sections three times. The demo now holds each server's stderr back and
shows the start-up line once, after the first session; anything else a server says is still shown."""

from __future__ import annotations

import os
import subprocess
import sys


def test_the_demo_s_sections_are_not_interrupted_by_the_servers_logs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rootbound.demo"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1", "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    logged = [line for line in lines if "rootbound serve: stdio;" in line]
    assert len(logged) == 1 and logged[0].startswith("  (the server's log, stderr, once: rootbound serve: stdio;")
    assert not [line for line in lines if "server log:" in line]  # nothing else on any server's stderr
    assert lines[-1].startswith("done in ")
