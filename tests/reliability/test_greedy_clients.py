"""One greedy loopback client cannot take ``rootbound serve`` from the others (issue 48).

Each test runs a real ``rootbound serve --http 127.0.0.1:0`` subprocess; the attacker and the victim are separate
clients (their own connections and sessions). Asserted: outcomes only — the attacker's calls get their answer,
the victim's calls are answered (not busy, not the deadline, its session kept) while the attacker runs, and once
the attacker stops the server's threads and fds come back to where they were (``/proc``). Never a time.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.helpers.greedy import answered, baseline_counts, fds_of, session, settle_counts
from tests.helpers.serve_process import http_serve_process, serve_cli, text_of
from tests.workspace.test_hardening import ACCEPT, _bare_initialize


def _dirs(tmp_path: Path, *names: str) -> list[Path]:
    made = []
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.txt").write_text("alpha\nbeta\ngamma\n")
        made.append(tmp_path / name)
    return made


@pytest.mark.timeout(900)
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
            base = await baseline_counts(process.pid, url, victim, attacker, write=True)
            before = fds_of(process.pid)
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
            assert after[0] <= base[0] and after[1] <= base[1], (after, base, _more(fds_of(process.pid), before))

        anyio.run(main)
    assert (victim / "a.txt").read_text() == "alpha\nbeta\ngamma\n"


@pytest.mark.timeout(900)
def test_rows1_2_a_flood_of_costly_edits_leaves_the_victim_its_workers_and_write_threads(tmp_path: Path) -> None:
    """Row 1: 4 sessions x 4 edits of a 90 KB old text on a 240 KB file; row 2: one stateless 2026-07-28 client
    with 60 of them in flight. Before, the edits ran on past their deadline answer, keeping every write thread
    and worker: the victim's calls waited for one until their own deadline. Now each edit stops with its call, and
    one client holds at most its share (24 of 32 workers, 12 of 16 write slots)."""
    attacker, victim = _dirs(tmp_path, "attacker", "victim")
    (attacker / "big.txt").write_text("    x\n" * 40_000)
    old = "  x\n" * 22_500
    args = [str(tmp_path), "--writable", "--tool-timeout", "20"]
    with http_serve_process(args) as (url, process):

        async def main() -> None:
            base = await baseline_counts(process.pid, url, victim, attacker, write=True)
            before = fds_of(process.pid)

            async def edits(mode: str, count: int) -> None:
                async def one() -> None:
                    with contextlib.suppress(Exception):  # the attacker's own fate is not the point
                        await text_of(
                            client, "edit_file", path=str(attacker / "big.txt"), old_string=old, new_string="Q"
                        )

                async with session(url, [attacker], mode=mode) as client, anyio.create_task_group() as tasks:
                    for _ in range(count):
                        tasks.start_soon(one)

            async with anyio.create_task_group() as tasks:
                for _ in range(4):
                    tasks.start_soon(edits, "legacy", 4)
                tasks.start_soon(edits, "2026-07-28", 60)
                await anyio.sleep(1.0)
                async with session(url, [victim]) as client:
                    for n in range(3):
                        await answered(client, "read_file", path=str(victim / "a.txt"))
                        await answered(client, "list_directory", path=str(victim))
                        await answered(client, "write_file", path=str(victim / f"w{n}.txt"), content="w\n")
            after = await settle_counts(process.pid, url, victim, base)
            assert after[0] <= base[0] and after[1] <= base[1], (after, base, _more(fds_of(process.pid), before))

        anyio.run(main)
    assert [(victim / f"w{n}.txt").read_text() for n in range(3)] == ["w\n"] * 3
    assert (attacker / "big.txt").read_text() == "    x\n" * 40_000


@pytest.mark.timeout(900)
def test_row3_greedy_greps_never_queue_the_victims_first_grep_behind_them(tmp_path: Path) -> None:
    """Row 3: 10 sessions x 4 greps with literal-free regexes and a stateless client with 40 in flight, over a
    tree of 20,000 files (the index off: every grep walks). Before, one first-come walk queue (1 slot on 2 cores)
    put the victim's 3-file grep behind all of them, past its deadline. Now a walk slot is kept for clients
    without a backlog: the victim's grep is answered."""
    attacker, victim = _dirs(tmp_path, "attacker", "victim")
    for name in ("b.txt", "c.txt"):
        (victim / name).write_text("alpha\nneedle here\n")
    chunk = "".join(f"row {n} value {n * 7919 % 100003} text\n" for n in range(40))
    for d in range(100):  # 20,000 small files: about a second a walk on 2 cores
        (attacker / f"d{d:02d}").mkdir()
        for n in range(200):
            (attacker / f"d{d:02d}" / f"f{n:03d}.txt").write_text(chunk)
    with http_serve_process([str(tmp_path), "--tool-timeout", "6", "--no-index"]) as (url, process):

        async def main() -> None:
            base = await baseline_counts(process.pid, url, victim, attacker)
            before = fds_of(process.pid)
            stop = anyio.Event()

            async def greps(mode: str, count: int) -> None:
                async def one(n: int) -> None:
                    while not stop.is_set():
                        with contextlib.suppress(Exception):
                            await text_of(
                                client,
                                "grep",
                                pattern=rf"(\w+\s+){{2}}\d{{5}}[{n % 10}-9]\b",
                                path=str(attacker),
                            )

                async with session(url, [attacker], mode=mode) as client, anyio.create_task_group() as tasks:
                    for n in range(count):
                        tasks.start_soon(one, n)

            async with anyio.create_task_group() as tasks:
                for _ in range(10):
                    tasks.start_soon(greps, "legacy", 4)
                tasks.start_soon(greps, "2026-07-28", 40)
                await anyio.sleep(2.0)
                async with session(url, [victim]) as client:
                    for _ in range(3):
                        text = await answered(client, "grep", pattern="needle", path=str(victim))
                        assert text.count("needle") == 2, text
                stop.set()
            after = await settle_counts(process.pid, url, victim, base)
            assert after[0] <= base[0] and after[1] <= base[1], (after, base, _more(fds_of(process.pid), before))

        anyio.run(main)


def _more(now: list[str], before: list[str]) -> list[str]:
    left = list(before)
    extra = []
    for name in now:
        if name in left:
            left.remove(name)
        else:
            extra.append(name)
    return extra


def test_row9_apply_patch_errors_never_echo_the_new_path_components(tmp_path: Path) -> None:
    """Row 9: an ``apply_patch`` into new directories that fails named the target, new components and all: the
    client's own words back. Now the error names the operation by its patch line (and an existing file's path)."""
    attacker, victim = _dirs(tmp_path, "attacker", "victim")
    patches = [
        ("Add File: new/evil1/x.txt", "+a", "Add File: new/evil1/x.txt", "+b"),  # the same file twice
        ("Add File: new/evil2/x.txt", "+a", "Add File: new/evil2", "+b"),  # a file where a new directory goes
        ("Add File: new/evil3", "+a", "Add File: new/evil3/y.txt", "+b"),  # a directory where a new file goes
        ("Add File: new/evil4/x.txt", "+a", "Update File: evil5-missing.txt", "@@", "-a", "+b"),
    ]
    with http_serve_process([str(tmp_path), "--writable"]) as (url, _process):

        async def main() -> None:
            async with session(url, [attacker]) as client:
                for body in patches:
                    patch = (
                        "\n".join(
                            [
                                "*** Begin Patch",
                                *(f"*** {line}" if " File: " in line else line for line in body),
                                "*** End Patch",
                            ]
                        )
                        + "\n"
                    )
                    failed, text = await text_of(client, "apply_patch", patch=patch)
                    assert failed and "patch line" in text, text
                    assert "evil" not in text, text
            async with session(url, [victim]) as client:
                await answered(client, "read_file", path=str(victim / "a.txt"))

        anyio.run(main)
    assert sorted(p.name for p in attacker.iterdir()) == ["a.txt"]  # nothing changed


def test_row12_a_host_naming_another_local_port_is_refused(tmp_path: Path) -> None:
    """Row 12: ``Host: 127.0.0.1:<another port>`` was accepted (the port not compared). Now 421; the right port
    and the victim's session are served. An ``Origin`` naming another port is 403 likewise."""
    (victim,) = _dirs(tmp_path, "victim")
    with http_serve_process([str(tmp_path)]) as (url, _process):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}
        headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28"}
        for other in (port + 1 if port < 65535 else port - 1, 80, 8080):
            if other == port:
                continue
            answer = httpx2.post(url, json=body, headers={**headers, "host": f"127.0.0.1:{other}"})
            assert answer.status_code == 421, (other, answer.status_code)
            answer = httpx2.post(url, json=body, headers={**headers, "host": f"localhost:{other}"})
            assert answer.status_code == 421, (other, answer.status_code)
            answer = httpx2.post(url, json=body, headers={**headers, "origin": f"http://127.0.0.1:{other}"})
            assert answer.status_code == 403, (other, answer.status_code)  # a page served from another port
        assert httpx2.post(url, json=body, headers=headers).status_code != 421

        async def main() -> None:
            async with session(url, [victim]) as client:
                await answered(client, "read_file", path=str(victim / "a.txt"))

        anyio.run(main)


@pytest.mark.timeout(900)
def test_row4_a_client_filling_the_session_table_never_evicts_a_waiting_victim(tmp_path: Path) -> None:
    """Row 4: one client opens a session after another and keeps them useful (a tool call each), past the cap of
    12, while the victim's session waits on its human. Before, the least recently useful session was evicted: the
    victim's ("Session not found"). Now only a client over its share of the table loses sessions, its own oldest
    idle ones first: the victim's next call is answered."""
    (victim,) = _dirs(tmp_path, "victim")
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_roots", "arguments": {}}}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    with http_serve_process([str(tmp_path), "--max-sessions", "12", "--init-timeout", "120"]) as (url, _process):

        async def main() -> None:
            async with session(url, [victim]) as client:
                await answered(client, "read_file", path=str(victim / "a.txt"))
                with httpx2.Client(timeout=60) as http:  # the attacker: its own connection
                    opened: list[str] = []
                    for _ in range(36):
                        sid = _bare_initialize(http, url)
                        headers = {"accept": ACCEPT, "mcp-protocol-version": "2025-11-25", "mcp-session-id": sid}
                        assert http.post(url, json=note, headers=headers).status_code == 202
                        opened.append(sid)
                        for recent in opened[-3:]:  # keeps its newest sessions useful
                            http.post(url, json=call, headers={**headers, "mcp-session-id": recent})
                for _ in range(3):
                    await answered(client, "read_file", path=str(victim / "a.txt"))

        anyio.run(main)


@pytest.mark.timeout(900)
def test_row8_a_link_above_the_index_cache_is_never_followed(tmp_path: Path) -> None:
    """Row 8: a local process plants a link above the cache folder (``$ROOTBOUND_CACHE_HOME/rootbound`` -> elsewhere).
    Before, start-up and ``--clear-index`` removed every digit-named folder in the link's target and the postings
    were written there. Now the path is opened one component at a time without following links: nothing in the
    target is removed or written (the postings stay in memory), and the victim's grep is answered."""
    (tmp_path / "served").mkdir()
    (victim,) = _dirs(tmp_path / "served", "victim")
    target = tmp_path / "elsewhere"
    (target / "index" / "999999").mkdir(parents=True)  # a digit-named folder of no running process
    (target / "index" / "999999" / "keep.txt").write_text("keep\n")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "rootbound").symlink_to(target)
    env = {"ROOTBOUND_CACHE_HOME": str(tmp_path / "cache")}
    cleared = serve_cli(str(tmp_path / "served"), "--clear-index", env=env)
    assert cleared.returncode == 0, cleared.stderr
    with http_serve_process([str(tmp_path / "served"), "--index-at-start"], env=env) as (url, _process):

        async def main() -> None:
            async with session(url, [victim]) as client:
                for _ in range(3):
                    text = await answered(client, "grep", pattern="beta", path=str(victim))
                    assert "beta" in text, text

        anyio.run(main)
    assert sorted(p.name for p in (target / "index").iterdir()) == ["999999"]
    assert (target / "index" / "999999" / "keep.txt").read_text() == "keep\n"


SMALL_INDEX = (
    "import sys\n"
    "from rootbound.search.index import registry, tree_index\n"
    "registry.IndexRegistry.__init__.__kwdefaults__['limits'] = tree_index.IndexLimits(max_entries=50)\n"
    "from rootbound.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


@pytest.mark.timeout(900)
def test_row7_the_index_status_line_says_nothing_of_the_dir_beyond_the_sessions_root(tmp_path: Path) -> None:
    """Row 7: a client whose root is DIR/victim was told how the whole DIR's index stood ("over 50 entries",
    a build's percentage). Now a start below the DIR gets a status without the DIR's figures; the grep is
    answered."""
    (victim,) = _dirs(tmp_path, "victim")
    for n in range(80):  # the DIR: more entries than this server's index takes
        (tmp_path / f"other{n}.txt").write_text("beta\n")
    args = [str(tmp_path), "--index-at-start"]
    with http_serve_process(args, launcher=("-c", SMALL_INDEX)) as (url, _process):

        async def main() -> None:
            async with session(url, [victim]) as client:
                for _ in range(3):
                    text = await answered(client, "grep", pattern="beta", path=str(victim))
                    assert text.count("beta") == 1, text
                    assert "entries" not in text and "%" not in text and "MiB" not in text, text
                    await anyio.sleep(0.5)

        anyio.run(main)
