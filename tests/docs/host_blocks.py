"""The README's "Use it from a host" blocks, read the way each host reads its configuration (issue 38): JSON
``mcpServers`` (Claude Desktop, Cursor, Gemini CLI) and ``servers`` (VS Code), Codex CLI's TOML, ``claude mcp add``
command lines, and the install lines (``pipx``, ``uvx``, ``python -m``). Each block becomes the entries a host
would hold: a command with its arguments (stdio) or a URL (HTTP)."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.docs.test_readme_runs import README, Block, blocks

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the suite runs on 3.11+; tomli is the same parser
    import tomli as tomllib

SECTION = "## Use it from a host"
HERE = "tests/docs/test_host_blocks.py"


@dataclass(frozen=True)
class Stdio:
    host: str
    command: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Http:
    host: str
    url: str


@dataclass(frozen=True)
class Install:
    tool: str
    argv: tuple[str, ...]


Entry = Stdio | Http | Install


def _marker(lines: list[str], fence_line: int) -> str:
    """The non-blank line before a block's fence (``fence_line`` is 1-based)."""
    return next((line for line in reversed(lines[: fence_line - 1]) if line.strip()), "")


def section_blocks() -> list[tuple[Block, str]]:
    """The blocks between the section's heading and the next ``## ``, each with the line before its fence."""
    text = README.read_text()
    lines = text.splitlines()
    start = lines.index(SECTION)
    end = next(index for index in range(start + 1, len(lines)) if lines[index].startswith("## "))
    return [(block, _marker(lines, block.line)) for block in blocks(README) if start < block.line - 1 < end]


def _json_entries(config: dict[str, Any]) -> list[Entry]:
    found: list[Entry] = []
    if "mcpServers" in config:
        for entry in config["mcpServers"].values():
            if "command" in entry:
                assert set(entry) <= {"command", "args", "env"}, entry
                found.append(Stdio("mcpServers", entry["command"], tuple(entry.get("args", []))))
            else:
                assert set(entry) == {"type", "url"} and entry["type"] == "http", entry
                found.append(Http("mcpServers", entry["url"]))
    if "servers" in config:  # VS Code: every entry says its type
        for entry in config["servers"].values():
            if entry["type"] == "stdio":
                assert set(entry) <= {"type", "command", "args", "env"}, entry
                found.append(Stdio("vscode", entry["command"], tuple(entry.get("args", []))))
            else:
                assert entry["type"] == "http" and set(entry) == {"type", "url"}, entry
                found.append(Http("vscode", entry["url"]))
    assert found and set(config) <= {"mcpServers", "servers"}, config
    return found


def _toml_entries(config: dict[str, Any]) -> list[Entry]:
    assert set(config) == {"mcp_servers"}, config
    found: list[Entry] = []
    for entry in config["mcp_servers"].values():
        assert set(entry) <= {"command", "args", "env"}, entry
        found.append(Stdio("codex", entry["command"], tuple(entry.get("args", []))))
    return found


def _claude_add(argv: list[str]) -> Entry:
    """``claude mcp add [options] NAME -- COMMAND ARGS`` (stdio) or ``... --transport http NAME URL``."""
    stdio_tail: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, stdio_tail = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser(prog="claude mcp add", exit_on_error=False)
    parser.add_argument("--transport", "-t", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--scope", "-s", choices=["local", "user", "project"], default="local")
    parser.add_argument("--env", "-e", action="append", default=[])
    parser.add_argument("name")
    parser.add_argument("target", nargs="?")
    parsed = parser.parse_args(argv)
    if parsed.transport == "http":
        assert not stdio_tail and parsed.target is not None
        return Http("claude-code", parsed.target)
    assert parsed.target is None and stdio_tail, "a stdio server comes after --"
    return Stdio("claude-code", stdio_tail[0], tuple(stdio_tail[1:]))


def _console_entries(text: str) -> list[Entry]:
    found: list[Entry] = []
    for line in text.splitlines():
        argv = shlex.split(line, comments=True)
        if argv[:3] == ["claude", "mcp", "add"]:
            found.append(_claude_add(argv[3:]))
        elif argv[0] in {"pipx", "uvx"}:
            found.append(Install(argv[0], tuple(argv[1:])))
        elif argv[0] in {"python", "python3", "rootbound"}:
            found.append(Stdio("shell", argv[0], tuple(argv[1:])))
        else:
            raise AssertionError(f"a console line of a kind this module does not read: {line!r}")
    return found


def entries(block: Block) -> list[Entry]:
    if block.lang == "json":
        return _json_entries(json.loads(block.text))
    if block.lang == "toml":
        return _toml_entries(tomllib.loads(block.text))
    if block.lang == "console":
        return _console_entries(block.text)
    raise AssertionError(f"README.md:{block.line}: a {block.lang or 'plain'} block in the host section")


def uvx_command(args: tuple[str, ...]) -> tuple[str | None, list[str]]:
    """``uvx [--from SPEC] rootbound ARGS``: the ``--from`` spec (None: the package from the index) and ARGS."""
    rest = list(args)
    spec = None
    if rest[:1] == ["--from"]:
        spec, rest = rest[1], rest[2:]
    assert rest[:1] == ["rootbound"], "uvx runs the rootbound command"
    return spec, rest[1:]


def rootbound_argv(entry: Stdio) -> list[str]:
    """The arguments ``rootbound`` itself receives from a stdio entry, whatever starts it."""
    name = Path(entry.command).name
    if name == "rootbound":
        return list(entry.args)
    if re.fullmatch(r"python(3(\.\d+)?)?", name):
        assert entry.args[:2] == ("-m", "rootbound"), entry
        return list(entry.args[2:])
    if name == "uvx":
        return uvx_command(entry.args)[1]
    raise AssertionError(f"{entry.host}: a command this module does not know: {entry.command}")
