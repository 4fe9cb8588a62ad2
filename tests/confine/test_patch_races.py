"""``apply_patch`` under races, both resolvers: a separate process swaps the patched directory with a symlink to
the outside while multi-file patches run, and a thread moves the directory out of the root mid-patch.

After every run: the outside tree is byte for byte what it was, no temp file is left anywhere, and every file
inside holds one complete content. The mover race with counts of what landed outside is
``bench/write_escape.py`` (its ``patch`` column).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rootbound import RootedFS, RootsError
from rootbound.confine import atomic_write
from rootbound.confine.patch_ops import PatchOpFailed
from rootbound.text.patch_grammar import parse_patch
from tests.confine.test_toctou import Arena
from tests.confine.test_write_races import COMPLETE, A, B, arena, check_after, fs  # noqa: F401 (fixtures)
from tests.confine.test_writes import snapshot
from tests.helpers.swap import exchanging_process

CALLS = 240


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


def patches(i: int) -> str:
    """Multi-file patches on ``d/...``: replace one file and create another; create and delete; move and back."""
    kind = i % 3
    if kind == 0:
        content = (A if i % 2 else B).decode().rstrip("\n")
        return patch("*** Add File: d/f", f"+{content}", f"*** Add File: d/new{i % 5}", "+created")
    if kind == 1:
        return patch(f"*** Add File: d/sub/new{i % 4}", "+created", f"*** Delete File: d/new{(i - 1) % 5}")
    source, destination = ("d/m", "d/sub/m") if i % 2 else ("d/sub/m", "d/m")
    return patch(f"*** Update File: {source}", f"*** Move to: {destination}", "@@", "-moved", "+moved")


KEPT: list[Path] = []


def run_patches(fs: RootedFS, count: int) -> tuple[int, int]:  # noqa: F811
    ok = denied = 0
    for i in range(count):
        try:
            fs.apply_patch(parse_patch(patches(i)))
            ok += 1
        except PatchOpFailed as failure:
            KEPT.extend(failure.kept)  # could not be put back: its previous content is kept beside it
            denied += 1
        except RootsError:
            denied += 1
    return ok, denied


def test_swap_by_another_process_during_patches(fs: RootedFS, arena: Arena) -> None:  # noqa: F811
    before = snapshot(arena.outside)
    with exchanging_process(arena.d, arena.link):
        ok, denied = run_patches(fs, CALLS)
    check_after(arena, before)
    assert ok > 0 and denied > 0, (ok, denied)


def test_directory_moved_out_mid_patch_by_another_process(fs: RootedFS, arena: Arena) -> None:  # noqa: F811
    """A process renames ``d`` out of the root (and back) in a loop: a patch whose directory left the root is
    refused, none of its files lands outside, and what it staged is gone."""
    away = Path(arena.outside) / "moved-d"
    script = textwrap.dedent(
        """
        import os, sys, time
        a, b = sys.argv[1], sys.argv[2]
        end = time.monotonic() + 60
        print("ready", flush=True)
        while time.monotonic() < end:
            try:
                os.rename(a, b)
                os.rename(b, a)
            except OSError:
                pass
        """
    )
    before = snapshot(arena.outside)
    KEPT.clear()
    child = subprocess.Popen([sys.executable, "-c", script, arena.d, str(away)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        ok, denied = run_patches(fs, CALLS)
    finally:
        child.kill()
        child.wait()
        if away.exists():  # killed while d was out: a patch may have made a new d (Add File creates parents)
            shutil.rmtree(arena.d, ignore_errors=True)
            os.rename(away, arena.d)
    # A rollback the kernel refused (the directory was out of the roots at that instant) keeps the file's previous
    # content beside it under a temp name, and the error says so: never more of them than were reported.
    kept = [p for p in (arena.root / "d").rglob(".rootbound-*") if p.read_bytes() in COMPLETE]
    assert len(kept) <= len(KEPT), (kept, KEPT)
    for path in kept:
        path.unlink()
    check_after(arena, before)
    assert ok + denied == CALLS and denied > 0, (ok, denied)


def test_a_displaced_file_the_undo_cannot_put_back_is_kept_and_reported(
    fs: RootedFS,  # noqa: F811
    arena: Arena,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another writer changes ``d/f`` just before the patch's exchange publishes over it (the patch must not win),
    and the kernel refuses the exchange that would put it back (its directory left the roots at that instant):
    the other writer's content stays beside the file under a temp name, and the error says so. It is never
    removed as if it were a temp file of ours."""
    real, calls = atomic_write.exchange, []

    def exchange(src_dir_fd: int, src: str, dst_dir_fd: int, dst: str) -> None:
        calls.append(src)
        if len(calls) == 1:
            (arena.root / "d" / "f").write_bytes(B)  # the other writer, after the patch's last check
            return real(src_dir_fd, src, dst_dir_fd, dst)
        raise PermissionError(13, "Permission denied")  # the undo, refused

    monkeypatch.setattr("rootbound.confine.patch_ops.exchange", exchange)
    content = A.decode().rstrip("\n")
    try:
        fs.apply_patch(parse_patch(patch("*** Add File: d/f", f"+{content}")))
    except PatchOpFailed as failure:
        assert failure.kept == (arena.root / "d" / "f",)
    else:
        raise AssertionError("the other writer's change was overwritten without an error")
    (kept,) = (arena.root / "d").glob(".rootbound-*")
    assert kept.read_bytes() == B and (arena.root / "d" / "f").read_bytes() == A
