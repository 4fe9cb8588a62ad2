"""The URL a ``rootbound serve --http 127.0.0.1:0`` subprocess listens on, read from its startup line (benches)."""

from __future__ import annotations

import re
import subprocess

__all__ = ["served_url"]


def served_url(process: subprocess.Popen[str], what: str = "the server") -> str:
    """Read ``process``'s stderr (text) until it names its ``http://127.0.0.1:PORT/mcp``; exit if it ends first."""
    assert process.stderr is not None
    while True:
        line = process.stderr.readline()
        if not line:
            raise SystemExit(f"{what} did not start")
        match = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
        if match:
            return match.group(1)
