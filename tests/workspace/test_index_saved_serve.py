"""Real ``rootbound serve`` processes one after another on one tree (issue 51): each new server takes up the index
the last one saved, the tree changed by a separate process while no server ran (every kind of change the churn
test makes) and once the saved file tampered with (bytes flipped); every answer, the index's and the scan's while
it is taken up, equals a ``--no-index`` server's (a full scan) over the same stdio SDK client."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from rootbound.search.index.saved import RACY_NS, saved_name
from tests.helpers.index_churn import CHURN_QUERIES, build_tree, change_in_another_process
from tests.helpers.serve_process import serve, text_of

CALLS: list[tuple[str, dict[str, Any]]] = [
    *(("grep", {"pattern": p, "regex": r, "ignore_case": i, "max_per_file": 50}) for p, r, i in CHURN_QUERIES),
    ("grep", {"pattern": "getaddrinfo", "include_ignored": True, "files_only": True}),
    ("search_files", {"pattern": "*.py"}),
]


def _body(text: str) -> str:
    lines = text.splitlines()
    status = lines and (lines[-1] == "[index]" or lines[-1].startswith("[scan"))  # how it was answered
    return "\n".join(lines[:-1] if status else lines)


async def _answers(root: Path, args: list[str], env: dict[str, str], *, until_index: bool) -> tuple[list[str], bool]:
    """Every call's answer from a new server; with ``until_index``, asked again until the index answers them
    (bounded): whether it did."""
    said = ["--index-status", "always"]  # every answer says which path answered it (the default says it once)
    async with serve("stdio", [*args, *said, str(root)], mode="legacy", provider=None, env=env) as client:
        got: list[str] = []
        for tool, arguments in CALLS:
            error, text = await text_of(client, tool, **arguments)
            assert not error, text
            got.append(text)
        indexed = False
        end = time.monotonic() + 120
        while until_index and not indexed and time.monotonic() < end:
            await anyio.sleep(0.2)
            got = []
            for tool, arguments in CALLS:
                error, text = await text_of(client, tool, **arguments)
                assert not error, text
                got.append(text)
            indexed = all(text.endswith("[index]") for text in got)
        return got, indexed


@pytest.mark.timeout(900)
def test_restarted_servers_answer_as_a_full_scan_with_the_tree_changed_between(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    build_tree(root, fillers=40)
    outside = tmp_path / "outside"
    outside.mkdir()
    env = {"ROOTBOUND_CACHE_HOME": str(tmp_path / "cache")}
    saved = tmp_path / "cache" / "rootbound" / "index" / "saved" / saved_name(str(root.resolve()))
    time.sleep(RACY_NS / 1e9 + 0.2)

    async def main() -> None:
        _, indexed = await _answers(root, [], env, until_index=True)
        assert indexed and saved.exists()
        for step in range(8):
            change_in_another_process(root, outside, step * 5)  # while no server runs
            if step == 4:  # tampered with: a byte flipped in the middle
                data = bytearray(saved.read_bytes())
                data[len(data) // 2] ^= 0x40
                saved.write_bytes(bytes(data))
            want, _ = await _answers(root, ["--no-index"], env, until_index=False)
            first, _ = await _answers(root, [], env, until_index=False)  # right after start: scans while checked
            assert [_body(t) for t in first] == [_body(t) for t in want], step
            got, indexed = await _answers(root, [], env, until_index=True)
            assert indexed, step
            assert [_body(t) for t in got] == [_body(t) for t in want], step

    anyio.run(main)
