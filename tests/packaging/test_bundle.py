"""The MCP Bundle (issue 38): built from the wheel by scripts/build_bundle.py (``make bundle``), accepted by
``mcpb validate``, unpacked by ``mcpb unpack`` into a fresh directory, and run from there the way a host runs it:
the manifest's ``mcp_config`` with ``${__dirname}`` and the user's settings substituted (MANIFEST.md's rules), by a
``python3`` that has nothing installed, answering ``tools/list`` and a read inside the chosen folder; and with each
CPython from 3.10 to 3.14 this machine has as the host's ``python3``: a grep answered with its scan helper taking
part, and nothing on stderr but the start-up line (the host's server log)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp import Client
from rootbound import __version__
from rootbound.search.chunk_scan import CHUNK_FILES
from tests.helpers.built_dist import INSTALLERS, MCPB, REPO, Dist, installed
from tests.helpers.scan_helper_probe import children, helper_socket, read_bytes, until_idle
from tests.packaging.served import make_workspace, serve_and_read

WRITE_TOOLS = {"edit_file", "write_file", "create_directory", "move_file", "delete_file"}

# The first test builds the session's sdist and wheel, then the bundle (mcpb pack compresses ~36 MB).
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]


def mcpb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(installed(MCPB)), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def unpacked(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle")
    tools = ["--mcpb", str(installed(MCPB)), "--uv", str(installed(INSTALLERS / "uv"))]
    built = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_bundle.py"), str(dist.wheel), str(out), *tools],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    bundle = Path(built.stdout.strip())
    assert bundle == out / f"rootbound-{__version__}.mcpb"
    target = tmp_path_factory.mktemp("installed") / "rootbound"
    done = mcpb("unpack", str(bundle), str(target))
    assert done.returncode == 0, done.stdout + done.stderr
    return target


def manifest_of(root: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((root / "manifest.json").read_text())
    return manifest


def test_mcpb_validate_accepts_the_manifest(unpacked: Path) -> None:
    done = mcpb("validate", str(unpacked / "manifest.json"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_mcpb_validate_refuses_a_broken_one(unpacked: Path, tmp_path: Path) -> None:
    """The judge can say no: the same manifest with a setting of a type the spec does not have."""
    broken = manifest_of(unpacked)
    broken["user_config"]["writable"]["type"] = "toggle"
    (tmp_path / "manifest.json").write_text(json.dumps(broken))
    assert mcpb("validate", str(tmp_path / "manifest.json")).returncode != 0


def test_the_manifest_says_what_the_bundle_needs(unpacked: Path) -> None:
    manifest = manifest_of(unpacked)
    assert manifest["version"] == __version__
    assert manifest["server"]["type"] == "python" and (unpacked / manifest["server"]["entry_point"]).is_file()
    assert manifest["compatibility"]["platforms"] == ["linux"]
    assert manifest["compatibility"]["runtimes"]["python"] == ">=3.10,<3.15"
    settings = manifest["user_config"]
    assert settings["directories"] == settings["directories"] | {"type": "directory", "multiple": True}
    assert settings["directories"]["required"] is True
    assert (settings["writable"]["type"], settings["writable"]["default"]) == ("boolean", False)
    lib = unpacked / "server" / "lib"
    assert (lib / "common" / "rootbound" / "__init__.py").is_file()  # pure Python: once for every version
    entry = load_entry()
    assert entry.carried(lib) == list(HOST_PYTHONS)
    for version in HOST_PYTHONS:
        paths = entry.lib_paths(lib, tuple(map(int, version.split("."))))
        numpy = [Path(p) / "numpy" for p in paths if (Path(p) / "numpy").is_dir()]
        assert len(numpy) == 1 and (numpy[0].parent / "numpy.libs").is_dir()  # a wheel's .libs beside its package
    assert entry.lib_paths(lib, (3, 9)) is None
    assert not list(lib.glob("*/bin"))


def host_command(
    manifest: dict[str, Any], dirname: Path, settings: dict[str, Any]
) -> tuple[str, list[str], dict[str, str]]:
    """``mcp_config`` as a host substitutes it: ``${__dirname}``; an argument that is one ``${user_config.KEY}``
    expands to one argument per value of a multiple setting; a boolean becomes ``true`` or ``false``."""

    def value(text: str) -> list[str]:
        text = text.replace("${__dirname}", str(dirname))
        if text.startswith("${user_config.") and text.endswith("}"):
            setting = settings[text[len("${user_config.") : -1]]
            if isinstance(setting, bool):
                return ["true" if setting else "false"]
            return [str(item) for item in setting] if isinstance(setting, list) else [str(setting)]
        assert "${" not in text, text
        return [text]

    config = manifest["server"]["mcp_config"]
    args = [item for arg in config["args"] for item in value(arg)]
    env = {name: "".join(value(text)) for name, text in config.get("env", {}).items()}
    return config["command"], args, env


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``python3`` with nothing installed (a fresh venv without pip): only the bundle can supply rootbound."""
    env = tmp_path_factory.mktemp("bare") / "venv"
    venv.create(env, with_pip=False)
    assert subprocess.run([env / "bin" / "python3", "-I", "-c", "import mcp"], capture_output=True).returncode != 0
    return env / "bin"


@pytest.mark.parametrize("writable", [False, True])
async def test_the_unpacked_bundle_serves_the_folder(
    unpacked: Path, bare_python: Path, tmp_path: Path, writable: bool
) -> None:
    workspace = make_workspace(tmp_path)
    manifest = manifest_of(unpacked)
    command, args, env = host_command(manifest, unpacked, {"directories": [workspace], "writable": writable})
    assert command == "python3"
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    environment = {"PATH": f"{bare_python}:/usr/bin:/bin", "HOME": str(tmp_path), **env}
    resolved = shutil.which(command, path=environment["PATH"])
    assert resolved == str(bare_python / "python3")
    served = await serve_and_read(resolved, args, workspace, env=environment, cwd=elsewhere)
    assert "a line inside the DIR" in served.inside and served.outside_refused
    assert served.server_version == __version__
    assert served.tools & WRITE_TOOLS == (WRITE_TOOLS if writable else set())
    if writable:
        assert {tool["name"] for tool in manifest["tools"]} == served.tools


HOST_PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
FILES = 5 * CHUNK_FILES + 160
"""A walk past the chunks a call searches itself first, so the helper is sent one."""


def host_python(version: str, base: Path) -> Path:
    """The bin folder of a bare venv (no pip, nothing installed) of this machine's ``python{version}``."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    on_path = shutil.which(f"python{version}")
    candidates: list[Path] = [
        *([Path(on_path)] if on_path else []),
        *sorted(pyenv.glob(f"{version}.*/bin/python{version}")),
    ]
    for candidate in candidates:
        probe = subprocess.run([candidate, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True)
        if probe.returncode == 0:  # (a pyenv shim of a version not selected fails here)
            venv_dir = base / "venv"
            subprocess.run(
                [probe.stdout.strip(), "-m", "venv", "--without-pip", str(venv_dir)], check=True, timeout=120
            )
            return venv_dir / "bin"
    pytest.skip(f"no python{version} on this machine to stand in for a host's python3")


@pytest.mark.parametrize("version", HOST_PYTHONS)
async def test_the_bundle_runs_on_the_host_s_python3(unpacked: Path, tmp_path: Path, version: str) -> None:
    bin_dir = host_python(version, tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for n in range(FILES):
        (workspace / f"f{n:04d}.txt").write_text(("a needle\n" if n % 100 == 0 else "hay\n") + "padding line\n" * 8)
    command, args, env = host_command(manifest_of(unpacked), unpacked, {"directories": [workspace], "writable": False})
    environment = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), **env}
    python3 = shutil.which(command, path=environment["PATH"])
    assert python3 == str(bin_dir / "python3")
    params = StdioServerParameters(command=python3, args=args, env=environment, cwd=tmp_path)
    with (tmp_path / "stderr.log").open("w+") as log:
        with anyio.fail_after(240):
            async with Client(stdio_client(params, errlog=log), mode="legacy") as client:
                assert "grep" in {tool.name for tool in (await client.list_tools()).tools}
                (server,) = [pid for pid in children(os.getpid()) if str(unpacked) in _cmdline(pid)]
                helpers = [(pid, helper_socket(pid)) for pid in children(server)]
                assert [sock for _, sock in helpers if sock is not None], "no scan helper running"
                (helper, sock) = next((pid, sock) for pid, sock in helpers if sock is not None)
                await until_idle(helper, sock)
                before = read_bytes(helper)
                result = await client.call_tool("grep", {"pattern": "needle"})
                assert not result.is_error and result.structured_content is not None
                assert result.structured_content["files_searched"] == FILES
                assert len(result.structured_content["files"]) == len(range(0, FILES, 100))
                assert read_bytes(helper) - before >= CHUNK_FILES * len("hay\n" + "padding line\n" * 8)  # took part
        log.seek(0)
        lines = log.read().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rootbound serve: stdio;"), lines


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def load_entry() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bundle_main", REPO / "packaging" / "mcpb" / "main.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("setting", "writes"),
    [
        ("true", True),
        ("false", False),
        ("True", False),
        ("1", False),
        ("", False),
        (None, False),
        ("${user_config.writable}", False),
    ],
)
def test_only_true_turns_writing_on(setting: str | None, writes: bool) -> None:
    """The setting fails closed: a host that substitutes nothing, or anything but ``true``, serves read-only."""
    argv = load_entry().serve_argv(["/a", "--writable"], setting)
    assert argv == ["serve", *(["--writable"] if writes else []), "--", "/a", "--writable"]
