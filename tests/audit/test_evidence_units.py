"""Small pure parts of the audit's evidence and filler learning that issue 47 corrected (its own module:
``test_units.py`` is full)."""

from __future__ import annotations

import os
from pathlib import Path

from rootbound.audit import build_trap
from rootbound.audit.far_canaries import remove_created
from rootbound.audit.judge import kernel_evidence
from rootbound.audit.kernel_events import IN_CREATE, IN_ISDIR, IN_MODIFY, IN_OPEN, KernelEvent


def test_what_a_call_opened_where_it_wrote_is_part_of_the_write(tmp_path: Path) -> None:
    """SQLite's ``VACUUM INTO '/tmp/…/rbt-new-….sqlite'`` creates the file and opens the directory to sync it.
    Before, the open was its own piece of evidence (an ``outside-absolute`` meta, low, a root cause of its own)
    beside the write; a read elsewhere stays its own evidence."""
    trap = build_trap(tmp_path)
    beyond = tmp_path / "rbaudit-tmp-x"
    beyond.mkdir()
    trap.extra_dirs["tmp"] = beyond
    name = trap.new_name("sqlite")
    events = [
        KernelEvent("tmp", name, IN_CREATE),
        KernelEvent("tmp", name, IN_MODIFY),
        KernelEvent("tmp", "", IN_OPEN | IN_ISDIR),
        KernelEvent("far", trap.canaries["far"].name, IN_OPEN),
    ]
    found = {(ev.location, ev.kind) for ev in kernel_evidence(trap, events, frozenset({"ws"}))}
    assert found == {("tmp", "write"), ("far", "meta")}, found


def test_a_file_a_probe_created_beyond_the_trap_is_removed(tmp_path: Path) -> None:
    """What a write probe creates in the temp dir, the home or the server's cwd is removed after the call (no
    snapshot restores it there): an ``rbt-`` name only, never a planted canary, a link unlinked, not followed."""
    trap = build_trap(tmp_path)
    beyond = tmp_path / "cwd"
    beyond.mkdir()
    trap.extra_dirs["cwd"] = beyond
    made = beyond / trap.new_name("sqlite")
    made.write_text("x")
    target = tmp_path / "kept.txt"
    target.write_text("kept")
    link = beyond / "rbt-new-link"
    os.symlink(target, link)
    other = beyond / "server-own.db"
    other.write_text("y")
    canary = beyond / trap.canaries["far"].name
    canary.write_text("z")
    assert remove_created(trap, "cwd", made.name) and not made.exists()
    assert remove_created(trap, "cwd", link.name) and not os.path.lexists(link) and target.read_text() == "kept"
    assert not remove_created(trap, "cwd", other.name) and other.exists()
    assert not remove_created(trap, "cwd", canary.name) and canary.exists()
    assert not remove_created(trap, "nowhere", made.name)
