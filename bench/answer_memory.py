"""Issue 24 #4: the server's memory with many large ``read_media_file`` answers in flight over HTTP.

A fresh ``rootbound serve --http 127.0.0.1:0 DIR`` per variant; ``--sessions`` raw handshake-era sessions (no
roots capability: the DIR is the root) each POST ``--calls`` ``read_media_file`` calls and read only the response
headers, so the answers stay in flight (a client that does not read). After 3 s the server's RSS and peak RSS
(``VmHWM``) are read from ``/proc``, then every answer's first bytes say what it was: the image, "over the media
limit", or "busy" (the answer budget). Printed per variant: answers by kind, RSS growth, and MB per call in flight.

Variants: ``now`` (media capped at what one SSE event to the SDK's client holds, and the answer budget);
``budget only`` (the media cap lifted to 4 MiB as before and no answer-size check, the budget on); ``neither``
(both lifted: the old behaviour);
with ``--baseline SRC`` also that source tree as it is (e.g. ``git archive main src | tar -x -C /tmp/base``).
Sizes: 4 MiB (the old media limit) and 771,072 bytes (the HTTP one now). Variants alternate for ``--rounds``
rounds so machine drift hits them alike; the best (lowest) peak is kept.

    .venv/bin/python bench/answer_memory.py --baseline /tmp/base/src
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx2

from _serve_url import served_url

SRC = Path(__file__).resolve().parent.parent / "src"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 17
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LAUNCHER = (
    "import os, sys\n"
    "try:\n"
    "    from rootbound.workspace.limits import answer_budget as a\n"
    "    if os.environ.get('BENCH_NO_CAP'): a.HTTP_MAX_MEDIA, a.HTTP_MAX_ANSWER = 4 << 20, 1 << 40\n"
    "    if os.environ.get('BENCH_NO_BUDGET'): a.ANSWERS.capacity = 1 << 50\n"
    "except ImportError:\n"
    "    pass\n"
    "from rootbound.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def memory(pid: int) -> dict[str, int]:
    found = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(("VmRSS", "VmHWM")):
                key, value = line.split(":")
                found[key] = int(value.split()[0]) // 1024
    return found


async def flood(url: str, path: Path, sessions: int, calls: int, pid: int) -> tuple[dict[str, int], int, int]:
    async with httpx2.AsyncClient(timeout=60, limits=httpx2.Limits(max_connections=100_000)) as http:
        responses = []
        for _ in range(sessions):
            init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}
            opened = await http.post(
                url, headers=ACCEPT, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
            )
            headers = {
                **ACCEPT,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-06-18",
            }
            await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            for call in range(calls):
                params = {"name": "read_media_file", "arguments": {"path": str(path)}}
                body = {"jsonrpc": "2.0", "id": call + 1, "method": "tools/call", "params": params}
                request = http.build_request("POST", url, headers=headers, json=body)
                responses.append(await http.send(request, stream=True))  # headers only: the answer is not read
        await asyncio.sleep(3)
        held = memory(pid)
        kinds: dict[str, int] = {}
        for response in responses:
            head = b""
            async for chunk in response.aiter_bytes():
                head += chunk
                if len(head) > 600:
                    break
            text = head.decode("utf-8", "replace")
            kind = "image" if '"type":"image"' in text else "over the media limit" if "media limit" in text else ""
            kind = kind or ("busy" if "busy" in text else (re.findall(r'"text":"([^"]{0,50})', text) or [text[:50]])[0])
            kinds[kind] = kinds.get(kind, 0) + 1
            await response.aclose()
    return kinds, held["VmRSS"], held["VmHWM"]


def run(
    variant: str, src: Path, env: dict[str, str], path: Path, sessions: int, calls: int
) -> tuple[str, dict[str, int], int, int]:
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, "serve", "--http", "127.0.0.1:0", str(path.parent)],
        env={**os.environ, "PYTHONPATH": str(src), "PYTHONWARNINGS": "ignore", **env},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(process, f"{variant}: the server")
        start = memory(process.pid)["VmRSS"]
        kinds, _rss, peak = asyncio.run(flood(url, path, sessions, calls, process.pid))
        return variant, kinds, start, peak
    finally:
        process.terminate()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--calls", type=int, default=4, help="read_media_file calls in flight per session")
    parser.add_argument(
        "--size", type=int, nargs="+", default=[4 * 1024 * 1024, 771_072], help="bytes of the image (each in turn)"
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="another source tree's src directory")
    args = parser.parse_args()
    for size in args.size:
        measure(args, size)


def measure(args: argparse.Namespace, size: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="answer-memory-")).resolve()
    image = work / "big.png"
    image.write_bytes(PNG + os.urandom(size - len(PNG)))
    variants: list[tuple[str, Path, dict[str, str]]] = [
        ("now", SRC, {}),
        ("budget only", SRC, {"BENCH_NO_CAP": "1"}),
        ("neither", SRC, {"BENCH_NO_CAP": "1", "BENCH_NO_BUDGET": "1"}),
    ]
    if args.baseline:
        variants.append(("baseline", args.baseline.resolve(), {}))
    best: dict[str, tuple[dict[str, int], int, int]] = {}
    for _ in range(args.rounds):
        for name, src, env in variants:
            _, kinds, start, peak = run(name, src, env, image, args.sessions, args.calls)
            if name not in best or peak - start < best[name][2] - best[name][1]:
                best[name] = (kinds, start, peak)
    load = os.getloadavg()[0]
    in_flight = args.sessions * args.calls
    print(
        f"{in_flight} read_media_file calls of a {size}-byte image in flight ({args.sessions} sessions x "
        f"{args.calls}), best of {args.rounds}, load {load:.1f}"
    )
    base = best.get("neither")
    for name, (kinds, start, peak) in best.items():
        grown = peak - start
        ratio = f"{grown / (base[2] - base[1]):.2f}x of 'neither'" if base and base[2] > base[1] else ""
        print(
            f"  {name:12} RSS {start:4d} -> peak {peak:5d} MB (+{grown:5d} MB, {grown / in_flight:5.1f} MB a call) "
            f"{ratio:20} answers {kinds}"
        )


if __name__ == "__main__":
    main()
