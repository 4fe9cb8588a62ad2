"""Helpers shared by the independent-judge tests (conformance runner, TypeScript SDK interop, nginx deployment).

* where ``scripts/setup-test-deps.sh`` put the npm packages (``.deps/``), failing (never skipping) when missing;
* bounded subprocesses on loopback: start a server, wait for its ``listening on <url>`` line, always kill it;
* :func:`report`: print a table into pytest's terminal output whether or not ``-s`` is given.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEPS = Path(os.environ.get("ROOTBOUND_TEST_DEPS", REPO / ".deps"))
SETUP_HINT = "run `bash scripts/setup-test-deps.sh` (`make test` does) to install the pinned test dependencies"


def require(path: Path, what: str) -> Path:
    """``path`` if it exists; otherwise fail the test (a missing judge must never look like a pass)."""
    if not path.exists():
        pytest.fail(f"{what} not found at {path}: {SETUP_HINT}", pytrace=False)
    return path


def report(config: pytest.Config, title: str, lines: Sequence[str]) -> None:
    """Write ``lines`` under a ``title`` rule straight to the terminal, bypassing output capture (no ``-s``)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    disabled = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
    with disabled:
        if reporter is None:
            print(f"\n== {title}", *lines, sep="\n", flush=True)
            return
        reporter.ensure_newline()
        reporter.write_sep("-", title)
        for line in lines:
            reporter.write_line(line)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A plain-text table, columns padded to width."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    fmt = "  ".join(f"{{:<{width}}}" for width in widths)
    out = [fmt.format(*header), fmt.format(*("-" * width for width in widths))]
    out.extend(fmt.format(*(str(cell) for cell in row)) for row in rows)
    return out


def stop(process: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    """Terminate ``process`` (and its process group when it leads one), then kill it if it lingers."""
    if process.poll() is not None:
        return
    try:
        if os.getpgid(process.pid) == process.pid:
            os.killpg(process.pid, signal.SIGTERM)
        else:
            process.terminate()
    except ProcessLookupError:
        return
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(process.pid) == process.pid:
                os.killpg(process.pid, signal.SIGKILL)
            else:
                process.kill()
        process.wait(timeout)


def wait_for_line(process: subprocess.Popen[bytes], prefix: str, timeout: float) -> str:
    """Read ``process``'s stdout until a line starting with ``prefix``; returns the rest of that line."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    buffer = b""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {prefix!r} line within {timeout} s (got {buffer[-500:]!r})")
            if not selector.select(remaining):
                continue
            chunk = os.read(process.stdout.fileno(), 4096)
            if not chunk:
                raise RuntimeError(f"process exited ({process.poll()}) before printing {prefix!r}: {buffer[-2000:]!r}")
            buffer += chunk
            for line in buffer.decode(errors="replace").splitlines():
                if line.startswith(prefix):
                    return line[len(prefix) :].strip()


@contextlib.contextmanager
def listening(
    argv: Sequence[str],
    *,
    prefix: str = "listening on ",
    env: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    cwd: Path | None = None,
    stderr_path: Path | None = None,
) -> Iterator[str]:
    """Start ``argv`` in its own process group, yield what follows ``prefix`` on its stdout (a URL), always stop it.

    stderr goes to ``stderr_path`` (or is discarded), so a chatty server can never block on a full pipe; stdout
    is only read until the line is seen (servers print nothing else).
    """
    err = open(stderr_path, "wb") if stderr_path is not None else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=err,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        yield wait_for_line(process, prefix, timeout)
    finally:
        stop(process)
        if process.stdout is not None:
            process.stdout.close()
        if stderr_path is not None and not isinstance(err, int):
            err.close()


def python_env(**extra: str) -> dict[str, str]:
    """The environment for a Python subprocess of the test: the repo importable, the SEP-2577 warning quiet."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), str(REPO / "src"), env.get("PYTHONPATH")]))
    env["ROOTBOUND_SILENCE_SEP2577"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


PYTHON = sys.executable


def rootbound_command() -> list[str]:
    script = Path(sys.executable).with_name("rootbound")
    if not script.exists():
        pytest.fail(f"the rootbound console script is missing next to {sys.executable} (pip install -e .)")
    return [str(script), "serve"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(process: subprocess.Popen[bytes], port: int, seconds: float, what: str) -> bool:
    """True once 127.0.0.1:``port`` accepts, False if ``process`` exited first; TimeoutError after ``seconds``."""
    deadline = time.monotonic() + seconds
    while process.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
        time.sleep(0.05)
    if process.poll() is None:
        raise TimeoutError(f"{what} did not start listening within {seconds:g} s")
    return False


@contextlib.contextmanager
def rootbound_http(*args: str, env: dict[str, str] | None = None, log: Path | None = None) -> Iterator[str]:
    """``rootbound serve --http 127.0.0.1:PORT`` on a free port; yields the endpoint URL once it accepts."""
    for _attempt in range(3):
        port = free_port()
        err = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115
        process = subprocess.Popen(
            [*rootbound_command(), "--http", f"127.0.0.1:{port}", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env or python_env(),
            start_new_session=True,
        )
        try:
            if not wait_listening(process, port, 20, "rootbound serve"):
                continue  # exited: most likely the port was taken in between; try another
            yield f"http://127.0.0.1:{port}/mcp"
            return
        finally:
            stop(process)
            if not isinstance(err, int):
                err.close()
    raise RuntimeError("rootbound serve could not start on a free port (3 attempts)")


def private_mount_namespace() -> list[str]:
    """The ``unshare`` command prefix that runs a command in a private mount namespace (as root: a new mount
    namespace; otherwise a user namespace too), or skip the test where this machine cannot make one."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) not installed: cannot build a private mount namespace")
    args = ["unshare", "-m", "--propagation", "private"] if os.geteuid() == 0 else ["unshare", "-Urm"]
    if subprocess.run([*args, "true"], capture_output=True).returncode != 0:
        pytest.skip("no permission to create a mount namespace here")
    return args
