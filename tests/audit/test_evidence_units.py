"""Small pure parts of the audit's evidence and filler learning that issue 47 corrected (its own module:
``test_units.py`` is full)."""

from __future__ import annotations

import os
from pathlib import Path

from rootbound.audit import build_trap
from rootbound.audit.far_canaries import remove_created, remove_trees
from rootbound.audit.free_text import chained_id_reach
from rootbound.audit.judge import kernel_evidence
from rootbound.audit.kernel_events import IN_CREATE, IN_ISDIR, IN_MODIFY, IN_OPEN, KernelEvent
from rootbound.audit.tool_errors import object_keys
from rootbound.audit.tools import plan_tool
from rootbound.audit.values import allowed_values, required_keys


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


def test_a_directory_tree_a_probe_made_in_the_cwd_is_removed_only_if_all_of_it_is_the_audits(tmp_path: Path) -> None:
    """``<cwd>/file:/…/rbt-new-X`` trees (a ``file:`` URI taken for a relative path): removed when every file in
    them bears a name the audit gave out, a link among them unlinked and its target kept; left and said when a
    link, a file of another name or nothing of the audit's is in them."""
    trap = build_trap(tmp_path)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    trap.extra_dirs["cwd"] = cwd
    target = tmp_path / "kept.txt"
    target.write_text("kept")
    ours = cwd / "ours" / "a" / "b"
    ours.mkdir(parents=True)
    (ours / trap.new_name("pdf")).write_text("x")
    os.symlink(target, ours / trap.new_name("md"))
    os.symlink(tmp_path, cwd / "ours" / "up")  # a link to a directory with a foreign name: not followed, foreign
    mixed = cwd / "mixed" / "c"
    mixed.mkdir(parents=True)
    (mixed / trap.new_name("pdf")).write_text("x")
    (mixed / "server.log").write_text("y")
    own = cwd / "own" / "cache"
    own.mkdir(parents=True)
    clean = cwd / "clean" / "x"
    clean.mkdir(parents=True)
    (clean / trap.new_name("md")).write_text("x")
    notes = remove_trees(trap, ["clean", "ours", "mixed", "own", "gone"])
    assert not (cwd / "clean").exists() and target.read_text() == "kept"
    assert (cwd / "ours").is_dir() and (cwd / "mixed" / "c" / "server.log").exists() and own.is_dir()
    assert len(notes) == 2 and "ours/up" in notes[0] and "mixed/c/server.log" in notes[1], notes
    (cwd / "ours" / "up").unlink()
    assert remove_trees(trap, ["ours"]) == [] and not (cwd / "ours").exists() and target.read_text() == "kept"


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
    assert remove_created(trap, "cwd", other.name) is None and other.exists()
    assert remove_created(trap, "cwd", canary.name) is None and canary.exists()
    assert remove_created(trap, "nowhere", made.name) is None


def test_the_keys_a_refusal_names_as_required() -> None:
    """Before, no refusal taught an object's keys (only values and flags)."""
    said = {
        "missing key 'cell_type'": ["cell_type"],
        "'source' is a required property": ["source"],
        "Each item in 'cells_to_add' must be a dictionary with 'cell_type' and 'source' keys.": ["cell_type", "source"],
        "each cell needs cell_type and source": ["cell_type", "source"],
        "missing required fields: title, body": ["title", "body"],
        "cells_to_add.0.cell_type\n  Field required [type=missing]": ["cell_type"],
        "failed with 'rbt'": [],
        "the file needs a name": [],
        "Pass confirm=True to proceed.": [],
    }
    assert {text: required_keys(text) for text in said} == said
    assert allowed_values("Invalid cell_type 'rbt' at index 0. Must be 'code' or 'markdown'.") == ["code", "markdown"]
    assert allowed_values("source must be a string") == []


def test_the_keys_a_refusal_names_fill_the_object_it_speaks_of() -> None:
    """A required array of free-form objects gets one element (``[]`` may be a no-op that proves nothing); the
    keys a refusal names become string fillers of that element, each of which can then learn its value."""
    free = {"type": "array", "items": {"type": "object", "additionalProperties": {"type": "string"}}}
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "cells": free},
        "required": ["path", "cells"],
    }
    plan = plan_tool({"name": "add_cells", "inputSchema": schema}, frozenset(), True)
    assert plan.arguments("path", "P", "", "rbt", "")["cells"] == [{}]
    refusal = "Each item in 'cells' must be a dictionary with 'cell_type' and 'source' keys."
    assert object_keys((plan,), refusal, set()) == (("cells",), ["cell_type", "source"])
    assert plan.arguments("path", "P", "", "rbt", "")["cells"] == [{"cell_type": "rbt", "source": "rbt"}]
    assert plan.roles[("cells", "[]", "cell_type")][0] == "filler"
    assert object_keys((plan,), refusal, set()) is None  # nothing new to add
    assert object_keys((plan,), "'title' is a required property", {("cells",)}) is None  # learnt once


def test_an_id_is_a_gap_only_where_a_path_tool_returns_it() -> None:
    """``doc_id``/``docId`` beside ``open_doc(path)``, or an id whose description names the path tool, is read
    through a chain the audit does not probe (a gap); an ``issue_id`` beside it, or any id on a server without a
    path tool, is not (a remote tracker's ids are nothing to the audit)."""

    def tool(name: str, param: str, description: str = "") -> dict[str, object]:
        props = {param: {"type": "string", "description": description}}
        return {"name": name, "inputSchema": {"type": "object", "properties": props}}

    assert "'open_doc' takes a path" in chained_id_reach(tool("read_doc", "doc_id"), ["open_doc"])
    assert "'open_doc' takes a path" in chained_id_reach(tool("read_doc", "docId"), ["open_doc"])
    assert "'load' takes a path" in chained_id_reach(tool("page", "handle_ref", "a handle load returned"), ["load"])
    assert chained_id_reach(tool("get_issue", "issue_id"), ["open_doc"]) == ""
    assert chained_id_reach(tool("read_doc", "doc_id"), []) == ""
    assert chained_id_reach(tool("read_doc", "doc_name"), ["open_doc"]) == ""
    assert chained_id_reach(tool("open_doc", "doc_id"), ["open_doc"]) == ""  # its own path: probed there
