"""Hand verification of a published MCP server, before any audit: plain ``mcp`` SDK client, stdio, one call at a time.

    python bench/audit_hand_call.py [--token TOK]... [--file PATH]... [--cwd DIR] [--env K=V]... [--list]
                                    [--call TOOL JSON]... -- COMMAND...

``--list`` prints each tool and its parameter names. Each ``--call`` sends ``tools/call`` with the JSON arguments
and prints whether the result was an error, its size, and which ``--token`` strings it holds (text, structured
content and resource text); then, for each ``--file``, whether it exists and whether it holds a token (a write
outside the workspace, proved on disk). Only yes/no and sizes are printed: ``-v`` adds the first 300 characters of
each result (for the write-up of a server's own behaviour, never committed verbatim).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp import ClientSession


def _text(result: Any) -> str:
    parts: list[str] = []
    for item in getattr(result, "content", None) or []:
        for attr in ("text", "blob"):
            value = getattr(item, attr, None)
            if isinstance(value, str):
                parts.append(value)
        resource = getattr(item, "resource", None)
        if resource is not None:
            parts.append(str(getattr(resource, "text", "") or getattr(resource, "blob", "")))
    structured = getattr(result, "structuredContent", None) or getattr(result, "structured_content", None)
    if structured:
        parts.append(json.dumps(structured))
    return "\n".join(parts)


def _file_state(path: Path, tokens: list[str]) -> str:
    if not path.exists():
        return "absent"
    try:
        data = path.read_bytes() if path.is_file() else b""
    except OSError as exc:
        return f"present (unreadable: {exc.strerror})"
    held = [t for t in tokens if t.encode() in data]
    return f"present, {len(data)} bytes, tokens {len(held)}/{len(tokens)}"


async def run(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    for pair in args.env:
        key, _, value = pair.partition("=")
        env[key] = value
    params = StdioServerParameters(command=args.command[0], args=args.command[1:], env=env, cwd=args.cwd)
    with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - /dev/null, once
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            if args.list:
                for tool in tools:
                    schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None) or {}
                    props = schema.get("properties", {})
                    print(f"tool {tool.name}({', '.join(props)})")
            for n, (name, raw) in enumerate(args.call, 1):
                try:
                    with anyio.fail_after(args.timeout):
                        result = await session.call_tool(name, json.loads(raw))
                except TimeoutError:
                    print(f"call {n} {name}: timeout")
                    continue
                except Exception as exc:  # a protocol error is an answer too
                    print(f"call {n} {name}: protocol error {type(exc).__name__}")
                    continue
                text = _text(result)
                held = [i for i, t in enumerate(args.token, 1) if t in text]
                error = bool(getattr(result, "isError", False) or getattr(result, "is_error", False))
                print(f"call {n} {name}: error={error} size={len(text)} tokens={held or 'none'}")
                if args.verbose:
                    print("   ", text[:300].replace("\n", " | "))
                for path in args.file:
                    print(f"    file {path}: {_file_state(Path(path), args.token)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--token", action="append", default=[])
    parser.add_argument("--file", action="append", default=[])
    parser.add_argument("--cwd", default=None)
    parser.add_argument("--env", action="append", default=[], metavar="K=V")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--call", action="append", nargs=2, default=[], metavar=("TOOL", "JSON"))
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    return anyio.run(run, args)


if __name__ == "__main__":
    sys.exit(main())
