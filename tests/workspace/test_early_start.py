"""A stdio server restricts itself and starts its index before it loads the SDK (issue 51, ``early_start.py``): the
take up of a saved index checks every file while the SDK's ~0.5-0.8 s of imports run, not after the first grep.

The launcher (in this file) watches for the first import of ``mcp`` and says, at that moment, whether the process
can still open a file outside its DIRs and which search indexes exist and were started; it then lets ``rootbound
serve`` go on. A real SDK client checks that a server so started serves, grep with RE2 included (RE2's native
library is loaded after the restriction: the loader's cache and library directories stay readable,
``Sandbox.loads_later``)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from rootbound.confine import landlock
from tests.helpers.serve_process import serve, text_of

needs_landlock = pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel offers no Landlock")

LAUNCHER = """
import json, os, sys
outside = sys.argv.pop(1)


class FirstSdkImport:
    def find_spec(self, name, path=None, target=None):
        if name == "mcp":
            sys.meta_path.remove(self)
            try:
                os.close(os.open(outside, os.O_RDONLY))
                restricted = False
            except PermissionError:
                restricted = True
            import gc
            from rootbound.search.index.tree_index import TreeIndex
            started = sorted(o.state for o in gc.get_objects() if isinstance(o, TreeIndex))
            sys.stderr.write("SDK-IMPORT " + json.dumps({"restricted": restricted, "indexes": started}) + "\\n")
            sys.stderr.flush()
        return None


sys.meta_path.insert(0, FirstSdkImport())
from rootbound.cli import main
sys.argv[0] = "rootbound"
raise SystemExit(main())
"""


@pytest.fixture
def launcher(tmp_path: Path) -> Path:
    path = tmp_path / "launch.py"
    path.write_text(LAUNCHER)
    return path


def _at_sdk_import(launcher: Path, outside: Path, *args: str) -> tuple[bool, list[str]]:
    """When the SDK's first module was imported: whether the process was restricted, and the states of the search
    indexes made by then (``new``: not started). The server is stopped after it."""
    env = {**os.environ, "ROOTBOUND_CACHE_HOME": str(launcher.parent / "cache")}
    process = subprocess.Popen(
        [sys.executable, str(launcher), str(outside), "serve", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stderr is not None
    seen: list[str] = []
    try:
        for line in process.stderr:  # ends when the server exits (a start failure says why before it)
            seen.append(line)
            if line.startswith("SDK-IMPORT "):
                said = json.loads(line.removeprefix("SDK-IMPORT "))
                return bool(said["restricted"]), [str(state) for state in said["indexes"]]
    finally:
        process.kill()
        process.wait(timeout=60)
    raise AssertionError("the SDK was never imported: " + "".join(seen)[-2000:])


@needs_landlock
def test_stdio_is_restricted_and_indexing_before_the_sdk_loads(tmp_path: Path, launcher: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.py").write_text("def getaddrinfo(): pass\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("not served\n")
    restricted, indexes = _at_sdk_import(launcher, outside, "--index-at-start", str(tree))
    assert restricted
    assert indexes and "new" not in indexes  # its build (or a saved index's take up) started before the SDK loads


def test_http_still_loads_the_sdk_before_restricting(tmp_path: Path, launcher: Path) -> None:
    """HTTP binds its port and imports its stack first (docs/security.md, "When"): nothing runs before that."""
    tree = tmp_path / "tree"
    tree.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("not served\n")
    restricted, indexes = _at_sdk_import(launcher, outside, "--http", "127.0.0.1:0", "--index-at-start", str(tree))
    assert not restricted
    assert indexes == []  # not even made yet: the server is built (with its indexes) after the SDK is imported


@needs_landlock
def test_a_server_started_early_serves_regex_grep_and_refuses_outside(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.py").write_text("def getaddrinfo(host): pass\n")
    env = {"ROOTBOUND_CACHE_HOME": str(tmp_path / "cache")}

    async def main() -> None:
        async with serve("stdio", [str(tree)], mode="legacy", provider=None, env=env) as client:
            error, text = await text_of(client, "grep", pattern=r"def get[a-z]+info\(", regex=True)
            assert not error, text
            assert "a.py:1:" in text
            error, text = await text_of(client, "read_file", path=str(tmp_path / "cache"))
            assert error

    anyio.run(main)


@needs_landlock
def test_a_module_that_cannot_load_through_the_sandbox_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """Without the loader's directories (as on a system whose libraries live elsewhere) a native module fails to
    load once the process is restricted: ``serve`` says which module and how to serve anyway, exit 2."""
    tree = tmp_path / "tree"
    tree.mkdir()
    script = (
        "import sys\nimport rootbound.workspace.sandbox as sandbox\n"
        "sandbox._loader_paths = lambda: []\n"
        "from rootbound.cli import main\n"
        "sys.argv = ['rootbound', 'serve', sys.argv[1]]\nraise SystemExit(main())\n"
    )
    env = {**os.environ, "ROOTBOUND_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tree)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rootbound serve: cannot load the module "), done.stderr
    assert lines[0].endswith("once sandboxed (ImportError); --no-sandbox serves")


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split():
                found += [int(child), *_descendants(int(child))]
    return found


def test_the_scan_helper_loads_none_of_the_sdk(tmp_path: Path) -> None:
    """The helper sandboxes itself with its own modules only: before, it imported the SDK's stdio server first
    (~0.4 s of CPU beside the server's own start-up, for nothing it uses)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    env = {**os.environ, "ROOTBOUND_CACHE_HOME": str(tmp_path / "cache")}
    server = subprocess.Popen(
        [sys.executable, "-m", "rootbound", "serve", str(tree)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert server.stderr is not None
        server.stderr.readline()  # the start-up line: the helper was spawned and the server is built
        helpers: list[int] = []
        for _ in range(600):
            helpers = [
                pid
                for pid in _descendants(server.pid)
                if b"scan_process" in Path(f"/proc/{pid}/cmdline").read_bytes()
                and "_re2" in Path(f"/proc/{pid}/maps").read_text()  # its own modules imported: sandboxed by now
            ]
            if helpers:
                break
            time.sleep(0.05)
        assert helpers, "no scan helper found"
        maps = Path(f"/proc/{helpers[0]}/maps").read_text()
        assert "pydantic_core" not in maps
    finally:
        server.kill()
        server.wait(timeout=60)
