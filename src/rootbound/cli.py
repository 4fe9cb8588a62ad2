"""The ``rootbound`` command line. Each subcommand lives with what it runs; this module only dispatches.

Subcommand modules are imported only when their command runs, so ``rootbound serve`` over stdio loads nothing it
does not need.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from typing import NoReturn

from rootbound import __version__
from rootbound.mcp._sdk_major import needs_mcp_2
from rootbound.workspace import cli as serve_cli


class _Brief(argparse.ArgumentParser):
    """A subcommand's parser whose errors are two lines: the error, and where the flags are (not the 13-line usage
    block, issue 50 item 8)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n{self.prog} --help lists every flag\n")


def did_you_mean(extra: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """``unrecognized arguments: …``, with the nearest flag for a mistyped one."""
    known = [flag for action in parser._actions for flag in action.option_strings]
    said = []
    for word in extra:
        name = word.split("=", 1)[0]
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6) if name.startswith("--") else []
        said.append(f"{word} (did you mean {close[0]}?)" if close else word)
    return f"unrecognized arguments: {' '.join(said)}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rootbound", description="MCP Roots done right.")
    parser.add_argument("--version", action="version", version=f"rootbound {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Brief)
    serve_cli.add_parser(commands)
    commands.add_parser("audit", help="prove whether an MCP server can be made to leave its roots", add_help=False)
    commands.add_parser("docs", help="print the documentation (rootbound docs NAME; no NAME: the list)", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["serve"], ["audit"]) and not {"-h", "--help"} & set(argv):
        refusal = needs_mcp_2(f"rootbound {argv[0]}")
        if refusal is not None:  # the library runs on mcp 1.x; the server and the auditor are built on 2.x
            print(f"rootbound: {refusal}", file=sys.stderr)
            return 64
    if argv[:1] == ["audit"]:  # imported only here, so `rootbound serve` never loads the audit package
        from rootbound.audit import cli as audit_cli

        return audit_cli.main(argv[1:])
    if argv[:1] == ["docs"]:  # works without the mcp SDK: an installed wheel's pages, or a checkout's docs/
        from rootbound.workspace.docs_pages import main as docs_main

        return docs_main(argv[1:])
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # reported by the subcommand's parser, so the usage shown is the one that was meant
        owner = getattr(args, "command_parser", None)
        owner = owner if isinstance(owner, argparse.ArgumentParser) else parser
        owner.error(did_you_mean(extra, owner))
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "serve":
        return serve_cli.run(args)
    parser.error("unknown command")  # pragma: no cover - argparse rejects it first


if __name__ == "__main__":
    sys.exit(main())
