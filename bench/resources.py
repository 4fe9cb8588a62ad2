"""Resources against the equivalent tools, side by side in one run (issue 49): ms per call on one warm stdio
connection to ``rootbound serve``.

    .venv/bin/python bench/resources.py [--calls N] [--repeat R]

``resources/read`` of a 4 KiB file against ``read_file`` of it, and ``resources/directory/read`` of a 1,000-entry
directory paged to its end (200 per page: 5 requests) against ``list_directory`` paged the same way
(``max_entries=200``). Target: each resource ≤ 1.1× its tool. Each figure is the best of ``--repeat`` interleaved
rounds (the least disturbed). The resource read also hashes the whole file and looks the file up in its directory
for the ignore files; the tools do neither.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client.stdio import StdioServerParameters
from pydantic import BaseModel, ConfigDict

from mcp import Client
from rootbound.core.uri import path_to_uri


class _Page(BaseModel):
    model_config = ConfigDict(extra="allow")
    resources: list[dict[str, Any]]
    nextCursor: str | None = None


async def _directory_read(client: Client, uri: str) -> int:
    cursor, count = None, 0
    while True:
        params: dict[str, Any] = {"uri": uri} | ({"cursor": cursor} if cursor else {})
        request = types.Request[dict[str, Any], str](method="resources/directory/read", params=params)
        page = await client.session.send_request(request, _Page)
        count += len(page.resources)
        cursor = page.nextCursor
        if not cursor:
            return count


async def _list_directory(client: Client, path: str) -> int:
    cursor, count = None, 0
    while True:
        args: dict[str, Any] = {"path": path, "max_entries": 200} | ({"cursor": cursor} if cursor else {})
        result = await client.call_tool("list_directory", args)
        structured = result.structured_content or {}
        count += len(structured.get("entries", []))
        cursor = structured.get("nextCursor")
        if not cursor:
            return count


async def _time(call: Callable[[], Awaitable[object]], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await call()
    return (time.perf_counter() - start) / calls * 1000


async def main(calls: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve() / "work"  # noqa: ASYNC240 (set-up, before anything is timed)
        (root / "many").mkdir(parents=True)
        (root / "four.txt").write_text(("x" * 63 + "\n") * 64)  # 4 KiB
        for n in range(1000):
            (root / "many" / f"f{n:04}.txt").write_text("x\n")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "rootbound", "serve", str(root)],
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        async with Client(params, mode="legacy") as client:
            file_uri, many = path_to_uri(root / "four.txt"), str(root / "many")
            variants: dict[str, Callable[[], Awaitable[object]]] = {
                "read_file": lambda: client.call_tool("read_file", {"path": str(root / "four.txt")}),
                "resources/read": lambda: client.read_resource(file_uri),
                "list_directory (5 pages)": lambda: _list_directory(client, many),
                "resources/directory/read (5 pages)": lambda: _directory_read(client, path_to_uri(root / "many")),
            }
            assert await _list_directory(client, many) == await _directory_read(client, path_to_uri(root / "many"))
            best = {name: float("inf") for name in variants}
            for _ in range(repeat):
                for name, call in variants.items():
                    for _ in range(min(20, calls)):
                        await call()
                    best[name] = min(best[name], await _time(call, calls))
    for name, ms in best.items():
        print(f"{name:<36} {ms:8.3f} ms/call")
    ratio = best["resources/read"] / best["read_file"]
    print(f"resources/read / read_file:                 {ratio:.2f}x (target <= 1.10x)")
    ratio = best["resources/directory/read (5 pages)"] / best["list_directory (5 pages)"]
    print(f"directory/read / list_directory:            {ratio:.2f}x (target <= 1.10x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    anyio.run(main, options.calls, options.repeat)
