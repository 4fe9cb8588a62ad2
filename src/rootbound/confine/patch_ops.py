"""Applying a whole ``apply_patch`` patch beneath the roots, all or nothing across its files.

Why its own module: a patch touches many files, and Codex applies them one by one, leaving the first ones changed
when a later hunk fails. Here nothing is published until everything is ready, in four steps, all on the
boundary's write domain and every file reached through :meth:`Boundary.open`:

1. **plan** (no writes): every file is opened beneath its root and read, every hunk placed
   (:mod:`rootbound.text.patch_apply`), every destination looked at; any failure ends the call here;
2. **stage**: missing parent directories are created, and each new content is written, complete and ``fsync``\\ ed,
   to a temp file beside its target;
3. **check**: each file read is read again and must be the same unchanged inode with the same bytes, and each
   destination must still be as planned;
4. **publish**: one rename per file, each keeping what it displaces under a hidden temp name
   (``RENAME_EXCHANGE`` for a replace; a delete first renames the victim away), and each checked again right
   after its rename. A failure here undoes the renames already made (newest first); only once every rename
   succeeded are the displaced files removed.

What this does and does not guarantee under a concurrent writer is in ``docs/writing.md`` (``apply_patch``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from rootbound.confine.atomic_write import (
    TEMP_PREFIX,
    TEMP_SUFFIX,
    beneath,
    discard,
    exchange,
    rename_noreplace,
    same_file,
    undo_if_outside,
    write_temp,
)
from rootbound.confine.boundary import CREATE, DIRECTORY, WRITE, Handle, Intent
from rootbound.confine.candidate import parse_candidate
from rootbound.confine.regular_files import check_file
from rootbound.confine.resolvers import DIR_READ
from rootbound.confine.write_ops import WriteOps
from rootbound.core.errors import (
    INVALID_PARAMS,
    InvalidPath,
    IsADirectory,
    NotAFile,
    NotText,
    OutsideRoots,
    PathExists,
    PathNotFound,
    ReadOnly,
    RootsError,
    translate_error,
)
from rootbound.text.edit import FileChanged, content_hash
from rootbound.text.line_match import Tolerance
from rootbound.text.patch_apply import patch_text
from rootbound.text.patch_grammar import FileOp, Patch

__all__ = ["PatchFile", "PatchOpFailed", "PatchOps", "PatchOutcome"]

_REMOVE: Final = Intent("rename", DIR_READ, follow=False, parent=True, named=True)  # a delete, a move's source
Action = Literal["added", "updated", "moved", "deleted"]


class PatchOpFailed(RootsError):
    """One file operation of a patch failed, so nothing was changed. ``error`` is why; ``op`` which operation
    (its label names the patch line); ``path`` the canonical path when it was resolved."""

    code = INVALID_PARAMS

    def __init__(self, op: FileOp, error: RootsError, path: Path | None = None) -> None:
        super().__init__(error.reason, message=f"{op.label}: {error.message}")
        self.op = op
        self.error = error
        self.path = path
        self.kept: tuple[Path, ...] = ()
        """Files not put back (another writer changed them after they were published, or their directory left the
        roots before the undo): each one's previous content stays beside it under a temp name (see docs)."""


@dataclass(frozen=True)
class PatchFile:
    """What the patch does to one file: ``path`` is the file (a move's source), ``destination`` a move's target;
    ``replaced`` when an Add File or a Move to replaced an existing file; ``created`` the directories made."""

    action: Action
    path: Path
    added: int
    removed: int
    before: str
    after: str
    destination: Path | None = None
    replaced: bool = False
    tolerances: tuple[Tolerance, ...] = ()
    created: tuple[Path, ...] = ()


@dataclass(frozen=True)
class PatchOutcome:
    files: tuple[PatchFile, ...]
    written: bool
    dry_run: bool


@dataclass
class _Target:
    """Where new content lands: the parent handle (``None`` until its missing directories exist), the candidate
    to open it by, the directories to create first, and what was at the name when planned."""

    candidate: str
    handle: Handle | None
    missing: tuple[str, ...] = ()
    existing: os.stat_result | None = None
    display: Path | None = None


@dataclass
class _Plan:
    op: FileOp
    source: Handle | None = None  # update, delete: the file's parent
    source_st: os.stat_result | None = None
    data: bytes = b""
    target: _Target | None = None  # add, update: where the new content goes
    content: bytes = b""
    result: PatchFile | None = None
    temp: str | None = None
    temp_ino: int = 0
    created: list[tuple[str, Path]] = field(default_factory=list)  # candidate, canonical path
    found: bool = False  # the source file exists: its path may be named in an error
    expected: str | None = None  # if_match: the SHA-256 the source file must have (update, move, delete)


class PatchOps(WriteOps):
    """:meth:`apply_patch` for :class:`~rootbound.RootedFS` (mixed in, over the same entry point)."""

    def apply_patch(
        self,
        patch: Patch,
        *,
        dry_run: bool = False,
        encoding: str = "utf-8",
        if_match: Mapping[str, str] | None = None,
        create_only: bool = False,
    ) -> PatchOutcome:
        """Apply every operation of ``patch`` or none (:class:`PatchOpFailed` naming the one that failed).

        ``if_match`` maps a path as the patch writes it (an Update or Delete File's) to the SHA-256 hex its file
        must have: checked on what was read, and again on the very object each rename displaces, else
        ``FileChanged`` (and nothing changed). ``create_only``: no Add File or Move to replaces an existing file."""
        if not dry_run and self.read_only:
            raise ReadOnly()
        conditions = _Conditions(dict(if_match or {}), create_only)
        if self.read_only:
            return self._apply_patch(patch, dry_run, encoding, conditions)
        return self.boundary.write_domain().run(lambda: self._apply_patch(patch, dry_run, encoding, conditions))

    def _apply_patch(self, patch: Patch, dry_run: bool, encoding: str, conditions: _Conditions) -> PatchOutcome:
        with contextlib.ExitStack() as stack:
            plans = [self._plan(stack, op, encoding, conditions) for op in patch.ops]
            _refuse_repeats(plans)
            files = tuple(plan.result for plan in plans if plan.result is not None)
            if dry_run:
                return PatchOutcome(files, False, True)
            try:
                for plan in plans:
                    with _blame(plan):
                        self._stage(stack, plan)
                for plan in plans:
                    with _blame(plan):
                        self._check(plan)
                self._publish(plans)
            except BaseException:
                for plan in reversed(plans):
                    self._unstage(plan)
                raise
            return PatchOutcome(tuple(_with_created(plan) for plan in plans), True, False)

    # -- plan -----------------------------------------------------------------------------------------------

    def _plan(
        self, stack: contextlib.ExitStack[bool | None], op: FileOp, encoding: str, conditions: _Conditions
    ) -> _Plan:
        plan = _Plan(op, expected=conditions.if_match.get(op.path) if op.kind != "add" else None)
        with _blame(plan):
            if op.kind == "add":
                plan.target = self._target(stack, op.path, conditions.create_only)
                plan.content = op.content.encode(encoding, "surrogatepass")
                shown = _shown(plan.target)
                plan.result = PatchFile(
                    "added", shown, op.content.count("\n"), 0, "", op.content, replaced=plan.target.existing is not None
                )
                return plan
            source = plan.source = self._enter(stack, op.path, WRITE if op.kind == "update" else _REMOVE)
            name = source.name
            assert name is not None
            st = source.lstat()
            if st is None:
                raise PathNotFound()
            plan.found = True
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectory()
            if op.kind == "delete":
                if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                    raise NotAFile()
                plan.source_st = st
                before = ""
                if plan.expected is not None:  # the content it must have: read, never suppressed
                    if not stat.S_ISREG(st.st_mode):
                        raise NotAFile()
                    plan.data, plan.source_st = self._read_name(source.fd, name)
                    _matches(plan, plan.data)
                    before = plan.data.decode(encoding, "replace")
                elif stat.S_ISREG(st.st_mode):
                    with contextlib.suppress(RootsError, OSError):  # only for the diff and the count
                        before = self._read_name(source.fd, name)[0].decode(encoding)
                plan.result = PatchFile("deleted", source.path, 0, before.count("\n"), before, "")
                return plan
            if op.move_to is not None and stat.S_ISLNK(st.st_mode):
                raise NotAFile()  # a symlink is not moved by rewriting its target's content elsewhere
            plan.data, plan.source_st = self._read_name(source.fd, name)
            _matches(plan, plan.data)
            try:
                text = plan.data.decode(encoding)
            except UnicodeDecodeError:
                raise NotText() from None
            patched = patch_text(text, op)
            plan.content = patched.after.encode(encoding, "surrogatepass")
            if op.move_to is None:
                plan.target = _Target(op.path, source, existing=plan.source_st, display=source.path)
                action: Action = "updated"
            else:
                plan.target = self._target(stack, op.move_to, conditions.create_only)
                action = "moved"
            plan.result = PatchFile(
                action,
                source.path,
                patched.added,
                patched.removed,
                text,
                patched.after,
                destination=_shown(plan.target) if op.move_to is not None else None,
                replaced=op.move_to is not None and plan.target.existing is not None,
                tolerances=patched.tolerances,
            )
        return plan

    def _enter(self, stack: contextlib.ExitStack[bool | None], path: str, intent: Intent) -> Handle:
        try:
            return stack.enter_context(self._open(path, intent))
        except (IsADirectory, ReadOnly):  # what the entry point answers for a directory root / a file root
            raise InvalidPath("a root cannot be moved or replaced") from None

    def _target(self, stack: contextlib.ExitStack[bool | None], path: str, create_only: bool) -> _Target:
        """A destination: its parent opened (``CREATE``: the final name never followed) and what is there, or,
        if its parent does not exist yet, the directories to create (nothing is created while planning)."""
        try:
            handle = self._enter(stack, path, CREATE)
        except PathNotFound:
            return self._missing_parents(stack, path)
        existing = handle.lstat()
        if existing is not None:
            if create_only:
                raise PathExists()
            check_file(existing, self.hardlinks, writing=True)  # a regular file (replaced), or refused
        return _Target(path, handle, existing=existing, display=handle.path)

    def _missing_parents(self, stack: contextlib.ExitStack[bool | None], path: str) -> _Target:
        absolute, parts = parse_candidate(path)
        lead = "/" if absolute else ""
        if ".." in parts:
            raise InvalidPath("'..' in a new directory path")
        for depth in range(len(parts) - 2, -1, -1):
            try:
                with self._open(lead + "/".join(parts[:depth]) or ".", DIRECTORY) as handle:
                    display = handle.path.joinpath(*parts[depth:])
            except PathNotFound:
                if depth == 0:
                    raise
                continue
            missing = tuple(lead + "/".join(parts[:level]) for level in range(depth + 1, len(parts)))
            return _Target(path, None, missing=missing, display=display)
        raise PathNotFound()

    # -- stage and check --------------------------------------------------------------------------------------

    def _stage(self, stack: contextlib.ExitStack[bool | None], plan: _Plan) -> None:
        target = plan.target
        if target is None:
            return
        if target.handle is None:
            for level in target.missing:
                try:
                    made = self.create_directory(level, exist_ok=False)
                except PathExists:
                    continue  # made meanwhile by someone else: used, never removed by us
                plan.created.append((level, made))
            target.handle = self._enter(stack, target.candidate, CREATE)
            if target.handle.lstat() is not None:
                raise PathExists()
        keep = plan.source_st.st_mode if plan.op.kind == "update" and plan.source_st is not None else None
        if target.existing is not None and keep is None:
            keep = target.existing.st_mode
        plan.temp = write_temp(target.handle.fd, plan.content, new_mode=0o666, keep_mode=keep)
        plan.temp_ino = os.stat(plan.temp, dir_fd=target.handle.fd, follow_symlinks=False).st_ino

    def _check(self, plan: _Plan) -> None:
        """Before any rename: what was read is still there, unchanged; what each target held, it still holds."""
        source = plan.source
        if source is not None and source.name is not None and plan.source_st is not None:
            now = source.lstat()
            if now is None or not same_file(now, plan.source_st):
                raise FileChanged()
            if plan.op.kind == "update" and self._read_name(source.fd, source.name)[0] != plan.data:
                raise FileChanged()
        target = plan.target
        if target is not None and target.handle is not None and target.handle is not source:
            now = target.handle.lstat()
            if (now is None) != (target.existing is None) or (
                now is not None and target.existing is not None and not same_file(now, target.existing)
            ):
                raise FileChanged()

    # -- publish ----------------------------------------------------------------------------------------------

    def _publish(self, plans: list[_Plan]) -> None:
        undo: list[tuple[Callable[[], bool], Path]] = []  # newest last; each returns False if it left the file
        commit: list[tuple[int, str]] = []  # displaced objects to remove once everything is published
        try:
            for plan in plans:
                with _blame(plan):
                    target, source = plan.target, plan.source
                    if target is not None:
                        assert target.handle is not None
                        if target.existing is not None:
                            self._replace(plan, target.handle, target.existing, undo, commit)
                        else:
                            self._create(plan, target.handle, undo)
                    if source is not None and (plan.op.kind == "delete" or plan.op.move_to is not None):
                        assert plan.source_st is not None
                        self._remove(plan, source, plan.source_st, undo, commit)
        except BaseException as failure:
            kept = tuple(path for back, path in reversed(undo) if not _quietly(back))
            if kept and isinstance(failure, PatchOpFailed):
                failure.kept = kept
            raise
        for dir_fd, name in commit:
            discard(dir_fd, name)
        for plan in plans:
            for held in (plan.source, plan.target.handle if plan.target else None):
                if held is not None:
                    with contextlib.suppress(OSError):
                        os.fsync(held.fd)  # the renames durable (best effort, as for every write)

    def _replace(
        self,
        plan: _Plan,
        handle: Handle,
        expect: os.stat_result,
        undo: list[tuple[Callable[[], bool], Path]],
        commit: list[tuple[int, str]],
    ) -> None:
        """Trade the temp file with the file at the name; the old one stays under the temp name until commit.

        From the trade on, the temp name holds the displaced file: the plan lets go of it (``_unstage`` must not
        remove it) and the undo owns it, so a trade that cannot be undone keeps it, reported."""
        fd, name, root, temp = handle.fd, handle.name, _root_id(handle), plan.temp
        assert name is not None
        assert temp is not None
        if not beneath(fd, root):
            raise OutsideRoots("moved outside roots")
        try:
            exchange(fd, temp, fd, name)
        except OSError as exc:
            if exc.errno not in (errno.ENOSYS, errno.EINVAL):
                raise
            hidden = _hidden()  # no RENAME_EXCHANGE here: keep the old file under a second name, then rename
            os.link(name, hidden, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
            try:
                os.rename(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                discard(fd, hidden)  # a second name of the file still at ``name``: nothing displaced yet
                raise
            temp = hidden
        plan.temp = None
        ours: os.stat_result | None = None  # what we published, once seen (the undo reads it when it runs)

        def back() -> bool:
            now = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if ours is None or not same_file(now, ours):
                return False  # another writer changed what we published: theirs is kept
            exchange(fd, temp, fd, name)
            discard(fd, temp)
            return True

        undo.append((back, handle.path))
        ours = os.stat(name, dir_fd=fd, follow_symlinks=False)
        old = os.stat(temp, dir_fd=fd, follow_symlinks=False)
        if not same_file(old, expect):
            raise FileChanged()  # replaced or written since it was read: traded back by the undo
        if plan.expected is not None and plan.op.move_to is None:
            _matches(plan, self._read_name(fd, temp)[0])  # the very object displaced has the digest
        undo_if_outside(fd, root, lambda: None, enabled=self._undo())
        commit.append((fd, temp))

    def _create(self, plan: _Plan, handle: Handle, undo: list[tuple[Callable[[], bool], Path]]) -> None:
        fd, name, root, temp, ino = handle.fd, handle.name, _root_id(handle), plan.temp, plan.temp_ino
        assert name is not None
        assert temp is not None
        if not beneath(fd, root):
            raise OutsideRoots("moved outside roots")
        try:
            rename_noreplace(fd, temp, fd, name)
        except FileExistsError:
            raise PathExists() from None  # appeared meanwhile (a planted link included): not replaced
        except OSError as exc:
            if exc.errno not in (errno.ENOSYS, errno.EINVAL):
                raise
            os.link(temp, name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
            discard(fd, temp)
        plan.temp = None  # published under ``name``: the undo owns it now

        def back() -> bool:
            if os.stat(name, dir_fd=fd, follow_symlinks=False).st_ino != ino:
                return False
            os.unlink(name, dir_fd=fd)
            return True

        undo.append((back, handle.path))
        undo_if_outside(fd, root, lambda: None, enabled=self._undo())

    def _remove(
        self,
        plan: _Plan,
        handle: Handle,
        expect: os.stat_result,
        undo: list[tuple[Callable[[], bool], Path]],
        commit: list[tuple[int, str]],
    ) -> None:
        """Rename the file away to a hidden name (removed at commit), after checking it is the one planned."""
        fd, name, root = handle.fd, handle.name, _root_id(handle)
        assert name is not None
        if not beneath(fd, root):
            raise OutsideRoots("moved outside roots")
        hidden = _hidden()
        os.rename(name, hidden, src_dir_fd=fd, dst_dir_fd=fd)  # a fresh random name: nothing to replace

        def back() -> bool:
            rename_noreplace(fd, hidden, fd, name)
            return True

        undo.append((back, handle.path))
        if not same_file(os.stat(hidden, dir_fd=fd, follow_symlinks=False), expect):
            raise FileChanged()
        if plan.expected is not None:
            _matches(plan, self._read_name(fd, hidden)[0])  # the very object taken has the digest
        undo_if_outside(fd, root, lambda: None, enabled=self._undo())
        commit.append((fd, hidden))

    def _unstage(self, plan: _Plan) -> None:
        """After a failure: the plan's temp file and the directories it created (if still empty) are removed."""
        target = plan.target
        if plan.temp is not None and target is not None and target.handle is not None:
            discard(target.handle.fd, plan.temp)
            plan.temp = None
        for level, _ in reversed(plan.created):
            with contextlib.suppress(RootsError, OSError), self._open(level, _REMOVE) as handle:
                assert handle.name is not None
                if beneath(handle.fd, _root_id(handle)):
                    os.rmdir(handle.name, dir_fd=handle.fd)  # only if empty: anything else is left alone
        plan.created.clear()


@dataclass(frozen=True)
class _Conditions:
    if_match: dict[str, str]
    create_only: bool


def _matches(plan: _Plan, data: bytes) -> None:
    if plan.expected is not None and content_hash(data) != plan.expected.lower():
        raise FileChanged()


def _with_created(plan: _Plan) -> PatchFile:
    result = plan.result
    assert result is not None
    if not plan.created:
        return result
    made = tuple(path for _, path in plan.created)
    return PatchFile(
        result.action,
        result.path,
        result.added,
        result.removed,
        result.before,
        result.after,
        result.destination,
        result.replaced,
        result.tolerances,
        made,
    )


def _refuse_repeats(plans: list[_Plan]) -> None:
    """Each file at most once per patch (as a source or a destination): the operations would depend on order."""
    seen: set[Path] = set()
    for plan in plans:
        assert plan.result is not None
        names = [plan.result.path]
        if plan.result.destination is not None and plan.result.destination != plan.result.path:
            names.append(plan.result.destination)
        for name in names:
            if name in seen:
                raise PatchOpFailed(plan.op, InvalidPath("a file appears twice in the patch"), _known_path(plan))
            seen.add(name)


@contextlib.contextmanager
def _blame(plan: _Plan) -> Iterator[None]:
    """Any failure while handling ``plan`` becomes :class:`PatchOpFailed` naming its operation."""
    try:
        yield
    except PatchOpFailed:
        raise
    except RootsError as error:
        raise PatchOpFailed(plan.op, error, _known_path(plan)) from None
    except (OSError, UnicodeError) as exc:
        raise PatchOpFailed(plan.op, translate_error(exc), _known_path(plan)) from None


def _known_path(plan: _Plan) -> Path | None:
    """The path an error may name: the file the operation opened, which existed. Never a target the patch
    names (an Add File's, a move's destination, a missing file's): its new components are the client's words,
    echoed (issue 48 #9); the operation's patch line says which it was."""
    return plan.source.path if plan.source is not None and plan.found else None


def _quietly(back: Callable[[], bool]) -> bool:
    try:
        return back()
    except (OSError, RootsError):
        return False


def _shown(target: _Target) -> Path:
    assert target.display is not None
    return target.display


def _hidden() -> str:
    return f"{TEMP_PREFIX}{secrets.token_hex(8)}{TEMP_SUFFIX}"


def _root_id(handle: Handle) -> tuple[int, int]:
    root = handle.root
    return root.dev, root.ino
