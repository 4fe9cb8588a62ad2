"""``rootbound serve``: its flags, the checks on operator input, and the choice of transport."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from mcp.server.auth.provider import TokenVerifier

    from rootbound.workspace.sandbox import Sandbox

__all__ = ["SERVE_HELP", "add_parser", "run"]

SERVE_HELP = """\
Serve the files under the client's roots as MCP tools, confined at open time.

Root policy (DIRs are the operator's allowlist; a client root is a claim, not a grant):
  DIRs given, client declares roots   effective roots = client roots ∩ DIRs (narrowed, never widened)
  DIRs given, client declares none    effective roots = DIRs
  no DIRs,    client declares roots   effective roots = client roots ∩ your home directory
  no DIRs,    client declares none    every tool answers -32021 (missing roots capability)

A client that declares roots but lists none has no workspace yet: it is served the DIRs until it lists a root
(per connection; over stdio, per process). Once it has listed one, an empty list withdraws everything at once.
A stateless 2026-07-28 HTTP request cannot show which it is, so there an empty list is served the DIRs (roots
narrow, the DIRs are the wall); with --strict-empty-roots every empty list serves nothing.

A client whose roots/list fails (answers with an error) is refused; --ignore-client-roots serves it the DIRs:
with it the client is never asked for roots and every client gets exactly the DIRs (it needs DIRs).

No DIRs: client roots are confined to the home directory of the user running the server (a client root of
file:///etc is refused, / is narrowed to the home directory). --trust-client-roots lifts this: client roots are
then taken anywhere this user can read, except / itself. Use it only with a client you trust as much as a shell.

Tools (read-only): list_roots, list_directory, directory_tree, read_file (lines or bytes), read_multiple_files,
read_media_file, stat, search_files, grep (RE2), find_projects; with --writable also edit_file (with a diff;
old_string/new_string as well as edits), apply_patch (Codex's patch format, all or nothing across files),
write_file, create_directory, move_file and delete_file (rootbound docs writing). search_files, grep and
directory_tree skip .git and what ignore files ignore (.gitignore, .ignore, .rgignore, .git/info/exclude, like git
and ripgrep); grep also skips binary files, files over 4 MiB and symlinks, and says so. Paths are absolute, file://
URIs, or relative to the first root. A denied path is a tool error naming the reason class and what to do next,
never echoing the input (every tool error: rootbound docs serve). Every call stops at --tool-timeout.

Transports: stdio (default), or Streamable HTTP with --http HOST:PORT at /mcp, serving both eras on one
endpoint: stateless 2026-07-28 requests and stateful handshake-era sessions (sticky routing needed behind a
load balancer: rootbound docs deploy). Handshake-era sessions are capped (--max-sessions, default 256); one idle
for --session-idle-timeout seconds (default 600) is closed and its id answers 404; one opened by initialize but
never used again is reaped after --init-timeout seconds (default 10), and is the first to make room at the cap.
A slow client cannot hold connections: a request's headers, then its body, must each arrive within
--request-read-timeout seconds (default 30; else 408), and at --max-connections open connections (default half
the fd limit) a new one closes the longest-stalled connection still sending its request, or is answered 503.

Limits: every effective root is held open (a descriptor) while its client's roots are current. A client declaring
more than --max-roots roots (default 256) gets a tool error instead of being served; a new set of roots is also
refused while the process's open descriptors are past 75% of its limit (raised to the hard limit at start).
"""


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
TERMINAL_NOTE: Final = (
    "rootbound serve: waiting for an MCP client on stdin. A host (Claude Desktop, an IDE, an agent) starts this "
    "command itself; to try it by hand: rootbound demo, or --http PORT and an MCP client. Ctrl-C quits."
)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a positive integer") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("expected a positive integer")
    return value


ANSWER_CHARS: Final = (8 * 1024, 64 * 1024, 500_000)
"""``--max-answer-chars``: least, default, most (``workspace/tools/answer_fit.py``; a test checks they agree)."""


def _answer_chars(text: str) -> int:
    least, _, most = ANSWER_CHARS
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not least <= value <= most:
        raise argparse.ArgumentTypeError(f"expected an integer from {least} to {most}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number of seconds > 0") from None
    if not 0 < value <= 86_400:  # NaN and inf fail this too
        raise argparse.ArgumentTypeError("expected a number of seconds > 0 (at most a day)")
    return value


def _host_port(text: str) -> tuple[str, int]:
    """``HOST:PORT``, or a bare ``PORT`` on the loopback address (``--http 8765``, issue 50 item 8)."""
    host, _, port = text.rpartition(":") if ":" in text else ("127.0.0.1", ":", text)
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError("expected [HOST:]PORT with PORT from 0 to 65535 (0: any free port)")
    return host, int(port)


def _log_level(text: str) -> str:
    level = text.upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(LOG_LEVELS)}")
    return level


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``serve`` to the top-level subcommands (``commands`` is argparse's subparsers action)."""
    serve: argparse.ArgumentParser = commands.add_parser(
        "serve",
        help="serve a roots-confined workspace over MCP",
        description=SERVE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.set_defaults(command_parser=serve)  # lets the top level report a stray argument with serve's usage
    serve.add_argument(
        "dirs",
        nargs="*",
        metavar="DIR",
        type=Path,
        help="operator allowlist directories (a file instead serves that one file, and searches have nothing to walk)",
    )
    serve.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        type=_host_port,
        help="serve Streamable HTTP at http://HOST:PORT/mcp (a bare PORT: on 127.0.0.1)",
    )
    serve.add_argument(
        "--writable",
        action="store_true",
        help="offer the writing tools (edit_file, apply_patch, write_file, create_directory, move_file, delete_file)",
    )
    serve.add_argument(
        "--state-key-env",
        metavar="NAME",
        help="environment variable holding the requestState key(s): comma-separated, newest first, each at "
        "least 32 bytes (default: a per-process key). Instances behind one load balancer share them so any of "
        "them can verify state another sealed; today's tools finish in two rounds and carry no state between "
        "instances, so this matters for state-carrying rounds and key rotation",
    )
    serve.add_argument(
        "--max-read",
        metavar="BYTES",
        type=_positive_int,
        default=1024 * 1024,
        help="largest read per call (default 1 MiB; a read not told its size returns up to 64 KiB)",
    )
    serve.add_argument(
        "--max-answer-chars",
        metavar="N",
        type=_answer_chars,
        default=ANSWER_CHARS[1],
        help="characters one tool answer may hold, as text and as JSON each (default 65536, within Claude Code's "
        "25,000-token default; at most 500000, declared to hosts as _meta anthropic/maxResultSizeChars); a longer "
        "answer is cut with a marker saying how to ask for the rest",
    )
    serve.add_argument(
        "--tool-timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        default=30.0,
        help="deadline for one tool call; a longer walk or search stops with a tool error (default 30)",
    )
    serve.add_argument(
        "--roots-timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        default=10.0,
        help="wait for roots/list (default 10)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help=(
            "extra Host (and Origin) to accept over HTTP: a proxy's address or public name;"
            " the bind address with its own port is always accepted"
        ),
    )
    serve.add_argument(
        "--trust-client-roots",
        action="store_true",
        help="with no DIRs, accept client roots anywhere but / (default: confined to your home directory)",
    )
    serve.add_argument(
        "--ignore-client-roots",
        action="store_true",
        help="serve the DIRs to every client and never ask for its roots (for a client whose roots/list fails); "
        "needs DIRs",
    )
    serve.add_argument(
        "--strict-empty-roots",
        action="store_true",
        help="an empty roots list always means no access (default: a client that has never listed a root is "
        "served the DIRs, and an empty list withdraws them only once it has)",
    )
    serve.add_argument(
        "--max-roots",
        metavar="N",
        type=_positive_int,
        default=256,
        help="roots one client may have the server hold; a larger set is refused whole (default 256)",
    )
    serve.add_argument(
        "--max-walks",
        metavar="N",
        type=_positive_int,
        default=None,
        help="tree walks (grep, search_files, list_directory, directory_tree, find_projects) one client may run at "
        "once, with one more kept for the other clients; others wait their turn within their deadline (default: "
        "CPUs less one, at least 1)",
    )
    serve.add_argument(
        "--no-index",
        action="store_true",
        help="search every file on every grep and search_files (no search index of the DIRs)",
    )
    serve.add_argument(
        "--index-status",
        choices=("once", "always"),
        default="once",
        help="how a search answer says whether the index answered: 'once', each kind of status the first time it "
        "applies to a client (the default: the answer is the same either way), or 'always', a last line on every "
        "answer ([index], [scan: ...])",
    )
    serve.add_argument(
        "--clear-index",
        action="store_true",
        help="remove the search index folders of servers not running and every saved index from the user's cache "
        "directory ($ROOTBOUND_CACHE_HOME, else $XDG_CACHE_HOME: rootbound/index), say how many, and exit (a running "
        "server removes its own at exit)",
    )
    serve.add_argument(
        "--no-scan-helper",
        action="store_true",
        help="scan in this process alone when grep cannot use the index (by default a second process, sandboxed "
        "read-only, shares the scan when the machine has two or more CPUs)",
    )
    serve.add_argument(
        "--index-at-start",
        action="store_true",
        help="build the search index of each DIR at start rather than at the first search (in the background; "
        "until it is ready searches scan, and their answers say so)",
    )
    serve.add_argument(
        "--max-sessions",
        metavar="N",
        type=_positive_int,
        default=256,
        help="open handshake-era HTTP sessions (default 256)",
    )
    serve.add_argument(
        "--session-idle-timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        default=600.0,
        help="close an HTTP session idle this long (default 600)",
    )
    serve.add_argument(
        "--init-timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        default=10.0,
        help="reap an HTTP session not used again this long after initialize (default 10)",
    )
    serve.add_argument(
        "--max-connections",
        metavar="N",
        type=_positive_int,
        default=None,
        help="open HTTP connections; at the cap a new one closes the longest-stalled connection still sending its "
        "request, or is answered 503 (default: half the fd limit, 64 to 4096)",
    )
    serve.add_argument(
        "--request-read-timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        default=30.0,
        help="an HTTP request's headers, and then its body, must each arrive within this (else 408; default 30)",
    )
    serve.add_argument(
        "--log-level",
        default="WARNING",
        type=_log_level,
        metavar="LEVEL",
        help=f"stderr log level: {', '.join(LOG_LEVELS)} (default WARNING)",
    )
    _add_sandbox_and_auth_flags(serve)
    return serve


def _scan_helper_command(args: argparse.Namespace, sandbox: Sandbox) -> tuple[str, ...] | None:
    """The scan helper's command, or ``None``: turned off, one CPU to run on (a second process would only take
    turns with this one), or no ``memfd_create`` for its stop flag (not Linux)."""
    from rootbound.workspace.limits.fairness import usable_cpus

    if args.no_scan_helper or usable_cpus() < 2 or not hasattr(os, "memfd_create"):
        return None
    from rootbound.workspace.scan_process import helper_command

    return helper_command(sandbox=sandbox.active)


def describe_policy(args: argparse.Namespace, dirs: list[Path]) -> str:
    """The one startup line: what a client will be allowed, decided from the flags (no client is known yet)."""
    if dirs and not args.dirs:
        roots = f"client roots ∩ your home directory [{dirs[0]}] (--trust-client-roots lifts this); none declared: "
        roots += "tools answer -32021"
    elif dirs and args.ignore_client_roots:
        roots = f"the DIRs [{', '.join(map(str, dirs))}] (--ignore-client-roots: client roots are never asked for)"
    elif dirs:
        shown = ", ".join(f"{d}{'' if d.is_dir() else ' (a file)'}" for d in dirs)
        roots = f"client roots ∩ DIRs [{shown}], or the DIRs when the client declares none"
    else:
        roots = "the client's roots (/ refused); none declared: tools answer -32021"
    mode = "writable (edit, apply_patch, write, create, move, delete)" if args.writable else "read-only"
    if args.writable:
        from rootbound.confine.write_domain import write_wall

        mode += f", writes held beneath the roots by {write_wall()}"
    transport = "Streamable HTTP" if args.http else "stdio"
    return (
        f"{transport}; roots: {roots}; {mode}; reads up to {args.max_read} bytes; "
        f"tool timeout {args.tool_timeout:g} s; roots timeout {args.roots_timeout:g} s"
    )


# --- sandbox and authentication flags (docs/security.md, "Defence in depth") ---------------------------------------


MIN_TOKEN_LENGTH = 32  # characters: a 32-hex-digit token is 128 bits


def _add_sandbox_and_auth_flags(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--no-sandbox",
        action="store_true",
        help="do not restrict this process with Landlock (by default, where the kernel offers it, the process can "
        "open only the DIRs and its own interpreter's files, bind only its port and connect nowhere)",
    )
    serve.add_argument(
        "--require-sandbox", action="store_true", help="refuse to start when the kernel cannot apply the sandbox"
    )
    serve.add_argument(
        "--auth-token-env",
        metavar="NAME",
        help=f"with --http: environment variable holding the bearer token every request must send "
        f"(Authorization: Bearer TOKEN; at least {MIN_TOKEN_LENGTH} characters)",
    )
    serve.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="with --http: allow listening on a non-loopback address without --auth-token-env",
    )


def _loopback(host: str) -> bool:
    from rootbound.workspace.transport.http import is_loopback  # only with --http: stdio never loads the HTTP side

    return is_loopback(host)


def _sandbox_and_auth(args: argparse.Namespace, dirs: list[Path]) -> tuple[Sandbox, TokenVerifier | None] | str:
    """The sandbox plan and the token verifier (or ``None``), or the message refusing to start."""
    from rootbound.workspace.sandbox import Sandbox

    sandbox = Sandbox(dirs, writable=args.writable, listens=bool(args.http), enabled=not args.no_sandbox)
    if args.require_sandbox and not sandbox.active:
        return f"--require-sandbox: sandbox {sandbox.describe()}"
    verifier: TokenVerifier | None = None
    if args.auth_token_env:
        if not args.http:
            return "--auth-token-env needs --http"
        token = os.environ.get(args.auth_token_env, "")
        if len(token) < MIN_TOKEN_LENGTH:
            return f"environment variable {args.auth_token_env} must hold a token of {MIN_TOKEN_LENGTH}+ characters"
        from rootbound.workspace.transport.auth import StaticTokenVerifier

        verifier = StaticTokenVerifier(token)
    elif args.http and not args.insecure_no_auth and not _loopback(args.http[0]):
        return "refusing to serve a non-loopback address without --auth-token-env (or --insecure-no-auth)"
    return sandbox, verifier


# ---------------------------------------------------------------------------------------------------------------------


def _fail(message: str) -> int:
    print(f"rootbound serve: {message}", file=sys.stderr)
    return 2


def _module_of(error: BaseException) -> str:
    """The module an import failure names, never its message (it may hold paths)."""
    name = getattr(error, "name", None)
    dotted = isinstance(name, str) and 0 < len(name) <= 200 and all(part.isidentifier() for part in name.split("."))
    return f"the module {name}" if dotted else "a module"


def _home() -> Path | None:
    """The serving user's home directory from the password database (not ``$HOME``), if it is a real one."""
    import pwd

    try:
        home = Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()
    except (KeyError, OSError):
        return None
    return home if home != Path("/") and home.is_dir() else None


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    from rootbound.workspace.limits.log_limit import install

    install()  # an error storm (EMFILE on accept, a flood of failing requests) costs a few lines, not the disk
    if args.clear_index:
        from rootbound.search.index.registry import cache_root, clear_all

        removed, saved = clear_all(cache_root())
        print(
            f"rootbound serve: removed {removed} search index folder(s) of servers not running and {saved} saved "
            f"index(es) from {cache_root()}"
        )
        return 0
    dirs: list[Path] = []
    for raw in args.dirs:
        path = Path(os.path.expanduser(str(raw))).resolve()  # operator input: ~ is expanded here, and only here
        if not path.exists():
            return _fail(f"DIR does not exist: {raw}")
        if path == Path(path.anchor):
            # The same rule as for a client's root of /: the whole file system is not a workspace.
            return _fail("DIR / would serve the whole file system; name the directories to serve")
        dirs.append(path)
    keys: tuple[bytes, ...] = ()
    if args.state_key_env:
        value = os.environ.get(args.state_key_env)
        if not value:
            return _fail(f"environment variable {args.state_key_env} is not set")
        keys = tuple(part.strip().encode() for part in value.split(",") if part.strip())
        if any(len(key) < 32 for key in keys):
            return _fail("each requestState key must be at least 32 bytes")
    if args.ignore_client_roots and not dirs:
        return _fail("--ignore-client-roots serves the DIRs whatever the client's roots: give DIRs")
    confine_only = False
    if not dirs and not args.trust_client_roots:
        home = _home()
        if home is None:
            return _fail("no DIRs and no usable home directory to confine client roots to: give DIRs")
        dirs, confine_only = [home], True
    walls = _sandbox_and_auth(args, dirs)
    if isinstance(walls, str):
        return _fail(walls)
    sandbox, verifier = walls
    index_cache, index_note, index_saved = None, "", None
    if not args.no_index and dirs and not confine_only:  # only once nothing refuses to start (it would be left)
        from rootbound.search.index.registry import cache_root, own_folder, saved_store

        index_cache = own_folder(cache_root())
        if index_cache is None:  # said in the startup line
            index_note = f"; search index postings in memory ({cache_root()} is not writable)"
        sandbox.cache = index_cache  # the one folder outside the DIRs it may write (and the saved indexes')
        index_saved = saved_store(cache_root()) if index_cache is not None else None
        sandbox.saved_fd = None if index_saved is None else index_saved.dir_fd

    early = None
    helper = _scan_helper_command(args, sandbox)
    if not args.http:
        # Over stdio: hold the DIRs, spawn the helper, restrict the process and start taking up the saved indexes
        # now, then load the SDK while the take up checks every file (issue 51; workspace/early_start.py).
        from rootbound.confine.local_disks import keep_mountinfo_open
        from rootbound.workspace.early_start import EarlyStart, IndexPlan
        from rootbound.workspace.sandbox import SandboxError

        keep_mountinfo_open()  # for the quick calls' local-disk check (Boundary.on_local_disks), which the sandbox
        plan = IndexPlan(tuple(dirs), not args.no_index, confine_only, args.index_at_start, index_cache, index_saved)
        early = EarlyStart.make(plan, helper, sandbox.then)
        sandbox.loads_later = True
        try:
            status = sandbox.apply()
        except SandboxError as error:
            return _fail(f"cannot sandbox: {error} (--no-sandbox to serve without)")

    try:  # over stdio, read through the sandbox: a module that cannot load there is said in one line
        from rootbound.mcp.server import SILENCE_ENV
        from rootbound.workspace.limits.answer_budget import HTTP_MAX_ANSWER, HTTP_MAX_MEDIA
        from rootbound.workspace.server import WorkspaceConfig, build_workspace_server
        from rootbound.workspace.tools import Limits
    except (ImportError, OSError) as error:
        if early is None:
            raise
        return _fail(f"cannot load {_module_of(error)} once sandboxed ({type(error).__name__}); --no-sandbox serves")

    os.environ.setdefault(SILENCE_ENV, "1")  # the server's stderr is a host's log: say it once in --help instead
    config = WorkspaceConfig(
        dirs=tuple(dirs),
        writable=args.writable,
        # Over HTTP one answer must fit in one message the SDK's client accepts (issue 24 #4).
        limits=Limits(
            max_read=args.max_read,
            max_output=args.max_answer_chars,
            deadline=args.tool_timeout,
            max_media=min(Limits.max_media, HTTP_MAX_MEDIA) if args.http else Limits.max_media,
            max_answer=HTTP_MAX_ANSWER if args.http else None,
        ),
        state_keys=keys,
        roots_timeout=args.roots_timeout,
        dirs_confine_only=confine_only,
        max_roots=args.max_roots,
        sandbox=sandbox.describe(),
        strict_empty_roots=args.strict_empty_roots,
        ignore_client_roots=args.ignore_client_roots,
        one_client=not args.http,
        index=not args.no_index,
        index_at_start=args.index_at_start,
        index_status_always=args.index_status == "always",
        index_cache=index_cache,
        index_saved=index_saved,
        after_sandbox=sandbox.then,
        scan_helper=helper,
        early=early,
        inline_quick_calls=not args.http,  # stdio: one client, so a quick call may run on the event loop
        **({} if args.max_walks is None else {"max_walks": args.max_walks}),
    )
    from rootbound.workspace.limits.fd_budget import raise_fd_limit

    raise_fd_limit()  # held roots are descriptors: use the room the hard limit allows
    server, _service = build_workspace_server(config)
    policy = describe_policy(args, dirs) + index_note
    if args.http:
        host, port = args.http
        from rootbound.workspace.limits.slow_clients import ConnectionLimits
        from rootbound.workspace.sessions import SessionLimits
        from rootbound.workspace.transport.http import HttpListen, serve_http

        # One startup line, once listening (bound and sandboxed): the URL, auth, sandbox, then the policy.
        _, _, rest = policy.partition("; ")
        sessions = SessionLimits(args.max_sessions, args.session_idle_timeout, args.init_timeout)
        return serve_http(
            server,
            HttpListen(host, port, args.allowed_host),
            sandbox=sandbox,
            token_verifier=verifier,
            policy=rest,
            sessions=sessions,
            connections=ConnectionLimits(args.max_connections or 0, args.request_read_timeout),
        )
    import gc

    from rootbound.workspace.transport.stdio import serve_stdio

    gc.freeze()  # the start-up's objects, out of the collector's reach (server.py, _freeze_start_up)
    print(f"rootbound serve: {policy}; sandbox: {status}", file=sys.stderr, flush=True)
    if sys.stdin.isatty():  # a person, not a host: say what it waits for (a host's pipe never sees this line)
        print(TERMINAL_NOTE, file=sys.stderr, flush=True)
    return serve_stdio(server, exit_process=True)
