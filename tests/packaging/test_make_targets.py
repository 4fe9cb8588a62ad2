"""``make wheel`` and ``make bundle`` install only what they use (issue 50 item 8): the wheel needed the whole dev
toolchain (72 s on a fresh clone), the bundle added pipx, build and twine besides. ``make -n -B`` lists every
command a target would run from nothing, without running any."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _plan(target: str) -> list[str]:
    make = shutil.which("make")
    if make is None:
        pytest.fail("make is not installed: the Makefile's targets cannot be checked")
    done = subprocess.run([make, "-n", "-B", target], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_make_wheel_installs_nothing() -> None:
    plan = _plan("wheel")
    assert [line for line in plan if "pip install" in line or "[dev]" in line] == [], plan
    assert any("pip wheel --no-deps" in line for line in plan), plan


def test_make_bundle_installs_the_mcpb_cli_and_uv_only() -> None:
    plan = _plan("bundle")
    assert [line for line in plan if "pip install" in line or "[dev]" in line] == [], plan
    assert "bash scripts/setup-packaging-deps.sh --bundle" in plan, plan
    assert any("build_bundle.py" in line and "--uv .deps/bundle-tools/bin/uv" in line for line in plan), plan
    pins = [line for line in (REPO / "tests/packaging/bundle-tools.txt").read_text().splitlines() if "==" in line]
    installers = (REPO / "tests/packaging/installers.txt").read_text().splitlines()
    assert len(pins) == 1 and pins[0].startswith("uv==") and pins[0] in installers  # the same uv the tests use
    script = (REPO / "scripts/setup-packaging-deps.sh").read_text()
    bundle_part = script[script.index('if [[ "${1:-}" == "--bundle" ]]') : script.index("exit 0")]
    assert "installers" not in bundle_part and "bundle-tools.txt" in bundle_part
