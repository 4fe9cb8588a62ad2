"""Conditional writes (issue 49: ``if_match`` on ``move`` and ``apply_patch``, ``create_only`` on ``apply_patch``)
while a separate process keeps swapping the directory they work in with a symlink to an outside directory, both
resolvers: nothing outside changes, no temp file is left, every file inside holds one complete content. One
operation names the outside file's own digest, so a read that reached outside would let it through."""

from __future__ import annotations

from collections.abc import Callable

from rootbound import RootedFS, RootsError
from rootbound.text.edit import content_hash
from rootbound.text.patch_grammar import parse_patch
from tests.confine.test_toctou import Arena
from tests.confine.test_write_races import CALLS, A, B, arena, check_after, fs  # noqa: F401 (fixtures)
from tests.confine.test_writes import snapshot
from tests.helpers.swap import exchanging_process

MOVED = content_hash(b"moved\n")
CREATED = content_hash(b"created\n")
OUTSIDE = content_hash(b"OUTSIDE-SECRET\n")


def patch(rooted: RootedFS, *body: str, if_match: dict[str, str] | None = None, create_only: bool = False) -> object:
    text = "\n".join(["*** Begin Patch", *body, "*** End Patch"])
    return rooted.apply_patch(parse_patch(text), if_match=if_match, create_only=create_only)


def operations(rooted: RootedFS) -> Callable[[], object]:
    state = {"i": 0}

    def next_call() -> object:
        i = state["i"] = state["i"] + 1
        kind = i % 6
        if kind == 0:
            return rooted.move("d/m", "d/sub/m", expected_hash=MOVED) if i % 2 else rooted.move("d/sub/m", "d/m")
        if kind == 1:
            return patch(rooted, f"*** Add File: d/new{i % 5}", "+created", create_only=True)
        if kind == 2:
            return patch(rooted, f"*** Delete File: d/new{(i - 1) % 5}", if_match={f"d/new{(i - 1) % 5}": CREATED})
        if kind == 3:
            old, new = (A, B) if i % 2 else (B, A)
            body = ("*** Update File: d/f", "@@", f"-{old.decode()[:-1]}", f"+{new.decode()[:-1]}")
            return patch(rooted, *body, if_match={"d/f": content_hash(old)})
        if kind == 4:  # the outside file's digest: matches only if the read went outside
            return patch(rooted, "*** Update File: d/f", "@@", "+pwned", if_match={"d/f": OUTSIDE})
        return rooted.move("d/f", "d/sub/f2", expected_hash=OUTSIDE)

    return next_call


def test_conditional_writes_while_another_process_swaps_the_directory(fs: RootedFS, arena: Arena) -> None:  # noqa: F811
    before = snapshot(arena.outside)
    ok = denied = 0
    call = operations(fs)
    with exchanging_process(arena.d, arena.link):
        for _ in range(CALLS):
            try:
                call()
                ok += 1
            except RootsError:
                denied += 1
    check_after(arena, before)
    assert not (arena.root / "d" / "sub" / "f2").exists()  # the outside digest never matched inside
    assert b"pwned" not in (arena.root / "d" / "f").read_bytes()
    assert ok > 0 and denied > 0, (ok, denied)
