"""Every block of the README's "Use it from a host" section is read the way its host reads it, passes a folder,
and starts ``rootbound serve`` as rootbound's own argument parser understands it; each distinct command line that
can run here runs (issue 38). ``tests/docs/test_readme_runs.py`` runs the section's unmarked blocks (the
``mcpServers`` stdio entry, the HTTP server and its entry); this module takes the ones whose marker names it.
``uvx`` and ``pipx`` on the built wheel run in ``tests/packaging/test_installers.py``."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from rootbound import __version__
from rootbound.cli import build_parser
from tests.docs.host_blocks import HERE, Http, Install, Stdio, entries, rootbound_argv, section_blocks, uvx_command
from tests.docs.test_readme_runs import EXAMPLE_DIR, _kind
from tests.packaging.served import make_workspace, serve_and_read

REPO = Path(__file__).resolve().parents[2]
WHEEL = f"rootbound-{__version__}-py3-none-any.whl"
URL = "http://127.0.0.1:8765/mcp"

pytestmark = pytest.mark.anyio

BLOCKS = section_blocks()
MINE = [block for block, marker in BLOCKS if HERE in marker]
ALL_ENTRIES = [entry for block, _ in BLOCKS for entry in entries(block)]


def test_every_block_in_the_section_is_checked() -> None:
    """Each block is either one test_readme_runs runs (unmarked) or marked as checked here."""
    unchecked = [
        block.line for block, marker in BLOCKS if HERE not in marker and (block.skipped or _kind(block) == "unknown")
    ]
    assert unchecked == []
    assert len(MINE) >= 7


def test_each_host_has_its_form() -> None:
    hosts = {entry.host for entry in ALL_ENTRIES if isinstance(entry, Stdio | Http)}
    assert hosts >= {"mcpServers", "vscode", "codex", "claude-code", "shell"}
    section = REPO.joinpath("README.md").read_text().split("## Use it from a host", 1)[1].split("\n## ", 1)[0]
    for name in ("Claude Desktop", "Cursor", "Gemini CLI", "VS Code", "Claude Code", "Codex CLI", "Any other stdio"):
        assert f"**{name}" in section, name


def test_vscode_uses_servers_with_a_type() -> None:
    """The reader (tests/docs/host_blocks.py) takes a ``servers`` entry only with its ``type``; the section's one
    ``servers`` block is VS Code's, after its heading."""
    vscode = [entry for entry in ALL_ENTRIES if isinstance(entry, Stdio) and entry.host == "vscode"]
    assert len(vscode) == 1
    (block,) = [block for block, _ in BLOCKS if '"servers"' in block.text]
    assert '"type": "stdio"' in block.text
    readme = REPO.joinpath("README.md").read_text().splitlines()
    heading = next(line for line in reversed(readme[: block.line - 1]) if line.startswith("**"))
    assert heading.startswith("**VS Code**")


@pytest.mark.parametrize("entry", [e for e in ALL_ENTRIES if isinstance(e, Stdio)], ids=lambda e: e.host)
def test_every_command_is_rootbound_serve_with_the_folder(entry: Stdio) -> None:
    """The HTTP server line too (``--http``, at the address every HTTP form names; test_readme_runs starts it)."""
    parsed, extra = build_parser().parse_known_args(rootbound_argv(entry))
    assert extra == []
    http = ("127.0.0.1", 8765) if "--http" in entry.args else None
    assert (parsed.command, parsed.dirs, parsed.http) == ("serve", [Path(EXAMPLE_DIR)], http)


def test_every_http_form_reaches_the_server_the_section_starts() -> None:
    urls = {entry.url for entry in ALL_ENTRIES if isinstance(entry, Http)}
    assert urls == {URL}
    assert {entry.host for entry in ALL_ENTRIES if isinstance(entry, Http)} >= {"mcpServers", "claude-code"}


def test_the_install_lines_name_this_version() -> None:
    installs = [entry for entry in ALL_ENTRIES if isinstance(entry, Install)]
    (pipx,) = [entry for entry in installs if entry.tool == "pipx"]
    assert pipx.argv[0] == "install" and Path(pipx.argv[1]).name == WHEEL
    uvx = [entry for entry in ALL_ENTRIES if isinstance(entry, Stdio) and Path(entry.command).name == "uvx"]
    uvx += [Stdio("shell", "uvx", entry.argv) for entry in installs if entry.tool == "uvx"]
    assert len(uvx) == 2
    for entry in uvx:
        spec, argv = uvx_command(entry.args)
        assert spec is not None and Path(spec).name == WHEEL  # works today; the index form is prose until published
        assert argv[0] == "serve"
    section = REPO.joinpath("README.md").read_text()
    assert f"dist/rootbound-{__version__}.mcpb" in section


def _launcher(entry: Stdio) -> list[str] | None:
    """How this test starts an entry's command: the venv's ``rootbound`` script or this interpreter; None for
    ``uvx`` (tests/packaging/test_installers.py runs it on the built wheel)."""
    name = Path(entry.command).name
    if name == "rootbound":
        return [str(Path(sys.executable).with_name("rootbound"))]
    if re.fullmatch(r"python(3(\.\d+)?)?", name):
        return [sys.executable, "-m", "rootbound"]
    return None


RUNNABLE = sorted(
    {
        (tuple(launcher), tuple(rootbound_argv(entry)))
        for entry in ALL_ENTRIES
        if isinstance(entry, Stdio) and "--http" not in entry.args and (launcher := _launcher(entry)) is not None
    }
)


def test_the_distinct_command_lines_are_few_and_cover_both_launchers() -> None:
    """Identical command lines run once: the script form and the ``python -m`` form, each with one folder."""
    assert {launcher for launcher, _ in RUNNABLE} == {
        (str(Path(sys.executable).with_name("rootbound")),),
        (sys.executable, "-m", "rootbound"),
    }
    assert {argv for _, argv in RUNNABLE} == {("serve", EXAMPLE_DIR)}


@pytest.mark.parametrize(
    ("launcher", "argv"),
    [pytest.param(*run, id=" ".join(["python -m" if len(run[0]) > 1 else "script", *run[1]])) for run in RUNNABLE],
)
async def test_the_command_lines_run(tmp_path: Path, launcher: tuple[str, ...], argv: tuple[str, ...]) -> None:
    workspace = make_workspace(tmp_path)
    args = [str(workspace) if arg == EXAMPLE_DIR else arg for arg in argv]
    assert shutil.which(launcher[0]) or Path(launcher[0]).exists()
    served = await serve_and_read(launcher[0], [*launcher[1:], *args], workspace)
    assert "read_file" in served.tools and "write_file" not in served.tools
    assert "a line inside the DIR" in served.inside
    assert served.outside_refused
    assert served.server_version == __version__
