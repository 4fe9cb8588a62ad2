"""The audit's sandbox (``rootbound.audit.sandbox``): a hostile server run under the command prefix cannot read the
auditor's home or write the auditor's files, while the trap, the canaries planted beside it and its own install stay
visible. Real subprocesses; each test builds a fake "real home" (with an ``~/.ssh/id_ed25519``-like canary) and
hides it, as the audit hides the real one."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from rootbound.audit.sandbox import (
    SETUP_FAILED,
    SandboxPolicy,
    default_policy,
    install_roots,
    landlock_reason,
    policy_args,
    report_line,
    sandbox_support,
    sandboxed,
)

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="the sandbox is Linux's (mount namespace, Landlock)"),
]

# The hostile server: tries every path it is given and prints what it got, one JSON object.
HOSTILE = r"""
import json, os, sys
out = {}
for spec in sys.argv[1:]:
    op, _, path = spec.partition(":")
    try:
        if op == "read":
            with open(path) as fh:
                out[spec] = "ok:" + fh.read().strip()
        elif op == "list":
            out[spec] = "ok:" + ",".join(sorted(os.listdir(path)))
        elif op == "write":
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as fh:
                fh.write("hostile")
            out[spec] = "ok"
    except OSError as exc:
        out[spec] = "err:" + (os.strerror(exc.errno) if exc.errno else str(exc))
out["home"] = os.environ.get("HOME", "")
out["cwd"] = os.getcwd()
print(json.dumps(out))
"""

NO_SUCH = "err:" + os.strerror(2)
DENIED = "err:" + os.strerror(13)


@pytest.fixture(scope="module")
def supported() -> None:
    reason = sandbox_support()
    if reason is not None:
        pytest.skip(f"no sandbox on this kernel: {reason}")


@dataclasses.dataclass
class Layout:
    home: Path  # the test's stand-in for the auditor's real home
    secret: Path  # ~/.ssh/id_ed25519
    trap: Path  # ~/rbaudit-XXXX (the audit's default trap is in the home)
    far: Path  # ~/rbaudit-home-XXXX: the canary the audit plants beside the trap
    cwd: Path  # the server's cwd (outside the home)
    script: Path  # the server's own install, inside the home (~/.local/share/hostile/server.py)
    env: dict[str, str]


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    home = tmp_path / "realhome"
    (home / ".ssh").mkdir(parents=True)
    secret = home / ".ssh" / "id_ed25519"
    secret.write_text("PRIVATE-KEY-CANARY")
    (home / "notes.txt").write_text("other file")
    trap = home / "rbaudit-abc123"
    (trap / "ws").mkdir(parents=True)
    (trap / "ws" / "marker.txt").write_text("TRAP-TOKEN")
    (trap / "far").mkdir()
    (trap / "far" / "far.txt").write_text("FAR-TOKEN")
    far = home / "rbaudit-home-abc123"
    far.mkdir()
    (far / "token.txt").write_text("HOME-CANARY-TOKEN")
    script = home / ".local" / "share" / "hostile" / "server.py"
    script.parent.mkdir(parents=True)
    script.write_text(HOSTILE)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = dict(os.environ, HOME=str(home))
    return Layout(home, secret, trap, far, cwd, script, env)


def policy_for(lay: Layout, argv: list[str]) -> SandboxPolicy:
    # hide only the fake home: the test's own interpreter may live in the real one (pyenv), as it does here
    return default_policy(argv, env=lay.env, cwd=lay.cwd, trap=lay.trap, canaries=[lay.far], hide=[lay.home])


def run_hostile(lay: Layout, *specs: str, policy: SandboxPolicy | None = None) -> dict[str, Any]:
    argv = [sys.executable, str(lay.script), *specs]
    wrapped, env = sandboxed(argv, lay.env, policy or policy_for(lay, argv))
    done = subprocess.run(wrapped, env=env, cwd=lay.cwd, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_hostile_server_cannot_read_the_real_home(supported: None, layout: Layout) -> None:
    got = run_hostile(
        layout,
        f"read:{layout.secret}",
        f"read:{layout.home / 'notes.txt'}",
        f"list:{layout.home / '.ssh'}",
        f"list:{layout.home}",
    )
    assert got[f"read:{layout.secret}"] in (NO_SUCH, DENIED)
    assert got[f"read:{layout.home / 'notes.txt'}"] in (NO_SUCH, DENIED)
    assert got[f"list:{layout.home / '.ssh'}"] in (NO_SUCH, DENIED)
    listing = got[f"list:{layout.home}"].removeprefix("ok:").split(",")
    assert ".ssh" not in listing and "notes.txt" not in listing
    assert {layout.trap.name, layout.far.name} <= set(listing)  # what the audit planted there is all it sees
    assert layout.secret.read_text() == "PRIVATE-KEY-CANARY"  # and outside, nothing changed


def test_the_trap_the_canaries_and_its_own_install_stay_visible(supported: None, layout: Layout) -> None:
    got = run_hostile(
        layout,
        f"read:{layout.trap / 'ws' / 'marker.txt'}",
        f"read:{layout.trap / 'far' / 'far.txt'}",  # an escape target inside the trap
        f"read:{layout.far / 'token.txt'}",  # the canary beside the trap, in the home
        f"read:{layout.script}",
        f"write:{layout.trap / 'far' / 'escaped.txt'}",  # an escaping write still lands where the audit looks
    )
    assert got[f"read:{layout.trap / 'ws' / 'marker.txt'}"] == "ok:TRAP-TOKEN"
    assert got[f"read:{layout.trap / 'far' / 'far.txt'}"] == "ok:FAR-TOKEN"
    assert got[f"read:{layout.far / 'token.txt'}"] == "ok:HOME-CANARY-TOKEN"
    assert got[f"read:{layout.script}"].startswith("ok:")
    assert got[f"write:{layout.trap / 'far' / 'escaped.txt'}"] == "ok"
    assert (layout.trap / "far" / "escaped.txt").read_text() == "hostile"
    assert got["cwd"] == str(layout.cwd)


def test_devices_and_renames_inside_the_trap_work(supported: None, layout: Layout) -> None:
    """/dev/null is writable (shells and runtimes write it); a rename or hard link inside the trap works. (Between
    the trap and another mount, e.g. /tmp, it is EXDEV inside the sandbox: the trap is bound back in.)"""
    code = (
        "import os; open('/dev/null', 'w').write('x'); d = os.environ['RB_TRAP']; "
        "open(d + '/a', 'w').write('a'); os.rename(d + '/a', d + '/far/b'); os.link(d + '/far/b', d + '/c'); "
        "print('ok')"
    )
    argv = [sys.executable, "-c", code]
    env = dict(layout.env, RB_TRAP=str(layout.trap))
    wrapped, env = sandboxed(argv, env, policy_for(layout, argv))
    done = subprocess.run(wrapped, env=env, cwd=layout.cwd, capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.strip() == "ok", done.stderr
    assert (layout.trap / "far" / "b").read_text() == "a" and (layout.trap / "c").exists()


def test_the_server_home_is_private(supported: None, layout: Layout) -> None:
    state = layout.home / ".code-index" / "state.json"
    got = run_hostile(layout, f"write:{state}", f"read:{state}", f"list:{layout.home}")
    assert got["home"] == str(layout.home)  # $HOME keeps its path: "~" still means the same place to the server
    assert got[f"write:{state}"] == "ok" and got[f"read:{state}"] == "ok:hostile"
    assert ".code-index" in got[f"list:{layout.home}"]
    assert not (layout.home / ".code-index").exists()  # its start-up state never lands in the real home
    assert sorted(p.name for p in layout.home.iterdir()) == sorted(
        [".ssh", ".local", "notes.txt", layout.trap.name, layout.far.name]
    )


@pytest.mark.skipif(landlock_reason() is not None, reason=f"no Landlock: {landlock_reason()}")
def test_landlock_keeps_the_server_from_writing_the_auditors_other_files(
    supported: None, layout: Layout, tmp_path: Path
) -> None:
    checkout = tmp_path / "checkout"  # stands for the auditor's other files (outside the home)
    checkout.mkdir()
    (checkout / "src.py").write_text("mine")
    argv = [sys.executable, str(layout.script)]
    base = policy_for(layout, argv)
    assert base.landlock
    # the test's files are all in the temp dir, which the server may write: this policy leaves it out
    policy = dataclasses.replace(base, writable=(layout.trap, layout.far, layout.cwd, layout.home))
    got = run_hostile(
        layout, f"write:{checkout / 'src.py'}", f"read:{checkout / 'src.py'}", f"write:{layout.cwd / 'x'}",
        policy=policy,
    )  # fmt: skip
    assert got[f"write:{checkout / 'src.py'}"] == DENIED
    assert got[f"read:{checkout / 'src.py'}"] == "ok:mine"
    assert got[f"write:{layout.cwd / 'x'}"] == "ok"
    assert (checkout / "src.py").read_text() == "mine"
    assert report_line(policy) == "sandbox: on (mount namespace + Landlock)"


def run_entry(lay: Layout, policy_argv: list[str]) -> subprocess.CompletedProcess[str]:
    wrapped, env = sandboxed(["true"], lay.env, SandboxPolicy(hide=(), landlock=False))
    head = wrapped[: wrapped.index("--landlock-module") + 2]
    return subprocess.run([*head, *policy_argv], env=env, cwd=lay.cwd, capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (["--hide", "relative/home", "--", "true"], "is not an absolute path"),
        (["--hide", "/nonexistent-rbaudit-dir", "--", "true"], "does not exist"),
        (["--hide", "{home}", "--show", "{parent}", "--", "true"], "would reveal the hidden directory"),
        (["--hide", "{home}", "--show", "{home}/missing", "--", "true"], "cannot open shown"),
        (["--hide", "{home}", "--frobnicate", "x", "--", "true"], "unexpected argument"),
        (["--hide", "{home}"], "no '--' before the command"),
        (["--hide", "/", "--", "true"], "cannot hide /"),
    ],
)
def test_a_bad_policy_is_one_clear_line_and_the_server_never_runs(
    supported: None, layout: Layout, policy: list[str], message: str
) -> None:
    filled = [p.replace("{home}", str(layout.home)).replace("{parent}", str(layout.home.parent)) for p in policy]
    done = run_entry(layout, ["--no-landlock", *filled])
    assert done.returncode == SETUP_FAILED
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rootbound sandbox: bad policy: ") and message in lines[0]


def test_a_cwd_hidden_and_not_shown_fails_closed(supported: None, layout: Layout) -> None:
    inside = layout.home / "project"
    inside.mkdir()
    head = sandboxed(["true"], layout.env, SandboxPolicy(hide=(), landlock=False))[0]
    head = head[: head.index("--landlock-module") + 2]
    done = subprocess.run([*head, "--no-landlock", "--hide", str(layout.home), "--", "true"], cwd=inside,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == SETUP_FAILED
    assert "the working directory" in done.stderr and "is hidden" in done.stderr


def test_a_missing_command_fails_before_the_sandbox(layout: Layout) -> None:
    with pytest.raises(FileNotFoundError):
        sandboxed(["rbaudit-no-such-server"], layout.env, SandboxPolicy(hide=()))


def test_the_default_policy_hides_the_home_and_shows_what_the_audit_plants(layout: Layout) -> None:
    argv = [sys.executable, str(layout.script)]
    policy = default_policy(
        argv, env=layout.env, cwd=layout.cwd, trap=layout.trap, canaries=[layout.far], auditor_env=layout.env
    )
    assert layout.home in policy.hide
    assert {layout.trap, layout.far, layout.cwd, layout.script.parent} <= set(policy.show)
    assert {layout.trap, layout.far, layout.cwd, *policy.hide, Path("/dev")} <= set(policy.writable)
    assert layout.script.parent in install_roots(argv, layout.env, layout.cwd)
    args = policy_args(policy)
    assert args.count("--hide") == len(policy.hide) and ("--no-landlock" in args) is not policy.landlock
    assert report_line(None, "the kernel has no user namespaces") == "sandbox: off: the kernel has no user namespaces"


def test_a_server_home_inside_the_trap_is_not_hidden(layout: Layout) -> None:
    server_env = dict(layout.env, HOME=str(layout.trap / "home"))  # --trap-home: the server's HOME is a canary dir
    policy = default_policy(
        ["true"], env=server_env, cwd=layout.cwd, trap=layout.trap, canaries=[layout.far], auditor_env=layout.env
    )
    assert layout.home in policy.hide and layout.trap / "home" not in policy.hide
    inside = default_policy(
        ["true"], env=layout.env, cwd=layout.cwd, trap=layout.home, auditor_env={"HOME": str(layout.trap)}
    )
    assert layout.trap not in inside.hide  # an auditor's home inside what the audit shows cannot be hidden


def test_install_roots_follow_venvs_node_modules_and_shebangs(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).resolve().parent}\n")
    tool = venv / "bin" / "some-mcp-server"
    tool.write_text(f"#!{venv / 'bin' / 'python'}\n")
    tool.chmod(0o755)
    pkg = tmp_path / "npm" / "node_modules" / "srv" / "dist"
    pkg.mkdir(parents=True)
    (pkg / "index.js").write_text("")
    roots = install_roots([str(tool), "--flag", str(pkg / "index.js")], dict(os.environ), tmp_path)
    assert venv in roots
    assert Path(sys.executable).resolve().parent.parent in roots  # the venv's base interpreter
    assert tmp_path / "npm" in roots


SETPRIV = shutil.which("setpriv")
SYSTEM_PYTHON = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), None)


UNPRIVILEGED = os.geteuid() == 0 and SETPRIV is not None and SYSTEM_PYTHON is not None


@pytest.mark.skipif(not UNPRIVILEGED, reason="needs root, setpriv and a system python3 to become another user")
def test_an_unprivileged_auditor_gets_the_sandbox_through_a_user_namespace(supported: None) -> None:
    """Not root: the entry module creates a user namespace with the mount namespace (uid mapped to itself)."""
    assert SETPRIV is not None and SYSTEM_PYTHON is not None
    base = Path(tempfile.mkdtemp(prefix="rbaudit-sbtest-"))  # pytest's tmp_path is not enterable by another user
    try:
        home, trap, cwd = base / "home", base / "home" / "rbaudit-x", base / "cwd"
        for d in (home / ".ssh", trap, cwd):
            d.mkdir(parents=True)
        (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-CANARY")
        (trap / "marker.txt").write_text("TRAP-TOKEN")
        for path in (base, *base.rglob("*")):
            os.chown(path, 65534, 65534)
        base.chmod(0o755)
        policy = SandboxPolicy(hide=(home,), show=(trap, cwd), writable=(trap, cwd), landlock=landlock_reason() is None)
        argv = ["cat", str(home / ".ssh" / "id_ed25519"), str(trap / "marker.txt")]
        wrapped, _env = sandboxed(argv, {"PATH": os.defpath}, policy)
        wrapped[0] = SYSTEM_PYTHON  # the test's own interpreter may live in root's home, which nobody can enter
        done = subprocess.run(
            [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups", *wrapped],
            cwd=cwd, env={"PATH": os.defpath, "HOME": str(home)}, capture_output=True, text=True, timeout=60,
            check=False,
        )  # fmt: skip
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert "TRAP-TOKEN" in done.stdout, done.stderr
    assert "PRIVATE-KEY-CANARY" not in done.stdout and "No such file or directory" in done.stderr
    assert done.returncode == 1  # cat: one file missing, one read
