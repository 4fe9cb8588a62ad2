"""The sdist and wheel built once per session by ``python -m build`` (the wheel from the sdist, as PyPI users get
it), for every test that needs an installable rootbound (tests/packaging, tests/docs/test_installed_docs.py), and
the tools scripts/setup-packaging-deps.sh installs into .deps. Loaded as a plugin by tests/conftest.py."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INSTALLERS = REPO / ".deps" / "installers" / "bin"
MCPB = REPO / ".deps" / "mcpb" / "node_modules" / ".bin" / "mcpb"


def installed(tool: Path) -> Path:
    """A tool from .deps, or a failure that says how to install it (a missing judge is not a pass)."""
    assert tool.exists(), f"{tool} is missing: run bash scripts/setup-packaging-deps.sh (make test does)"
    return tool


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [str(installed(INSTALLERS / "python")), "-m", "build", "--outdir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = out.glob("rootbound-*.whl")
    (sdist,) = out.glob("rootbound-*.tar.gz")
    return Dist(wheel, sdist)
