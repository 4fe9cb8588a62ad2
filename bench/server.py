"""Server-side cost of roots, side by side in one run: ms per tool call over 1,000 calls, in-memory and stdio.

    .venv/bin/python bench/server.py [--calls N] [--repeat R]

Handshake era: the SDK lowlevel tool that fetches no roots (baseline), the same + ``roots/list`` on every call,
``MCPServer`` + ``Resolve(ListRoots)``, and rootbound (cached). Targets: rootbound ≤ 1.15× baseline, and ≥ 1.8×
faster than MCPServer + Resolve. Modern era: the raw SDK ``InputRequiredResult`` tool vs rootbound, two rounds per
call each; target ≤ 1.10×. Each figure is the best of ``--repeat`` interleaved rounds (the least disturbed).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client.stdio import StdioServerParameters

from mcp import Client

sys.path.insert(0, str(Path(__file__).parent))
from bench_servers import build

HERE = Path(__file__).parent


async def _roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root.model_validate({"uri": "file:///a"})])


async def measure(variant: str, transport: str, mode: str, calls: int) -> float:
    """Milliseconds per ``tools/call`` on one warm connection."""
    target: Any
    if transport == "memory":
        target = build(variant)
    else:
        target = StdioServerParameters(command=sys.executable, args=[str(HERE / "bench_servers.py"), variant])
    async with Client(target, mode=mode, list_roots_callback=_roots) as client:
        for _ in range(min(50, calls)):
            await client.call_tool("t", {})
        start = time.perf_counter()
        for _ in range(calls):
            result = await client.call_tool("t", {})
        elapsed = time.perf_counter() - start
        assert not result.is_error
    return elapsed / calls * 1000


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows: list[tuple[str, str, dict[str, float]]] = [
        ("legacy", "baseline", {}),
        ("legacy", "roots_every_call", {}),
        ("legacy", "mcpserver_resolve", {}),
        ("legacy", "rootbound", {}),
        ("2026-07-28", "raw_mrtr", {}),
        ("2026-07-28", "rootbound", {}),
    ]
    for transport in ("memory", "stdio"):
        # Interleaved rounds: every variant runs once per round, so drift in the machine's load hits all alike.
        for _ in range(args.repeat):
            for mode, variant, figures in rows:
                ms = await measure(variant, transport, mode, args.calls)
                figures[transport] = min(ms, figures.get(transport, ms))
    print(f"{args.calls} calls per run, best of {args.repeat} (ms per tool call)\n")
    print(f"{'era':<11} {'server':<22} {'memory':>8} {'ratio':>7} {'stdio':>8} {'ratio':>7}")
    baselines = {"legacy": rows[0][2], "2026-07-28": rows[4][2]}
    for mode, variant, figures in rows:
        base = baselines[mode]
        cells = "".join(f" {figures[t]:>8.3f} {figures[t] / base[t]:>6.2f}x" for t in ("memory", "stdio"))
        print(f"{mode:<11} {variant:<22}{cells}")
    rb, resolve = rows[3][2], rows[2][2]
    print("\ntargets")
    for transport in ("memory", "stdio"):
        legacy = rb[transport] / rows[0][2][transport]
        speedup = resolve[transport] / rb[transport]
        modern = rows[5][2][transport] / rows[4][2][transport]
        print(
            f"  {transport:<6} rootbound/baseline {legacy:.2f}x (<= 1.15)  "
            f"MCPServer+Resolve/rootbound {speedup:.2f}x (>= 1.8)  modern rootbound/raw {modern:.2f}x (<= 1.10)"
        )


if __name__ == "__main__":
    anyio.run(main)
