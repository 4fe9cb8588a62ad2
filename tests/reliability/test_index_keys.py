"""The index's recorded walks are keyed by everything that shaped them (issue 48 row 6).

A walk applies the ignore files between the client's root and the walk's start (git and ripgrep apply them to the
start's tree), so the same start walked for a client whose root is ``DIR/a`` and for one whose root is ``DIR`` yields
different files when ``DIR/.gitignore`` says something about ``a``. Before, the index kept one recorded walk per
start and filter: whichever client walked first shaped the other's answers (a narrow client lost files to an ignore
file outside its roots, a wide one lost its own rules). Here two clients with different roots ask the same server,
in both orders, over real HTTP on 127.0.0.1, and every answer is compared with a server that scans (``--no-index``).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.helpers.greedy import answered, session
from tests.helpers.serve_process import http_serve_process

CALLS = (
    ("grep", {"pattern": "beta"}),
    ("grep", {"pattern": "be.a", "files_only": True}),
    ("search_files", {"pattern": "*.txt"}),
)


def _tree(served: Path) -> None:
    served.mkdir()
    (served / ".gitignore").write_text("hidden.txt\nsub/\n")
    for name in ("a", "b", "warm"):
        top = served / name
        (top / "sub").mkdir(parents=True)
        (top / ".ignore").write_text("own.txt\n")  # the client's own rules, inside its root
        for file in ("keep.txt", "hidden.txt", "own.txt", "sub/deep.txt"):
            (top / file).write_text("alpha\nbeta\n")


def _body(text: str) -> str:
    """The answer without its status line (``[index]``, ``[scan: ...]``): the index's own word on how it answered."""
    lines = text.splitlines()
    if lines and (lines[-1] == "[index]" or lines[-1].startswith("[scan")):
        lines = lines[:-1]
    return "\n".join(lines)


@pytest.mark.timeout(900)
def test_row6_a_walk_recorded_for_one_root_never_shapes_another_roots_answers(tmp_path: Path) -> None:
    served = tmp_path / "served"
    _tree(served)
    wide = [served]
    with (
        http_serve_process([str(served), "--index-at-start", "--index-status", "always"]) as (url, _indexed),
        http_serve_process([str(served), "--no-index"]) as (plain_url, _plain),
    ):

        async def ask(at: str, roots: list[Path], start: Path) -> list[str]:
            out = []
            async with session(at, roots) as client:
                for tool, arguments in CALLS:
                    out.append(await answered(client, tool, path=str(start), **arguments))
            return out

        async def main() -> None:
            async with session(url, wide) as client:  # until the index answers (a start the test does not ask)
                with anyio.fail_after(600):
                    while not (await answered(client, "grep", pattern="beta", path=str(served / "warm"))).endswith(
                        "[index]"
                    ):
                        await anyio.sleep(0.2)
            # a: the narrow client walks first; b: the wide one does.
            orders = {"a": ("narrow", "wide"), "b": ("wide", "narrow")}
            for name, order in orders.items():
                start = served / name
                roots = {"narrow": [start], "wide": wide}
                for who in order:
                    got = await ask(url, roots[who], start)
                    want = await ask(plain_url, roots[who], start)
                    for text in got:
                        assert text.endswith("[index]"), text  # the index answered, not a scan
                    assert [_body(t) for t in got] == [_body(t) for t in want], (name, who)
                    shown = _body(got[2])
                    assert str(start / "keep.txt") in shown and str(start / "own.txt") not in shown, (who, shown)
                    if who == "narrow":  # DIR/.gitignore is outside its root: nothing it says applies
                        assert str(start / "hidden.txt") in shown and str(start / "sub/deep.txt") in shown, shown
                    else:  # the wide client's own DIR/.gitignore applies to a's tree
                        assert str(start / "hidden.txt") not in shown and "deep.txt" not in shown, shown

        anyio.run(main)
