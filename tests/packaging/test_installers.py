"""The built wheel installed the way the README says, into environments that have nothing else (issue 38): its
``pipx install`` line, as written (pipx 1.18 installs through uv when uv is beside it, as in .deps/installers: a pipx
without uv uses pip, whose resolution of rootbound's requirements the .deps/mcp1 and framework venvs exercise) and
its ``uvx --from`` line, each then
started as a host starts it, answering ``tools/list`` and a read inside the folder. The README's ``/home/me/projects``
becomes a temporary folder and its ``./dist/...whl`` the session's wheel; nothing else changes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rootbound import __version__
from tests.docs.host_blocks import Install, entries, section_blocks
from tests.docs.test_readme_runs import EXAMPLE_DIR
from tests.helpers.built_dist import INSTALLERS, Dist, installed
from tests.helpers.quiet_exit import Session, run_session
from tests.packaging.served import make_workspace, serve_and_read

# The interpreter this venv was made from: what a user's pipx and uvx would find, with none of this venv's packages.
BASE_PYTHON = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]


def readme_install(tool: str) -> list[str]:
    (entry,) = [e for block, _ in section_blocks() for e in entries(block) if isinstance(e, Install) and e.tool == tool]
    return list(entry.argv)


def as_here(argv: list[str], wheel: Path, workspace: Path) -> list[str]:
    """The README's line with its two stand-ins replaced: the wheel path and the folder."""
    swapped = [str(wheel) if Path(arg).name == wheel.name else arg for arg in argv]
    assert str(wheel) in swapped, f"the README's line names {wheel.name}"
    return [str(workspace) if arg == EXAMPLE_DIR else arg for arg in swapped]


# This machine's network settings (its CA bundle, proxies, pip's indexes) are the user's too: they pass through.
NETWORK = re.compile(r"SSL|CERT|CA_BUNDLE|PROXY|^PIP_", re.IGNORECASE)


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A user's environment: a PATH without this venv, a home of its own, no PYTHONPATH."""
    network = {name: value for name, value in os.environ.items() if NETWORK.search(name)}
    base = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8"}
    return {**network, **base, **extra}


def test_the_base_python_has_no_rootbound() -> None:
    probe = subprocess.run([BASE_PYTHON, "-I", "-c", "import rootbound"], capture_output=True, check=False)
    assert probe.returncode != 0


@pytest.fixture
def pipx_installed(tmp_path: Path, dist: Dist) -> tuple[Path, dict[str, str], Path]:
    """The README's pipx line run in a home of its own: the ``rootbound`` script it exposes, its environment and
    the folder to serve."""
    workspace = make_workspace(tmp_path)
    pipx = tmp_path / "pipx"
    env = clean_env(
        tmp_path,
        PIPX_HOME=str(pipx / "home"),
        PIPX_BIN_DIR=str(pipx / "bin"),
        PIPX_MAN_DIR=str(pipx / "man"),
        # the user's caches (pip's, uv's), warm after a first install
        XDG_CACHE_HOME=os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")),
    )
    argv = as_here(readme_install("pipx"), dist.wheel, workspace)
    command = [str(installed(INSTALLERS / "pipx")), *argv, "--python", str(BASE_PYTHON)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=280, env=env, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    script = pipx / "bin" / "rootbound"
    version = subprocess.run([script, "--version"], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert version.stdout.strip() == f"rootbound {__version__}"
    return script, env, workspace


async def test_pipx_install_of_the_wheel_serves(
    tmp_path: Path, pipx_installed: tuple[Path, dict[str, str], Path]
) -> None:
    script, env, workspace = pipx_installed
    served = await serve_and_read(str(script), ["serve", str(workspace)], workspace, env=env, cwd=tmp_path)
    assert "read_file" in served.tools and "a line inside the DIR" in served.inside and served.outside_refused
    assert served.server_version == __version__


async def test_uvx_from_the_wheel_serves(tmp_path: Path, dist: Dist) -> None:
    """uv resolves the dependencies from the index into its cache (the user's, warm after the first run)."""
    workspace = make_workspace(tmp_path)
    env = clean_env(
        tmp_path,
        UV_PYTHON=str(BASE_PYTHON),
        UV_PYTHON_DOWNLOADS="never",
        UV_TOOL_DIR=str(tmp_path / "uv-tools"),
        UV_CACHE_DIR=os.environ.get("UV_CACHE_DIR", str(Path.home() / ".cache" / "uv")),
    )
    argv = as_here(readme_install("uvx"), dist.wheel, workspace)
    assert argv[-2:] == ["serve", str(workspace)]
    served = await serve_and_read(str(installed(INSTALLERS / "uvx")), argv, workspace, env=env, cwd=tmp_path)
    assert "read_file" in served.tools and "a line inside the DIR" in served.inside and served.outside_refused
    assert served.server_version == __version__


# Issue 50 item 5: on every install form a session's stderr is exactly the start-up line (the host's server log),
# the scan helper took part and is gone when the server has exited, and stderr's end comes with the exit.


def quiet_workspace(tmp_path: Path) -> Path:
    workspace = make_workspace(tmp_path)
    for n in range(300):
        (workspace / f"f{n:03d}.txt").write_text("a needle\n" if n % 10 == 0 else "hay\n")
    return workspace


def assert_quiet(session: Session) -> None:
    assert session.exit_code == 0
    assert len(session.stderr) == 1 and session.stderr[0].startswith("rootbound serve: stdio;"), session.stderr
    assert session.grep_files == 30
    assert session.at_exit == []  # the helper ended (and was reaped) before the server did
    assert session.left == []  # nor is anything of the session left 1 s after the server's exit
    if len(os.sched_getaffinity(0)) > 1:
        assert session.helpers, "no scan helper ran"


def test_a_pipx_session_leaves_only_the_start_up_line(
    tmp_path: Path, pipx_installed: tuple[Path, dict[str, str], Path]
) -> None:
    script, env, _ = pipx_installed
    (tmp_path / "q").mkdir()
    quiet = quiet_workspace(tmp_path / "q")
    assert_quiet(run_session([str(script), "serve", str(quiet)], quiet, env=env, cwd=tmp_path))


def test_a_uvx_session_leaves_only_the_start_up_line(tmp_path: Path, dist: Dist) -> None:
    workspace = quiet_workspace(tmp_path)
    env = clean_env(
        tmp_path,
        UV_PYTHON=str(BASE_PYTHON),
        UV_PYTHON_DOWNLOADS="never",
        UV_TOOL_DIR=str(tmp_path / "uv-tools"),
        UV_CACHE_DIR=os.environ.get("UV_CACHE_DIR", str(Path.home() / ".cache" / "uv")),
    )
    argv = as_here(readme_install("uvx"), dist.wheel, workspace)
    command = [str(installed(INSTALLERS / "uvx")), *argv]
    # uv's first run resolves into its cache and may say so on stderr: that is uv's line, before the server's.
    subprocess.run([*command[:-2], "--version"], env=env, cwd=tmp_path, capture_output=True, timeout=280, check=True)
    assert_quiet(run_session(command, workspace, env=env, cwd=tmp_path))


def test_a_python_m_session_leaves_only_the_start_up_line(tmp_path: Path) -> None:
    workspace = quiet_workspace(tmp_path)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    assert_quiet(run_session([sys.executable, "-m", "rootbound", "serve", str(workspace)], workspace, env=env))
