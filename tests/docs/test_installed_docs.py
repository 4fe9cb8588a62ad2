"""Installed users get the docs (issue 27): ``rootbound docs`` prints the pages ``serve --help`` and the README point
to, from a checkout and from a built wheel in a bare virtual environment (no repository, no ``mcp`` installed)."""

from __future__ import annotations

import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from rootbound.workspace.cli import SERVE_HELP
from rootbound.workspace.docs_pages import docs_dir
from tests.helpers.built_dist import Dist

REPO = Path(__file__).resolve().parents[2]


def rootbound(python: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m rootbound ARGS``; with ``cwd`` (the wheel's venv) isolated (``-I``: no PYTHONPATH, no user
    site), so only what the venv has installed can answer."""
    isolated = ["-I"] if cwd is not None else []
    command = [python, *isolated, "-m", "rootbound", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd)


def test_serve_help_points_to_pages_that_exist() -> None:
    named = re.findall(r"rootbound docs ([\w-]+)", SERVE_HELP)
    assert set(named) >= {"writing", "deploy", "serve"}
    assert all((REPO / "docs" / f"{name}.md").is_file() for name in named)
    assert "docs/" not in SERVE_HELP  # a repository path is nowhere to be found once installed


def test_docs_from_a_checkout() -> None:
    assert docs_dir() == REPO / "docs"
    listing = rootbound(sys.executable, "docs")
    assert listing.returncode == 0
    assert {"writing", "serve", "README", "examples/readme_client.py"} <= set(listing.stdout.split())
    page = rootbound(sys.executable, "docs", "writing")
    assert (page.returncode, page.stdout) == (0, (REPO / "docs" / "writing.md").read_text())
    missing = rootbound(sys.executable, "docs", "../../etc/passwd")
    assert missing.returncode == 2 and "no such page" in missing.stderr and "passwd" not in missing.stderr


@pytest.mark.timeout(300)  # the first user of the session's sdist and wheel builds them
def test_docs_from_a_built_wheel(tmp_path: Path, dist: Dist) -> None:
    """The wheel built from this checkout (the session's, from its sdist) carries the pages; installed alone into a
    bare venv, ``rootbound docs`` and ``rootbound serve --help`` work from anywhere and point only to pages it has."""
    wheel = dist.wheel
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    (site,) = env.glob("lib/python3*/site-packages")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    python = str(env / "bin" / "python")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    listing = rootbound(python, "docs", cwd=elsewhere)
    assert listing.returncode == 0, listing.stderr
    pages = set(listing.stdout.split())
    assert {"writing", "deploy", "serve", "security", "README", "examples/readme_client.py"} <= pages
    where = rootbound(python, "docs", "--path", cwd=elsewhere).stdout.strip()
    assert Path(where) == site / "rootbound" / "_docs"
    page = rootbound(python, "docs", "writing", cwd=elsewhere)
    assert page.stdout == (REPO / "docs" / "writing.md").read_text()
    helped = rootbound(python, "serve", "--help", cwd=elsewhere)
    assert helped.returncode == 0, helped.stderr
    named = re.findall(r"rootbound docs ([\w-]+)", helped.stdout)
    assert named and set(named) <= pages
