"""Every escape case of ``test_escapes.py`` against every writing operation, both resolvers.

The reading matrix pins the exact denial per operation; here the invariant is checked for the operations added
by issue 13 (edit, dry-run edit, write with create_parents, create_directory, move from and to the attacker's
path, delete): each call is either denied with a :class:`~rootbound.RootsError` and the whole fixture tree is
unchanged, or allowed and everything it changed lies inside the root, and its result carries no outside data.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rootbound import EditOutcome, RootedFS, RootsError
from rootbound.text.edit import Edit, content_hash
from rootbound.text.patch_grammar import parse_patch
from tests.confine.test_escapes import CASES, RESOLVERS, SECRET, Case, Env, build, leaks, make_env, snapshot


def patched(fs: RootedFS, *body: str, dry_run: bool = False) -> Path:
    """``apply_patch`` of one operation; its file's path (a move's destination), after checking the dry run's
    before and after texts carry nothing from outside."""
    outcome = fs.apply_patch(parse_patch("\n".join(["*** Begin Patch", *body, "*** End Patch"])), dry_run=dry_run)
    (file,) = outcome.files
    assert not leaks((file.before, file.after)), "apply_patch returned outside data"
    return file.destination or file.path


OUTSIDE_SHA = content_hash(SECRET)
NOTES_SHA = content_hash(b"notes\n")


def if_match(fs: RootedFS, candidate: object, *body: str) -> Path:
    """``apply_patch`` of one operation on ``candidate``, on condition that it is the outside file."""
    text = "\n".join(["*** Begin Patch", *body, "*** End Patch"])
    (file,) = fs.apply_patch(parse_patch(text), if_match={name(candidate): OUTSIDE_SHA}).files
    assert not leaks((file.before, file.after)), "apply_patch returned outside data"
    return file.destination or file.path


def patched_create_only(fs: RootedFS, *body: str) -> Path:
    text = "\n".join(["*** Begin Patch", *body, "*** End Patch"])
    (file,) = fs.apply_patch(parse_patch(text), create_only=True).files
    return file.path


def name(candidate: object) -> str:
    return str(candidate)  # a patch names paths as text: a PurePath candidate becomes its string


WRITE_OPS: dict[str, Callable[[RootedFS, object], object]] = {
    "patch_add": lambda fs, c: patched(fs, f"*** Add File: {name(c)}", "+pwned"),
    "patch_update": lambda fs, c: patched(fs, f"*** Update File: {name(c)}", "@@", "+pwned"),
    "patch_delete": lambda fs, c: patched(fs, f"*** Delete File: {name(c)}"),
    "patch_move_from": lambda fs, c: patched(fs, f"*** Update File: {name(c)}", "*** Move to: moved", "@@", "+p"),
    "patch_move_to": lambda fs, c: patched(fs, "*** Update File: notes.txt", f"*** Move to: {name(c)}", "@@", "+p"),
    "edit": lambda fs, c: fs.edit_file(c, [Edit("SECRET", "pwned")]),
    "edit_dry_run": lambda fs, c: fs.edit_file(c, [Edit("SECRET", "pwned")], dry_run=True),
    "write_parents": lambda fs, c: fs.write_bytes(c, b"pwned", create_parents=True),
    "create_directory": lambda fs, c: fs.create_directory(c),
    "move_from": lambda fs, c: fs.move(c, "moved-here"),
    "move_to": lambda fs, c: fs.move("notes.txt", c),
    "move_to_overwrite": lambda fs, c: fs.move("notes.txt", c, overwrite=True),
    "delete": lambda fs, c: fs.delete_file(c),
    # if_match (issue 49) naming the outside file's own digest: were it read, it would match
    "move_from_if_match": lambda fs, c: fs.move(c, "moved-here", expected_hash=OUTSIDE_SHA),
    "move_to_if_match": lambda fs, c: fs.move("notes.txt", c, overwrite=True, expected_hash=NOTES_SHA),
    "patch_update_if_match": lambda fs, c: if_match(fs, c, f"*** Update File: {name(c)}", "@@", "+pwned"),
    "patch_delete_if_match": lambda fs, c: if_match(fs, c, f"*** Delete File: {name(c)}"),
    "patch_move_if_match": lambda fs, c: if_match(fs, c, f"*** Update File: {name(c)}", "*** Move to: m", "@@", "+p"),
    "patch_add_create_only": lambda fs, c: patched_create_only(fs, f"*** Add File: {name(c)}", "+pwned"),
}


@pytest.fixture(params=RESOLVERS)
def resolver_name(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Env]:
    environment = make_env(tmp_path)
    yield environment
    fd = environment.extra.get("fd")
    if isinstance(fd, int):
        os.close(fd)


@pytest.mark.parametrize("op", sorted(WRITE_OPS))
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_writing_ops_never_leave_the_root(
    case: Case, op: str, resolver_name: str, tree: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = tree
    if case.setup:
        case.setup(env, monkeypatch)
    fs = build(case, env, resolver_name)
    if case.after_build:
        case.after_build(env)
    before = snapshot(env.tmp)
    candidate = case.candidate(env)
    try:
        try:
            result = WRITE_OPS[op](fs, candidate)
        except RootsError as error:
            assert "SECRET" not in str(error)
            assert before == snapshot(env.tmp), "a denied call changed the tree"
            return
    finally:
        fs.boundary.close()
    if isinstance(result, EditOutcome):
        assert not leaks(result.diff), f"{op} returned outside data"
        result = result.path
    assert isinstance(result, Path)
    assert result.is_relative_to(env.root), result  # a name like "%2e%2e" is a legal name inside the root
    if not result.is_symlink():  # a moved link is moved as itself: it may still point wherever it pointed
        assert Path(os.path.realpath(result)).is_relative_to(env.root), result
    after = snapshot(env.tmp)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    root_rel = os.path.relpath(env.root, env.tmp)
    assert all(k.startswith(root_rel + os.sep) for k in changed), f"changes outside the root: {changed}"
