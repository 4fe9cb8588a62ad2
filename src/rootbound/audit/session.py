"""Reaching the server under test: start it (stdio, or a command that serves Streamable HTTP on loopback), connect
with the official SDK client (``mcp.Client``), and call tools with a timeout each.

Roots come from rootbound's own :class:`~rootbound.mcp.RootsProvider` (handshake era with ``mode="legacy"``,
2026-07-28 where the server speaks it). Results the typed client rejects are fetched again raw (``_sdk.py``).
The stdio child runs in its own session: the SDK kills exactly that process group when the connection closes.
An HTTP server the audit starts is likewise killed by its own process group, and only that one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp.client.context import ClientRequestContext
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT, ErrorData, ListRootsResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp import Client
from rootbound.audit import _sdk
from rootbound.audit.sandbox import default_policy, sandboxed
from rootbound.audit.server_output import StderrSink
from rootbound.mcp import RootsProvider

__all__ = [
    "MARKER_ENV",
    "PLAIN_LOGS",
    "CallOutcome",
    "Connect",
    "CountingProvider",
    "Launch",
    "Peer",
    "SandboxPlan",
    "ServerSpec",
    "StartFailed",
    "launch_command",
    "leaf_error",
    "open_peer",
    "reap_marked",
]

Era = Literal["auto", "legacy"]
PLACEHOLDER = "{workspace}"
# A flag whose value is the workspace: dropped with it in roots mode (--repository, --allow, --allowed-directories,
# --root, -d, -C ...). A boolean switch before a positional {workspace} (--verbose) is not matched; --roots-cmd
# gives the roots-mode command outright when the guess is wrong.
_VALUE_FLAG = re.compile(
    r"-[A-Za-z]|--(?!(no|trust|enable|disable|use|with|without|skip|ignore|follow|read|only|allow-all)[-_])"
    r"(?=[A-Za-z0-9])[A-Za-z0-9_-]*?(repo|dir|allow|root|path|workspace|folder|project|base|cwd|mount|location|home|sandbox|scope)"
    r"[A-Za-z0-9_-]*",
    re.IGNORECASE,
)
MARKER_ENV = "ROOTBOUND_AUDIT_RUN"  # set in the server's environment: its descendants are found by it
# How the server's own error log is drawn, never what it does: fastmcp 2.x draws every tool error as a rich
# traceback (each frame's source, syntax-highlighted) on stderr, 0.06-0.18 s of CPU per refused call against
# ~5 ms plain, and most probes are refused (cursor-notebook-mcp 0.3.1's ~830 calls: 113 s -> 15 s). Its answers
# are the same either way (232 calls over its 29 tools compared). A value in the auditor's environment wins.
PLAIN_LOGS = {"FASTMCP_ENABLE_RICH_TRACEBACKS": "false"}
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


class StartFailed(Exception):
    """The server did not start or did not complete the handshake (its stderr tail is the message).
    ``exec_failed``: the command could not be executed at all (not found, not executable)."""

    def __init__(self, message: str, *, exec_failed: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.exec_failed = exec_failed
        self.status = status  # its exit status, where the audit started the process itself (--start)


@dataclass(frozen=True)
class ServerSpec:
    """How to run the server: a stdio command, or ``url`` plus a ``start`` command (both may hold placeholders)."""

    command: tuple[str, ...] = ()
    url: str | None = None
    start: tuple[str, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    roots_command: tuple[str, ...] = ()  # roots mode's own command (--roots-cmd): stdio command or --start

    @property
    def takes_workspace(self) -> bool:
        return any(PLACEHOLDER in part for part in (self.command or self.start))

    def label(self) -> str:
        return " ".join(self.command) if self.command else f"{self.url} ({' '.join(self.start)})"

    def argv(self, workspace: Path | None) -> tuple[str, ...]:
        """The command for a mode: with W (args mode), or without it (roots mode: ``--roots-cmd`` if given)."""
        base = self.command or self.start
        if workspace is None and self.roots_command:
            return self.roots_command
        return base


def substitute(parts: Sequence[str], workspace: Path | None, port: int | None) -> list[str]:
    """Fill ``{workspace}`` and ``{port}``. Without a workspace (roots mode) an argument holding ``{workspace}`` is
    dropped, and so is the flag right before it when the placeholder is that flag's whole value
    (``--repository {workspace}``): a dangling flag would make the server exit or take the next argument."""
    out: list[str] = []
    for part in parts:
        if PLACEHOLDER in part:
            if workspace is None:
                if part == PLACEHOLDER and len(out) > 1 and _VALUE_FLAG.fullmatch(out[-1]):
                    out.pop()
                continue
            part = part.replace(PLACEHOLDER, str(workspace))
        if port is not None:
            part = part.replace("{port}", str(port))
        out.append(part)
    return out


class CountingProvider(RootsProvider):
    """A roots provider that counts the server's roots requests (both eras): did it ever ask?"""

    def __init__(self, roots: Sequence[Path]) -> None:
        super().__init__([str(r) for r in roots])
        self.requests = 0
        self.asked = anyio.Event()

    async def list_roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        self.requests += 1
        self.asked.set()
        return await super().list_roots(context)

    def rearm(self) -> None:
        self.asked = anyio.Event()


@dataclass
class CallOutcome:
    request: str  # the exact JSON-RPC request that reproduces this call
    result: Any = None
    is_error: bool = False
    error: str | None = None
    timed_out: bool = False
    seconds: float = 0.0


@dataclass
class Peer:
    client: Client
    timeout: float
    calls: int = 0
    reaped: int = 0  # processes the server left behind, killed when its session ended
    timeouts_in_a_row: int = 0
    tools_raw: list[dict[str, Any]] = field(default_factory=list)

    @property
    def protocol_version(self) -> str:
        return str(self.client.protocol_version)

    @property
    def modern(self) -> bool:
        return self.protocol_version in MODERN_PROTOCOL_VERSIONS

    async def list_tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        try:
            cursor: str | None = None
            for _ in range(50):
                with anyio.fail_after(self.timeout * 2):
                    page = await self.client.list_tools(cursor=cursor)
                tools += [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    break
        except ValidationError:
            raw = await _sdk.raw_request(self.client.session, "tools/list", None, self.timeout * 2)
            items = raw.get("tools") if isinstance(raw, dict) else None
            tools = [t for t in items if isinstance(t, dict) and isinstance(t.get("name"), str)] if items else []
        self.tools_raw = tools
        return tools

    async def call(self, name: str, arguments: dict[str, Any]) -> CallOutcome:
        self.calls += 1
        request = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": self.calls,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            },
            ensure_ascii=True,  # printable as it is: a tool name's control or bidi characters come out as \\uXXXX
        )
        outcome = CallOutcome(request)
        started = time.monotonic()
        try:
            with anyio.fail_after(self.timeout + 1):
                try:
                    result = await self.client.call_tool(name, arguments, read_timeout_seconds=self.timeout)
                    outcome.result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
                    outcome.is_error = bool(result.is_error)
                except ValidationError:
                    raw = await _sdk.raw_request(
                        self.client.session, "tools/call", {"name": name, "arguments": arguments}, self.timeout
                    )
                    outcome.result = raw
                    outcome.is_error = bool(raw.get("isError")) if isinstance(raw, dict) else False
        except TimeoutError:
            outcome.timed_out = True
        except MCPError as exc:
            outcome.is_error = True
            outcome.error = exc.error.message
            outcome.result = exc.error.model_dump(by_alias=True, mode="json", exclude_none=True)
            outcome.timed_out = exc.code == REQUEST_TIMEOUT
        except (RuntimeError, ValueError, TypeError) as exc:  # an SDK-side rejection of a sloppy answer
            outcome.is_error = True
            outcome.error = f"{type(exc).__name__}: {exc}"
        outcome.seconds = time.monotonic() - started
        self.timeouts_in_a_row = self.timeouts_in_a_row + 1 if outcome.timed_out else 0
        return outcome


def leaf_error(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups (duck-typed: Python 3.10 has no built-in groups)."""
    inner = getattr(exc, "exceptions", None)
    while isinstance(inner, tuple) and inner and isinstance(inner[0], BaseException):
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    return exc


def _parent(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read(4096)
        return int(stat[stat.rindex(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def check_loopback(url: str) -> None:
    host = urlsplit(url).hostname or ""
    if host not in LOOPBACK and host.strip("[]") not in LOOPBACK:
        raise ValueError(f"--url must be on loopback (127.0.0.1, ::1 or localhost), not {host!r}")


def reap_marked(token: str, *, spare_children: bool = False) -> int:
    """SIGKILL every process whose environment carries ``MARKER_ENV=token`` (the server's descendants, even those
    that left its process group with ``setsid``); returns how many. With ``spare_children``, our own direct
    children (the server itself, still to be closed by its transport) are left alone. Processes that cleared
    their environment, or run as another user, are out of reach (said in docs/audit.md)."""
    needle = f"{MARKER_ENV}={token}".encode()
    killed = 0
    me = os.getpid()
    for _ in range(3):  # a child may fork while we scan: go again until a pass finds nothing
        found = 0
        try:
            entries = os.listdir("/proc")
        except OSError:
            return killed
        for entry in entries:
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    env = fh.read(1 << 20)
            except OSError:
                continue
            if needle in env.split(b"\0"):
                if spare_children and _parent(entry) == me:
                    continue
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(entry), signal.SIGKILL)
                    found += 1
        killed += found
        if not found:
            break
    return killed


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Terminate the process group the audit started for this server (and nothing else)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=2)
    except (ProcessLookupError, PermissionError):
        return
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


@dataclass(frozen=True)
class Launch:
    """What starts one server process: its argv, environment and working directory."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path


@dataclass(frozen=True)
class SandboxPlan:
    """What a sandboxed server must still see (:mod:`~rootbound.audit.sandbox`): the trap and the canary
    directories planted beyond it; its install is found from its command at each start."""

    trap: Path
    canaries: tuple[Path, ...] = ()


def launch_command(
    spec: ServerSpec,
    workspace: Path | None,
    *,
    env: dict[str, str],
    cwd: Path,
    port: int | None = None,
    sandbox: SandboxPlan | None = None,
) -> Launch:
    """The one place a server spec becomes a command line: ``{workspace}`` and ``{port}`` filled (roots mode drops
    the workspace argument and its flag, or uses ``--roots-cmd``), then, with ``sandbox``, prefixed by the
    sandbox's entry point; both the stdio and the ``--start`` (HTTP) paths start what this returns. The server's
    error log is made plain (:data:`PLAIN_LOGS`) unless the environment says otherwise."""
    env = {**PLAIN_LOGS, **env}
    argv = substitute(spec.argv(workspace), workspace, port)
    if sandbox is None or not argv:
        return Launch(argv, dict(env), cwd)
    policy = default_policy(argv, env=env, cwd=cwd, trap=sandbox.trap, canaries=sandbox.canaries)
    try:
        wrapped, wrapped_env = sandboxed(argv, env, policy)
    except FileNotFoundError as exc:  # the command itself: a start failure, as without the sandbox
        raise StartFailed(f"{type(exc).__name__}: {exc}", exec_failed=True) from exc
    return Launch(wrapped, wrapped_env, cwd)


_STATUS = re.compile(r"^rootbound sandbox: the server (exited with status|was killed by signal) (-?\d{1,4})$", re.M)


def exit_status(text: str) -> int | None:
    """The exit status the sandbox's entry process wrote as stderr's last word on a stdio server it ran (a signal
    as its negative, like ``Popen.returncode``), or None. Only the last such line counts: the entry process writes
    it after the server has ended."""
    found = list(_STATUS.finditer(text))
    if not found:
        return None
    kind, number = found[-1].groups()
    return -int(number) if kind.startswith("was killed") else int(number)


def strip_status(text: str) -> str:
    """The stderr tail without the sandbox's status lines (the server's own lines say why it stopped)."""
    return _STATUS.sub("", text).strip()


async def _sandboxed_status(stderr: StderrSink, wait: float = 2.0) -> int | None:
    """The server's exit status from the sandbox's last stderr line, waiting a little for it (the client sees the
    end of the server's stdout before the entry process has reaped it and written the line); None if it did not
    come (the server is still running: the handshake failed some other way)."""
    deadline = time.monotonic() + wait
    while True:
        status = exit_status(stderr.tail())
        if status is not None or time.monotonic() >= deadline:
            return status
        await anyio.sleep(0.05)


@dataclass(frozen=True)
class Connect:
    """How the audit talks to one server process: the protocol era, the roots it offers, the per-call timeout,
    where the server's stderr goes (and under which label), and how long it may take to start."""

    era: Era
    provider: RootsProvider | None
    call_timeout: float
    stderr: StderrSink
    label: str
    start_timeout: float = 20.0
    sandbox: SandboxPlan | None = None


@asynccontextmanager
async def open_peer(
    spec: ServerSpec, *, workspace: Path | None, cwd: Path, env: dict[str, str], connect: Connect
) -> AsyncIterator[Peer]:
    """Start the server and connect; ``workspace=None`` starts it without the workspace argument (roots mode)."""
    era, provider, call_timeout = connect.era, connect.provider, connect.call_timeout
    stderr, start_timeout = connect.stderr, connect.start_timeout
    log = stderr.open(connect.label)
    kwargs: dict[str, Any] = dict(provider.client_kwargs()) if provider is not None else {}
    proc: subprocess.Popen[bytes] | None = None
    try:
        async with AsyncExitStack() as stack:
            if spec.command:
                run = launch_command(spec, workspace, env=env, cwd=cwd, sandbox=connect.sandbox)
                if not run.argv:
                    raise StartFailed("the command is empty without {workspace}")
                params = StdioServerParameters(command=run.argv[0], args=run.argv[1:], env=run.env, cwd=str(run.cwd))
                transport: Any = stdio_client(params, errlog=log)  # type: ignore[arg-type]
            else:
                assert spec.url is not None
                port = _free_port()
                url = spec.url.replace("{port}", str(port))
                check_loopback(url)
                run = launch_command(spec, workspace, env=env, cwd=cwd, port=port, sandbox=connect.sandbox)
                try:
                    proc = subprocess.Popen(  # noqa: ASYNC220 - returns at once; the child is waited for below
                        run.argv,
                        cwd=run.cwd,
                        env=run.env,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=log,
                        start_new_session=True,
                    )
                except OSError as exc:
                    raise StartFailed(f"{type(exc).__name__}: {exc}", exec_failed=True) from exc
                try:
                    await _wait_listening(url, proc, start_timeout)
                except StartFailed as exc:
                    await anyio.sleep(0.05)  # the last stderr lines of a server that just exited
                    raise StartFailed("\n".join(x for x in (str(exc), stderr.tail()) if x), status=proc.poll()) from exc
                http = httpx2.AsyncClient(headers=dict(spec.headers), timeout=httpx2.Timeout(call_timeout + 5))
                await stack.enter_async_context(http)
                transport = streamable_http_client(url, http_client=http)
            # The session default bounds the handshake (a slow-starting server gets start_timeout); every tool
            # call passes its own, shorter timeout.
            client = Client(transport, mode=era, read_timeout_seconds=start_timeout, **kwargs)
            try:
                # No cancel scope around this: the client opens task groups that outlive the call. The handshake
                # is bounded by the client's read timeout instead.
                await stack.enter_async_context(client)
            except Exception as exc:
                leaf = leaf_error(exc)
                await anyio.sleep(0.05)  # the last stderr lines of a server that just exited
                not_run = isinstance(leaf, (FileNotFoundError, PermissionError, NotADirectoryError))
                status: int | None = None
                if spec.command and connect.sandbox is not None:
                    status = await _sandboxed_status(stderr)
                tail = strip_status(stderr.tail())
                raise StartFailed(tail or f"{type(leaf).__name__}: {leaf}", exec_failed=not_run, status=status) from exc
            token = env.get(MARKER_ENV)
            peer = Peer(client, call_timeout)
            if token:
                # Runs before the transport closes (the stack unwinds in reverse): a grandchild that left the
                # server's process group but holds its stdout would keep the SDK's drain waiting.
                stack.callback(lambda: setattr(peer, "reaped", reap_marked(token, spare_children=True)))
            yield peer
    finally:
        if proc is not None:
            _kill_group(proc)
        stderr.close_pipe()


async def _wait_listening(url: str, proc: subprocess.Popen[bytes], deadline: float) -> None:
    parts = urlsplit(url)
    host = (parts.hostname or "127.0.0.1").strip("[]")
    port = parts.port or 80
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise StartFailed(f"the server exited with status {proc.returncode} before listening")
        try:
            with anyio.fail_after(0.5):
                stream = await anyio.connect_tcp(host, port)
            await stream.aclose()
            return
        except (OSError, TimeoutError):
            await anyio.sleep(0.1)
    raise StartFailed(f"the server did not listen on {host}:{port} within {deadline:.0f}s")
