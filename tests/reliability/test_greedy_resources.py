"""One greedy client flooding resources calls cannot take ``rootbound serve`` from another (issues 48 and 49).

Resources calls are under issue 48's per-client accounting: a fair share of the worker threads (``CallSlots``),
held until the work has ended, and large reads reserve their room in the answers' budget before reading. A real
``rootbound serve --http`` subprocess; the attacker and the victim are separate clients (their own connections
and sessions). Asserted: outcomes only. Each attacker call gets its answer or the budget's "busy" (never anything
else); the victim's ``resources/read`` and ``resources/directory/read`` are answered while the attacker keeps
up to :data:`FLOOD` calls in flight; once the attacker stops, the server's threads and fds come back to where
they were (``/proc``); and a read too large for one HTTP message is refused saying how to read it in parts (it
broke the client's SSE stream before). Never a time.

What this does not decide: whether the per-client slots apply. Over HTTP on a loaded 2-core machine the flood
saturates the event loops (both processes'), not the worker threads: with 160 calls in flight the worker queue
peaked at 16 to 20 calls, and the victim's calls were answered alike with the slots bypassed (attacker calls
answered meanwhile per victim call: 53, 20, 25, 18, 18, 7 bypassed; 105, 22, 7, 10, 8, 6 with the slots). That is
decided by counting in ``tests/workspace/resources/test_resources_fairness.py``, which fails when resources calls
bypass the slots.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from mcp import Client
from rootbound.core.uri import path_to_uri
from tests.helpers.greedy import baseline_counts, fds_of, session, settle_counts
from tests.helpers.serve_process import http_serve_process
from tests.workspace.resources.test_resources_wire import directory_read

FLOOD = 160  # attacker requests in flight at once, refilled as they end
BIG = 900 * 1024  # fits in one HTTP answer; 4 copies of it are reserved while in flight


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    attacker, victim = tmp_path / "attacker", tmp_path / "victim"
    for root in (attacker, victim):
        root.mkdir()
        (root / "a.txt").write_text("alpha\nbeta\ngamma\n")
    (attacker / "big.txt").write_text(("x" * 1023 + "\n") * (BIG // 1024))
    (attacker / "huge.txt").write_text(("y" * 1023 + "\n") * 3 * 1024)  # 3 MiB: over one HTTP message
    (attacker / "hashed.txt").write_bytes((b"z" * 1023 + b"\n") * 16 * 1024)  # 16 MiB: hashed whole for a digest
    (attacker / "many").mkdir()
    for n in range(1000):
        (attacker / "many" / f"entry-{n:04}.txt").write_text("e\n")
    return attacker, victim


@pytest.mark.timeout(900)
def test_a_flood_of_resources_calls_leaves_the_victim_its_reads(tmp_path: Path) -> None:
    attacker, victim = _dirs(tmp_path)
    big, many = path_to_uri(attacker / "big.txt"), path_to_uri(attacker / "many")
    hashed = path_to_uri(attacker / "hashed.txt") + "?start_line=1&end_line=1"
    outcomes: dict[str, int] = {"read": 0, "busy": 0}
    unexpected: list[str] = []

    def done() -> int:
        return outcomes["read"] + outcomes["busy"] + len(unexpected)

    with http_serve_process([str(tmp_path), "--max-read", str(4 << 20), "--tool-timeout", "10"]) as (url, process):

        async def one_attack(client: Client, n: int) -> None:
            try:
                if n % 8 == 0:
                    read = await client.read_resource(big)
                    assert len(read.contents) == 1
                elif n % 8 == 1:
                    await directory_read(client, many)
                else:  # one line answered, 16 MiB hashed for its digest: cheap to ask, costly to serve
                    await client.read_resource(hashed)
                outcomes["read"] += 1
            except MCPError as error:
                if str(error).startswith("busy:"):  # the answers' budget: refused before anything was read
                    outcomes["busy"] += 1
                else:
                    unexpected.append(str(error))

        async def attack(stop: anyio.Event) -> None:
            async with session(url, [attacker]) as client:
                n = 0
                limit = anyio.Semaphore(FLOOD)
                async with anyio.create_task_group() as tasks:
                    while not stop.is_set():
                        await limit.acquire()
                        n += 1

                        async def go(k: int = n) -> None:
                            try:
                                await one_attack(client, k)
                            finally:
                                limit.release()

                        tasks.start_soon(go)

        async def main() -> None:
            async with session(url, [attacker]) as client:  # too big for one message: refused, saying how to read
                with pytest.raises(MCPError, match="read it in parts"):
                    await client.read_resource(path_to_uri(attacker / "huge.txt"))
            base = await baseline_counts(process.pid, url, victim, attacker)
            before = fds_of(process.pid)
            stop = anyio.Event()
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(attack, stop)
                while outcomes["read"] + outcomes["busy"] < FLOOD:  # the flood is on: a queue behind every call
                    await anyio.sleep(0.1)
                async with session(url, [victim]) as client:
                    for _ in range(3):
                        read = await client.read_resource(path_to_uri(victim / "a.txt"))
                        assert read.contents[0].text == "alpha\nbeta\ngamma\n"  # type: ignore[union-attr]
                        page = await directory_read(client, path_to_uri(victim))
                        assert [r["name"] for r in page["resources"]] == ["a.txt"]
                stop.set()
            assert unexpected == [], unexpected[:3]
            after = await settle_counts(process.pid, url, victim, base)
            assert after[0] <= base[0] and after[1] <= base[1], (
                after,
                base,
                sorted(set(fds_of(process.pid)) - set(before)),
            )

        anyio.run(main)
    assert outcomes["read"] > 0, outcomes
