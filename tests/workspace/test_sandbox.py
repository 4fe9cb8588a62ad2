"""The Landlock sandbox of ``rootbound serve``: the kernel's wall under the Boundary.

The proof: ``serve`` runs with its Boundary disabled (a launcher owned by this file swaps in a Boundary whose roots
are every top-level directory, and reports the errno of any failing file operation; nothing in the package can
turn the Boundary off) and reads, writes, listings and TCP connects outside the DIRs still fail with EACCES from
the kernel, while inside works. The same launcher with ``--no-sandbox`` shows the Boundary really is disabled.
Below that, the sandbox itself in a throwaway process at every ABI this kernel offers.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from rootbound import Boundary
from rootbound.confine import landlock
from rootbound.workspace.sandbox import Sandbox
from tests.helpers.serve_process import serve, serve_cli, text_of

KERNEL_ABI = landlock.abi_version()
needs_landlock = pytest.mark.skipif(KERNEL_ABI == 0, reason="this kernel offers no Landlock (tested where it does)")

# Test-only, and only in this file: a serve whose Boundary lets every path through and whose tools say which errno
# the kernel gave. "tcp:HOST:PORT" and "bind:PORT" as a read_file path probe the network from inside the server.
LAUNCHER = r"""
import errno, socket, sys
from pathlib import Path
from rootbound import Boundary
from rootbound.core.errors import RootsError
from rootbound.workspace import server
from rootbound.workspace.tools import registry as tools

TOPS = [p for p in Path("/").iterdir() if p.is_dir() and not p.is_symlink()]  # listed before any sandbox

def everything(self, roots, **_):
    return Boundary(TOPS, cross_mounts=True)

server.HeldBoundaries.for_roots = everything

def kernel(error):
    return tools.ToolError("kernel: " + errno.errorcode.get(error.errno, str(error.errno)))

def probe(path):
    kind, _, where = path.partition(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if kind == "tcp":
            host, _, port = where.rpartition(":")
            sock.settimeout(5)
            sock.connect((host, int(port)))
            return tools.ToolOutput("connected")
        sock.bind(("127.0.0.1", int(where)))
        return tools.ToolOutput("bound")
    except OSError as error:
        raise kernel(error)
    finally:
        sock.close()

def reveal(function):
    def run(fs, args, limits, context):
        path = str(args.get("path", ""))
        if path.startswith(("tcp:", "bind:")):
            return probe(path)
        try:
            return function(fs, args, limits, context)
        except RootsError as error:  # some subclass OSError: look for the kernel's own error underneath
            cause = error.__cause__ or error.__context__
            if isinstance(cause, OSError) and not isinstance(cause, RootsError):
                raise kernel(cause)
            raise
        except OSError as error:
            raise kernel(error)
    return run

for name, function in list(tools._IMPLEMENTATIONS.items()):
    tools._IMPLEMENTATIONS[name] = reveal(function)

from rootbound.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = tmp_path.resolve()
    (base / "inside" / "sub").mkdir(parents=True)
    (base / "inside" / "notes.txt").write_text("inside\n")
    (base / "outside").mkdir()
    (base / "outside" / "secret.txt").write_text("SECRET\n")
    return base


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts: a connect that fails was refused by the sandbox, not by nobody."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@needs_landlock
@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "no-sandbox"])
async def test_kernel_denies_outside_with_the_boundary_disabled(
    tree: Path, listener: int, transport: str, sandbox: bool
) -> None:
    inside, outside = tree / "inside", tree / "outside"
    args = [str(inside), "--writable", *([] if sandbox else ["--no-sandbox"])]
    seen: dict[str, tuple[bool, str]] = {}
    with anyio.fail_after(60):
        async with serve(transport, args, mode="legacy", provider=None, launcher=("-c", LAUNCHER)) as client:

            async def call(label: str, tool: str, **arguments: object) -> None:
                seen[label] = await text_of(client, tool, **arguments)

            await call("read inside", "read_file", path=str(inside / "notes.txt"))
            await call("list inside", "list_directory", path=str(inside))
            await call("write inside", "write_file", path=str(inside / "sub" / "new.txt"), content="x")
            await call("read outside", "read_file", path=str(outside / "secret.txt"))
            await call("list outside", "list_directory", path=str(outside))
            await call("list /etc", "list_directory", path="/etc")
            await call("write outside", "write_file", path=str(outside / "planted.txt"), content="x")
            await call("overwrite outside", "write_file", path=str(outside / "secret.txt"), content="x")
            await call("connect 127.0.0.1", "read_file", path=f"tcp:127.0.0.1:{listener}")
            await call("bind another port", "read_file", path=f"bind:{_free_port()}")
            await call("stat outside", "stat", path=str(outside / "secret.txt"))
            await call("list_roots", "list_roots")
    print(f"\n[{transport}, {'sandbox' if sandbox else 'no sandbox'}, Boundary disabled]")
    for label, (error, text) in seen.items():
        print(f"  {label:20} {'error' if error else 'ok':5} {text.splitlines()[0] if text else ''}")

    assert seen["read inside"] == (False, "inside\n")
    assert seen["list inside"] == (False, "notes.txt\nsub/")
    assert not seen["write inside"][0]
    assert (inside / "sub" / "new.txt").read_text() == "x"
    denied = (True, "kernel: EACCES")
    outside_ops = ("read outside", "list outside", "list /etc", "write outside", "overwrite outside")
    if sandbox:
        for label in (*outside_ops, "connect 127.0.0.1", "bind another port"):
            assert seen[label] == denied, label
        assert not (outside / "planted.txt").exists()
        assert (outside / "secret.txt").read_text() == "SECRET\n"
        assert "sandbox: landlock ABI" in seen["list_roots"][1]
    else:  # the control: the same launcher without the sandbox really does reach outside
        assert seen["read outside"] == (False, "SECRET\n")
        assert seen["list outside"][0] is False
        assert seen["list /etc"][0] is False
        assert (outside / "planted.txt").read_text() == "x"
        assert seen["connect 127.0.0.1"] == (False, "connected")
        assert "sandbox: off (--no-sandbox)" in seen["list_roots"][1]
    # Landlock does not cover metadata: stat outside succeeds either way (docs/security.md, "Defence in depth").
    assert seen["stat outside"][0] is False


# A throwaway process applies a Sandbox (at a chosen ABI) and tries everything; it prints what the kernel said.
PROBE = r"""
import errno, json, os, socket, sys
from pathlib import Path
from rootbound.workspace.sandbox import Sandbox

config = json.loads(sys.argv[1])
inside, outside = Path(config["inside"]), Path(config["outside"])
sandbox = Sandbox([inside], writable=config["writable"], listens=True)
if config["abi"]:
    sandbox.abi = config["abi"]
status = sandbox.apply(config["port"])

def attempt(action):
    try:
        action()
        return "ok"
    except OSError as error:
        return errno.errorcode[error.errno]

def connect():
    with socket.create_connection(("127.0.0.1", config["listener"]), timeout=5):
        pass

def bind(port):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))

def lazy_import():
    try:
        import xml.dom.minidom  # not imported before the sandbox: the standard library stays readable
    except ImportError as error:
        raise PermissionError(errno.EACCES, str(error))

results = {
    "status": status,
    "read inside": attempt(lambda: (inside / "notes.txt").read_text()),
    "list inside": attempt(lambda: os.listdir(inside)),
    "write inside": attempt(lambda: (inside / "new.txt").write_text("x")),
    "mkdir inside": attempt(lambda: (inside / "made").mkdir()),
    "symlink inside": attempt(lambda: (inside / "link").symlink_to("/etc/passwd")),
    "read outside": attempt(lambda: (outside / "secret.txt").read_text()),
    "list outside": attempt(lambda: os.listdir(outside)),
    "write outside": attempt(lambda: (outside / "new.txt").write_text("x")),
    "read /etc/passwd": attempt(lambda: Path("/etc/passwd").read_text()),
    "list working directory": attempt(lambda: os.listdir(os.getcwd())),
    "lazy import": attempt(lazy_import),
    "/dev/null": attempt(lambda: open(os.devnull, "w").close()),
    "connect": attempt(connect),
    "bind serving port": attempt(lambda: bind(config["port"])),
    "bind other port": attempt(lambda: bind(config["other"])),
}
print(json.dumps(results))
"""


def _probe(tree: Path, *, writable: bool, abi: int = 0, listener: int) -> dict[str, str]:
    config = {
        "inside": str(tree / "inside"),
        "outside": str(tree / "outside"),
        "writable": writable,
        "abi": abi,
        "listener": listener,
        "port": _free_port(),
        "other": _free_port(),
    }
    # Run as ``python -m`` from the outside directory: sys.path[0] is then that (absolute) working directory,
    # which must not become readable.
    (tree / "outside" / "landlock_probe.py").write_text(PROBE)
    done = subprocess.run(
        [sys.executable, "-m", "landlock_probe", json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tree / "outside",
    )
    assert done.returncode == 0, done.stderr
    results: dict[str, str] = json.loads(done.stdout)
    return results


@needs_landlock
@pytest.mark.parametrize("writable", [False, True], ids=["read-only", "writable"])
def test_sandbox_at_the_kernels_abi(tree: Path, listener: int, writable: bool) -> None:
    seen = _probe(tree, writable=writable, listener=listener)
    assert seen.pop("status").startswith(f"landlock ABI {KERNEL_ABI}, files: the DIRs")
    expected = {
        "read inside": "ok",
        "list inside": "ok",
        "write inside": "ok" if writable else "EACCES",
        "mkdir inside": "ok" if writable else "EACCES",
        "symlink inside": "ok" if writable else "EACCES",  # with --writable: moving a symlink makes one
        "read outside": "EACCES",
        "list outside": "EACCES",
        "write outside": "EACCES",
        "read /etc/passwd": "EACCES",
        "list working directory": "EACCES",
        "lazy import": "ok",
        "/dev/null": "ok",
        "connect": "EACCES" if KERNEL_ABI >= 4 else "ok",
        "bind serving port": "ok",
        "bind other port": "EACCES" if KERNEL_ABI >= 4 else "ok",
    }
    assert seen == expected


@needs_landlock
@pytest.mark.parametrize("abi", range(1, 7))  # the kernel's own ABI: the test above
def test_older_abis_fall_back_cleanly(tree: Path, listener: int, abi: int) -> None:
    """A ruleset built for an older kernel's ABI is accepted and enforces what that ABI knows, nothing less."""
    if abi > KERNEL_ABI:
        pytest.skip(f"this kernel offers ABI {KERNEL_ABI}")
    seen = _probe(tree, writable=True, abi=abi, listener=listener)
    assert seen["status"].startswith(f"landlock ABI {abi}, ")
    assert (seen["read outside"], seen["write outside"], seen["read inside"], seen["write inside"]) == (
        "EACCES",
        "EACCES",
        "ok",
        "ok",
    )
    assert seen["connect"] == ("EACCES" if abi >= 4 else "ok")
    assert ("TCP: not restricted" in seen["status"]) == (abi < 4)


def test_status_without_landlock_and_when_opted_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(landlock, "abi_version", lambda: 0)
    sandbox = Sandbox([Path("/tmp")], writable=False)
    assert not sandbox.active
    assert sandbox.describe().startswith("unavailable (no Landlock in this kernel)")
    assert sandbox.apply(1234) == sandbox.describe()  # nothing to restrict: serving goes on, and says so
    opted_out = Sandbox([Path("/tmp")], writable=False, enabled=False)
    assert (opted_out.active, opted_out.describe()) == (False, "off (--no-sandbox)")


@needs_landlock
def test_refuses_to_sandbox_a_process_already_running_threads(tree: Path) -> None:
    script = (
        "import threading, sys\nfrom pathlib import Path\n"
        "from rootbound.workspace.sandbox import Sandbox, SandboxError\n"
        "stop = threading.Event(); threading.Thread(target=stop.wait).start()\n"
        "try:\n    Sandbox([Path(sys.argv[1])], writable=False).apply()\n"
        "except SandboxError as error:\n    print('refused:', error)\n"
        "stop.set()\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tree)], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("refused: 2 threads are running"), done.stdout + done.stderr


def test_require_sandbox_refuses_to_start_without_it(tree: Path) -> None:
    done = serve_cli(str(tree / "inside"), "--no-sandbox", "--require-sandbox")
    assert done.returncode == 2
    assert done.stderr == "rootbound serve: --require-sandbox: sandbox off (--no-sandbox)\n"


@needs_landlock
def test_stdio_startup_line_reports_the_sandbox(tree: Path, tmp_path: Path) -> None:
    cache = {"ROOTBOUND_CACHE_HOME": str(tmp_path / "cache")}
    done = serve_cli(str(tree / "inside"), env=cache)  # stdin at EOF: the server starts, reports, and ends
    first = done.stderr.splitlines()[0]
    assert first.startswith("rootbound serve: stdio; roots: "), first
    assert first.endswith(
        f"; sandbox: landlock ABI {KERNEL_ABI}, files: the DIRs read-only, the search index's cache folder "
        "read-write, TCP: no bind, no connect"
    ), first
    done = serve_cli(str(tree / "inside"), "--no-index", env=cache)
    assert done.stderr.splitlines()[0].endswith(
        f"; sandbox: landlock ABI {KERNEL_ABI}, files: the DIRs read-only, TCP: no bind, no connect"
    )
    (tmp_path / "not-a-folder").write_text("")  # no cache folder can be made below a file: postings in memory
    done = serve_cli(str(tree / "inside"), env={"ROOTBOUND_CACHE_HOME": str(tmp_path / "not-a-folder")})
    first = done.stderr.splitlines()[0]
    assert first.endswith(
        f"; search index postings in memory ({tmp_path / 'not-a-folder' / 'rootbound' / 'index'} is not writable); "
        f"sandbox: landlock ABI {KERNEL_ABI}, files: the DIRs read-only, TCP: no bind, no connect"
    ), first


@needs_landlock
def test_the_index_cache_folder_is_the_one_place_outside_the_dirs_it_may_write(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    mine = cache / "mine"
    mine.mkdir(parents=True)
    script = (
        "import os, sys\nfrom pathlib import Path\n"
        "from rootbound.workspace.sandbox import Sandbox\n"
        "Sandbox([Path(sys.argv[1])], writable=False, cache=Path(sys.argv[2])).apply()\n"
        "for where in (sys.argv[2] + '/1', sys.argv[3] + '/other', sys.argv[1] + '/made'):\n"
        "    try:\n        os.mkdir(where)\n        open(where + '/seg.npy', 'wb').write(b'x')\n"
        "        os.unlink(where + '/seg.npy')\n        os.rmdir(where)\n        print('written', end=' ')\n"
        "    except PermissionError:\n        print('refused', end=' ')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tree / "inside"), str(mine), str(cache)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.split() == ["written", "refused", "refused"], done.stdout + done.stderr


@needs_landlock
def test_roots_are_still_known_to_be_local_under_the_sandbox(tree: Path) -> None:
    """The sandbox refuses to open /proc/self/mountinfo; ``keep_mountinfo_open`` (called by the workspace server
    before the CLI applies the sandbox) keeps the table readable, so quick calls still run on the event loop."""
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from rootbound import Boundary\nfrom rootbound.confine.local_disks import keep_mountinfo_open\n"
        "from rootbound.workspace.sandbox import Sandbox\n"
        "if sys.argv[2] == 'keep':\n    keep_mountinfo_open()\n"
        "Sandbox([Path(sys.argv[1])], writable=False).apply()\n"
        "try:\n    open('/proc/self/mountinfo').close()\n    print('readable', end=' ')\n"
        "except PermissionError:\n    print('refused', end=' ')\n"
        "with Boundary([sys.argv[1]]) as boundary:\n    print(boundary.on_local_disks)\n"
    )
    runs = {
        how: subprocess.run(
            [sys.executable, "-c", script, str(tree), how], capture_output=True, text=True, timeout=60
        ).stdout.strip()
        for how in ("keep", "none")
    }
    local = "True" if Boundary([tree]).on_local_disks else "False"
    assert runs == {"keep": f"refused {local}", "none": "refused False"}


@needs_landlock
@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_moving_a_symlink_that_leads_outside_works_under_the_sandbox(tree: Path, mode: str) -> None:
    """Issue 24 item 5: ``move_file`` moves a link as itself, a name; Landlock counts that as making a symlink at
    the new name, so ``--writable`` grants it (beneath the DIRs only). The link is never followed."""
    inside = tree / "inside"
    (inside / "link").symlink_to(tree / "outside" / "secret.txt")
    with anyio.fail_after(60):
        async with serve("stdio", [str(inside), "--writable"], mode=mode, provider=None) as client:
            error, text = await text_of(client, "move_file", source="link", destination="sub/moved-link")
            _, roots = await text_of(client, "list_roots")
    assert not error, text
    assert "sandbox: landlock ABI" in roots
    assert os.readlink(inside / "sub" / "moved-link") == str(tree / "outside" / "secret.txt")
    assert not (inside / "link").is_symlink()
    assert (tree / "outside" / "secret.txt").read_text() == "SECRET\n"


def test_runtime_paths_skip_the_script_folder_only_for_a_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What stays readable once sandboxed: a script's own folder and the working directory are not (a launcher's
    folder, a home directory), but under ``python -m rootbound`` the main module is rootbound's ``__main__``, whose
    folder must stay readable when no path entry covers it (an editable install by import hook)."""
    import types

    import rootbound
    from rootbound.workspace.sandbox import _runtime_paths

    package = Path(rootbound.__file__).resolve().parent
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.chdir(home)
    covering = [entry for entry in sys.path if entry and package.is_relative_to(Path(entry).resolve())]
    monkeypatch.setattr(sys, "path", [str(home)] + [entry for entry in sys.path if entry not in covering])

    as_module = types.ModuleType("__main__")
    as_module.__file__ = str(package / "__main__.py")
    as_module.__spec__ = importlib.util.spec_from_file_location("rootbound.__main__", as_module.__file__)
    monkeypatch.setitem(sys.modules, "__main__", as_module)
    paths = _runtime_paths()
    assert package in paths
    assert home not in paths

    launcher = tmp_path / "launcher"
    launcher.mkdir()
    as_script = types.ModuleType("__main__")
    as_script.__file__ = str(launcher / "main.py")
    monkeypatch.setitem(sys.modules, "__main__", as_script)
    monkeypatch.setattr(sys, "path", [str(launcher), *sys.path])
    paths = _runtime_paths()
    assert launcher not in paths and home not in paths
    assert package in paths
