"""``rootbound audit``: flags, usage checks, progress on stderr, and the report to stdout or ``-o FILE``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

__all__ = ["AUDIT_HELP", "add_parser", "run"]

EXIT_USAGE = 64

AUDIT_HELP = """\
Prove, by evidence, whether an MCP server can be made to leave its roots.

  rootbound audit [options] -- CMD ARGS... {workspace}
  rootbound audit [options] --url http://127.0.0.1:{port}/mcp --start 'CMD ... {port} {workspace}'

The audit builds a trap directory (a workspace, a second root, canaries with random tokens outside them,
symlinks, a hard link, a FIFO), gives the workspace to the server on its command line ({workspace}) and/or as
MCP roots, and fires escape probes at every tool with a path parameter. A finding is reported only with
evidence: an outside token in a result, an outside-only name in a listing, an outside mtime, or a change
outside the roots in the trap's snapshot. Write probes run only with --write.

An audit is not a sandbox: the server runs with your privileges. Run untrusted servers in a container.

The report leads with coverage: per mode, tool and path parameter, tested (its control passed), blocked by the
server (with the server's message) or not tested (and why).

Exit codes: 0 no finding at or above --fail-on and every mode the server offers and every path parameter of every
tool tested; 1 findings; 2 incomplete (anything not tested: a mode that failed, a tool skipped or blocked, the
budget used up), unless --accept-partial accepts the gaps the report lists; 64 usage error.
"""


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``audit`` to the top-level subcommands (``commands`` is argparse's subparsers action)."""
    p: argparse.ArgumentParser = commands.add_parser(
        "audit",
        help="prove whether an MCP server can be made to leave its roots",
        description=AUDIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("server", nargs=argparse.REMAINDER, help="-- CMD ARGS... ({workspace} is replaced)")
    p.add_argument("--url", help="Streamable HTTP endpoint on loopback ({port} is replaced)")
    p.add_argument("--start", help="command that serves --url ({port} and {workspace} are replaced)")
    p.add_argument("--header", action="append", default=[], metavar="K:V", help="HTTP header for --url")
    p.add_argument("--mode", choices=("args", "roots", "both"), default="both", help="how W reaches the server")
    p.add_argument(
        "--roots-cmd",
        metavar="CMD",
        help="the server command for roots mode (without {workspace}); default: the command with {workspace} and "
        "a flag whose value it is (--repository {workspace}) dropped",
    )
    p.add_argument(
        "--workspace-kind",
        choices=("auto", "dir", "git"),
        default="auto",
        help="git: the workspace and the outside canaries are repositories (default auto: git when the command "
        "names git)",
    )
    p.add_argument(
        "--accept-partial",
        action="store_true",
        help="exit 0 without findings even if some modes, tools or parameters were not tested (listed in the report)",
    )
    p.add_argument(
        "--stderr-log", type=Path, metavar="FILE", help="where the server's stderr goes (default: a temp file)"
    )
    p.add_argument(
        "--replay",
        nargs=2,
        metavar=("REPORT", "N"),
        help="rebuild the trap of a --format json REPORT and send finding N's request again (1-based), the server "
        "sandboxed as in an audit (--no-sandbox: not)",
    )
    p.add_argument(
        "--use-report-command",
        action="store_true",
        help="with --replay and no -- CMD: run the server command named inside the report (a report is data "
        "from elsewhere: without this flag the command is shown and -- CMD asked for)",
    )
    p.add_argument("--write", action="store_true", help="also run write probes (snapshot, diff, restore)")
    p.add_argument(
        "--allow-tool",
        action="append",
        default=[],
        metavar="NAME",
        help="call this tool even if it looks like exec/shell/fetch/send",
    )
    p.add_argument("--timeout", type=float, default=5.0, metavar="S", help="per call (default 5)")
    p.add_argument("--budget", type=float, default=120.0, metavar="S", help="whole audit (default 120)")
    p.add_argument(
        "--trap-dir",
        type=Path,
        help="where to build the trap (default: a new ~/rbaudit-* directory in your home, else the temp dir)",
    )
    p.add_argument("--trap-home", action="store_true", help="run the server with HOME inside the trap (tilde probes)")
    p.add_argument(
        "--kernel",
        choices=("auto", "inotify"),
        default="auto",
        help="kernel evidence: fanotify with process ids where the kernel allows it, else inotify (default auto)",
    )
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run the server unsandboxed: it then sees your home and can write your files (for a server that needs "
        "more of the home, e.g. npx/uvx caches); by default it runs with your home hidden and its writes walled",
    )
    p.add_argument("--keep-trap", action="store_true", help="leave the trap on disk for inspection")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the report here instead of stdout")
    p.add_argument(
        "--fail-on",
        choices=("info", "low", "medium", "high", "critical"),
        default="low",
        help="lowest severity that makes the exit code 1 (default low)",
    )
    p.add_argument("--sarif-artifact", default="mcp-server", metavar="URI", help="location for SARIF results")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return p


def _absolute(command: list[str]) -> list[str]:
    """Relative paths in the command that exist here, made absolute: the server runs with its cwd in the trap."""
    return [
        os.path.abspath(part) if not os.path.isabs(part) and "/" in part and os.path.exists(part) else part
        for part in command
    ]


def _usage(message: str) -> int:
    print(f"rootbound audit: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    import anyio

    from rootbound.audit.report import Report
    from rootbound.audit.runner import AuditOptions, run_audit
    from rootbound.audit.session import ServerSpec, check_loopback

    command = list(args.server)
    if command and command[0] == "--":
        command = command[1:]
    if args.replay:
        from .replay import replay

        return replay(
            Path(args.replay[0]),
            args.replay[1],
            command,
            timeout=args.timeout,
            use_report_command=args.use_report_command,
            sandbox=not args.no_sandbox,
        )
    if bool(command) == bool(args.url):
        return _usage("give either -- CMD ARGS... or --url with --start")
    headers: list[tuple[str, str]] = []
    for item in args.header:
        key, sep, value = item.partition(":")
        if not sep or not key.strip():
            return _usage(f"--header takes K:V, not {item!r}")
        headers.append((key.strip(), value.strip()))
    if args.url:
        if not args.start:
            return _usage("--url needs --start (the audit starts and stops the server itself)")
        try:
            check_loopback(args.url.replace("{port}", "1"))
        except ValueError as exc:
            return _usage(str(exc))
        spec = ServerSpec(url=args.url, start=tuple(shlex.split(args.start)), headers=tuple(headers))
    else:
        spec = ServerSpec(command=tuple(_absolute(command)))
    if args.roots_cmd is not None:
        roots_command = tuple(shlex.split(args.roots_cmd))
        if not roots_command or any("{workspace}" in part for part in roots_command):
            return _usage("--roots-cmd takes the roots-mode command, without {workspace}")
        spec = dataclasses.replace(spec, roots_command=roots_command)
    if args.mode == "args" and not spec.takes_workspace:
        return _usage("--mode args needs {workspace} in the server command")
    if args.timeout <= 0 or args.budget <= 0:
        return _usage("--timeout and --budget must be positive")
    if args.trap_dir is not None and not args.trap_dir.is_dir():
        return _usage(f"--trap-dir is not a directory: {args.trap_dir}")

    tty = sys.stderr.isatty()

    def progress(message: str) -> None:
        if args.quiet:
            return
        if tty:
            sys.stderr.write(f"\r\x1b[2K{message[:100]}")
        elif not message.split(": ", 1)[-1][:1].isalpha() or "/" not in message:
            sys.stderr.write(f"rootbound audit: {message}\n")
        sys.stderr.flush()

    options = AuditOptions(
        spec=spec,
        modes=args.mode,
        write=args.write,
        allow_tools=frozenset(args.allow_tool),
        timeout=args.timeout,
        budget=args.budget,
        trap_dir=args.trap_dir,
        trap_home=args.trap_home,
        kernel=args.kernel,
        sandbox=not args.no_sandbox,
        keep_trap=args.keep_trap,
        accept_partial=args.accept_partial,
        workspace_kind=args.workspace_kind,
        stderr_log=args.stderr_log,
        progress=progress,
    )
    report: Report = anyio.run(run_audit, options)
    if tty and not args.quiet:
        sys.stderr.write("\r\x1b[2K")
    if args.format == "json":
        text = json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"
    elif args.format == "sarif":
        text = json.dumps(report.to_sarif(args.sarif_artifact), indent=2, ensure_ascii=False) + "\n"
    else:
        text = report.to_text()
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
        if args.format != "text" and not args.quiet:
            sys.stderr.write(report.to_text())
        else:  # the report is in the file: the terminal still gets the verdict, even with -q
            sys.stderr.write(report.summary(args.fail_on).rstrip("\n") + f"; report in {args.output}\n")
    else:
        sys.stdout.write(text)
    return report.exit_code(args.fail_on)


def main(argv: list[str]) -> int:
    """``rootbound audit ARGV...``: parse with the full audit parser (usage errors exit 64) and run."""
    parser = argparse.ArgumentParser(prog="rootbound")
    commands = parser.add_subparsers(dest="command")
    add_parser(commands)
    if "--" in argv:
        cut = argv.index("--")
        head, tail = argv[:cut], argv[cut:]
    else:
        head, tail = argv, []
    try:
        args = parser.parse_args(["audit", *head])
    except SystemExit as exc:
        return 0 if exc.code == 0 else EXIT_USAGE
    args.server = [*args.server, *tail]
    return run(args)
