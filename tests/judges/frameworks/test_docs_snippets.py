"""The framework snippets in ``docs/client.md`` are the bodies of ``snippets/*.py``, and each runs, in its
framework's venv, against ``rootbound serve`` over Streamable HTTP on 127.0.0.1 (issue 26 #5)."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.helpers.serve_process import http_serve

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
SNIPPETS = {"fastmcp_roots.py": "fastmcp", "pydantic_ai_roots.py": "pydantic-ai"}  # snippet -> framework venv
DIRS = {"fastmcp_roots.py": ("project", "docs"), "pydantic_ai_roots.py": ("project",)}  # its arguments after the URL


def _body(snippet: Path) -> str:
    """The body of the snippet's ``main``, dedented: what the docs show."""
    lines = snippet.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("async def main")) + 1
    end = next(i for i in range(start, len(lines)) if lines[i].strip() and not lines[i].startswith(" "))
    return textwrap.dedent("".join(lines[start:end])).rstrip("\n") + "\n"


@pytest.mark.parametrize("snippet", sorted(SNIPPETS))
def test_docs_show_the_snippet(snippet: str) -> None:
    docs = (ROOT / "docs" / "client.md").read_text()
    assert f"```python\n{_body(HERE / 'snippets' / snippet)}```" in docs


@pytest.mark.parametrize("snippet", sorted(SNIPPETS))
def test_snippet_runs(tmp_path: Path, snippet: str) -> None:
    python = ROOT / ".deps" / "frameworks" / SNIPPETS[snippet] / "bin" / "python"
    assert python.exists(), f"{python} is missing: run scripts/setup-test-deps.sh (make test-deps)"
    project, docs = tmp_path / "project", tmp_path / "docs"
    project.mkdir()
    docs.mkdir()
    with http_serve([str(tmp_path)]) as url:
        done = subprocess.run(
            [str(python), str(HERE / "snippets" / snippet), url, *(str(tmp_path / name) for name in DIRS[snippet])],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
            check=False,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    if "fastmcp" in snippet:
        first, second = done.stdout.split("source: client\n")[:2]
        assert first.startswith(f"{project.as_uri()} dir\n") and second.startswith(f"{docs.as_uri()} dir\n")
    else:
        assert f'"uri":"{project.as_uri()}"' in done.stdout and '"source":"client"' in done.stdout
