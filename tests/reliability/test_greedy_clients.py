"""One greedy loopback client cannot take ``rootbound serve`` from the others (issue 48).

Each test runs a real ``rootbound serve --http 127.0.0.1:0`` subprocess; the attacker and the victim are separate
clients (their own connections and sessions). Asserted: outcomes only — the attacker's calls get their answer,
the victim's calls are answered (not busy, not the deadline, its session kept) while the attacker runs, and once
the attacker stops the server's threads and fds come back to where they were (``/proc``). Never a time.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.helpers.greedy import answered, baseline_counts, session, settle_counts
from tests.helpers.serve_process import http_serve_process, text_of


def _dirs(tmp_path: Path, *names: str) -> list[Path]:
    made = []
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.txt").write_text("alpha\nbeta\ngamma\n")
        made.append(tmp_path / name)
    return made


def test_row5_an_old_text_too_costly_to_match_is_refused_and_the_victim_is_served(tmp_path: Path) -> None:
    """4 edits of a 130 KB / 300 KB old text against 2 MB files whose lines repeat: before, each cost 10-30 s of
    CPU (every overlapping tolerant candidate compared in full) and ended "matched more than 1000 times" or at
    the deadline; now each is answered "too large to match" and narrows nothing else."""
    attacker, victim = _dirs(tmp_path, "attacker", "victim")
    (attacker / "indented.txt").write_text("    x\n" * 330_000)
    (attacker / "periodic.txt").write_text("a\n" * 1_000_000)
    costly = [
        ("indented.txt", "  x\n" * 33_000),  # the indentation tier: every line start a candidate
        ("periodic.txt", "a \n" * 100_000),  # the trailing-whitespace tier: the same
    ]
    with http_serve_process([str(tmp_path), "--writable", "--max-read", str(4 << 20)]) as (url, process):

        async def main() -> None:
            base = await baseline_counts(process.pid, url, victim)
            answers: list[str] = []

            async def attack(name: str, old: str) -> None:
                async with session(url, [attacker]) as client:
                    failed, text = await text_of(
                        client, "edit_file", path=str(attacker / name), old_string=old, new_string="Q"
                    )
                    assert failed
                    answers.append(text)

            async with anyio.create_task_group() as tasks:
                for name, old in costly * 2:
                    tasks.start_soon(attack, name, old)
                await anyio.sleep(0.5)
                async with session(url, [victim]) as client:
                    for n in range(3):
                        await answered(client, "read_file", path=str(victim / "a.txt"))
                        await answered(
                            client, "edit_file", path=str(victim / "a.txt"), old_string="beta", new_string=f"beta{n}"
                        )
                        await answered(
                            client, "edit_file", path=str(victim / "a.txt"), old_string=f"beta{n}", new_string="beta"
                        )
            assert len(answers) == 4
            for text in answers:
                assert "too large to match" in text and "narrow the old text" in text, text
            after = await settle_counts(process.pid, url, victim, base)
            assert after[0] <= base[0] and after[1] <= base[1], (after, base)

        anyio.run(main)
    assert (victim / "a.txt").read_text() == "alpha\nbeta\ngamma\n"
