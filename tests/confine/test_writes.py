"""RootedFS writing operations, both resolvers: edit_file, write (create-only, create_parents), create_directory,
move, delete_file. Each refusal is checked to leave the outside tree byte for byte as it was.

Races with swapper threads are in ``test_write_races.py``; here the mid-operation interference is injected at a
known point (the temp file written, before the rename), so each case is deterministic.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rootbound import (
    Boundary,
    DanglingSymlink,
    FileOperationFailed,
    HardLinked,
    InvalidPath,
    IsADirectory,
    NotADirectory,
    NotAFile,
    NotText,
    OutsideRoots,
    PathExists,
    PathNotFound,
    ReadOnly,
    RootedFS,
    RootsError,
    SymlinkEscape,
)
from rootbound.confine import atomic_write as atomic
from rootbound.confine import write_ops as writes
from rootbound.text.edit import Edit, EditAmbiguous, EditNotFound, FileChanged

RESOLVERS = ["openat2", "walk"]
OUTSIDE = b"OUTSIDE-SECRET\n"


def snapshot(path: Path) -> dict[str, object]:
    """Every entry below ``path`` with its type and bytes (files), link text (links) or mode (others)."""
    found: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            rel = str(full.relative_to(path))
            st = full.lstat()
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(full))
            elif stat.S_ISREG(st.st_mode):
                found[rel] = ("file", full.read_bytes(), stat.S_IMODE(st.st_mode))
            else:
                found[rel] = ("other", stat.S_IFMT(st.st_mode))
    return found


class Tree:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "root"
        self.other = base / "other"
        self.outside = base / "outside"
        for d in (self.root / "src" / "pkg", self.other, self.outside / "sub"):
            d.mkdir(parents=True)
        (self.root / "src" / "mod.py").write_text("def f():\n    return 1\n")
        (self.root / "src" / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
        (self.other / "note.txt").write_text("other root\n")
        (self.outside / "secret").write_bytes(OUTSIDE)
        (self.outside / "sub" / "secret").write_bytes(OUTSIDE)
        os.symlink(self.outside, self.root / "out_link")  # a directory link leading outside
        os.symlink(self.outside / "secret", self.root / "secret_link")
        os.symlink("src/mod.py", self.root / "mod_link")  # in-root
        self.before = snapshot(self.outside)

    def assert_outside_untouched(self) -> None:
        assert snapshot(self.outside) == self.before


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(Path(os.path.realpath(tmp_path)))


@pytest.fixture(params=RESOLVERS)
def fs(request: pytest.FixtureRequest, tree: Tree) -> Iterator[RootedFS]:
    with Boundary([tree.root, tree.other]) as boundary:
        yield RootedFS(boundary, resolver=request.param)
    tree.assert_outside_untouched()  # every test, whatever it did


def temps(path: Path) -> list[str]:
    return [str(p) for p in path.rglob(".rootbound-*")]


# -- edit_file -------------------------------------------------------------------------------------------------


def test_edit_writes_the_diff_it_reports(fs: RootedFS, tree: Tree) -> None:
    path = tree.root / "src" / "mod.py"
    outcome = fs.edit_file("src/mod.py", [Edit("return 1", "return 2")])
    assert path.read_text() == "def f():\n    return 2\n"
    assert outcome.written and not outcome.dry_run
    assert outcome.path == path
    assert outcome.diff == (f"--- {path}\n+++ {path}\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n")
    assert outcome.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert outcome.mtime_ns == path.stat().st_mtime_ns
    assert outcome.applied[0].exact
    assert temps(tree.root) == []


def test_dry_run_returns_the_diff_and_writes_nothing(fs: RootedFS, tree: Tree) -> None:
    path = tree.root / "src" / "mod.py"
    before = path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_ino
    outcome = fs.edit_file(path, [Edit("return 1", "return 2")], dry_run=True)
    assert "+    return 2\n" in outcome.diff
    assert (outcome.written, outcome.dry_run) == (False, True)
    assert (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_ino) == before
    assert outcome.sha256 == hashlib.sha256(before[0]).hexdigest()
    read_only = RootedFS(fs.boundary, resolver=fs.resolver, read_only=True)
    assert read_only.edit_file(path, [Edit("return 1", "x")], dry_run=True).diff.endswith("+    x\n")
    with pytest.raises(ReadOnly):
        read_only.edit_file(path, [Edit("return 1", "x")])


def test_edit_keeps_crlf_and_mode_and_reports_tolerance(fs: RootedFS, tree: Tree) -> None:
    path = tree.root / "src" / "crlf.txt"
    path.chmod(0o640)
    outcome = fs.edit_file(path, [Edit("one\ntwo\n", "uno\ndos\n")])
    assert path.read_bytes() == b"uno\r\ndos\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert outcome.tolerances == ("line-endings",)


def test_edit_preconditions(fs: RootedFS, tree: Tree) -> None:
    path = tree.root / "src" / "mod.py"
    data = path.read_bytes()
    good = hashlib.sha256(data).hexdigest()
    mtime = path.stat().st_mtime_ns
    with pytest.raises(FileChanged):
        fs.edit_file(path, [Edit("return 1", "return 2")], expected_hash="0" * 64)
    with pytest.raises(FileChanged):
        fs.edit_file(path, [Edit("return 1", "return 2")], expected_mtime_ns=mtime - 1)
    assert path.read_bytes() == data
    first = fs.edit_file(path, [Edit("return 1", "return 2")], expected_hash=good.upper(), expected_mtime_ns=mtime)
    second = fs.edit_file(path, [Edit("return 2", "return 3")], expected_hash=first.sha256)  # chained
    assert second.written
    with pytest.raises(FileChanged):  # the first hash is stale now
        fs.edit_file(path, [Edit("return 3", "return 4")], expected_hash=first.sha256)
    assert path.read_text() == "def f():\n    return 3\n"


def test_failed_edits_change_nothing(fs: RootedFS, tree: Tree) -> None:
    path = tree.root / "src" / "mod.py"
    data = path.read_bytes()
    with pytest.raises(EditNotFound):
        fs.edit_file(path, [Edit("def f", "def g"), Edit("missing", "x")])
    (tree.root / "twice.py").write_text("x\nx\n")
    with pytest.raises(EditAmbiguous):
        fs.edit_file("twice.py", [Edit("x", "y")])
    assert path.read_bytes() == data
    assert (tree.root / "twice.py").read_text() == "x\nx\n"
    (tree.root / "latin1.txt").write_bytes(b"caf\xe9\n")
    with pytest.raises(NotText):
        fs.edit_file("latin1.txt", [Edit("caf", "x")])
    assert temps(tree.root) == []


def test_unchanged_edit_does_not_write(fs: RootedFS, tree: Tree) -> None:
    path = tree.root / "src" / "mod.py"
    ino = path.stat().st_ino
    outcome = fs.edit_file(path, [Edit("return 1", "return 1")])
    assert (outcome.written, outcome.diff) == (False, "")
    assert path.stat().st_ino == ino


def test_edit_through_links(fs: RootedFS, tree: Tree) -> None:
    fs.edit_file("mod_link", [Edit("return 1", "return 5")])  # in-root link: the target is edited
    assert (tree.root / "src" / "mod.py").read_text().endswith("return 5\n")
    assert os.readlink(tree.root / "mod_link") == "src/mod.py"
    with pytest.raises(SymlinkEscape):
        fs.edit_file("secret_link", [Edit("OUTSIDE", "x")])
    with pytest.raises(OutsideRoots):
        fs.edit_file("out_link/secret", [Edit("OUTSIDE", "x")])
    with pytest.raises(OutsideRoots):
        fs.edit_file(tree.outside / "secret", [Edit("OUTSIDE", "x")])
    os.symlink("nowhere", tree.root / "dangling")
    with pytest.raises(DanglingSymlink):
        fs.edit_file("dangling", [Edit("a", "b")])


def test_edit_refuses_special_and_hard_linked_files(fs: RootedFS, tree: Tree) -> None:
    os.mkfifo(tree.root / "fifo")
    with pytest.raises(NotAFile):
        fs.edit_file("fifo", [Edit("a", "b")])  # refused before any open for reading: never blocks
    with pytest.raises(NotAFile):
        fs.edit_file("fifo", [Edit("a", "b")], dry_run=True)
    with pytest.raises(IsADirectory):
        fs.edit_file("src", [Edit("a", "b")])
    os.link(tree.root / "src" / "mod.py", tree.root / "hard.py")
    with pytest.raises(HardLinked):
        fs.edit_file("hard.py", [Edit("return 1", "x")])
    with pytest.raises(PathNotFound):
        fs.edit_file("absent.py", [Edit("a", "b")])


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node needs root")
def test_edit_refuses_a_device_without_opening_it(fs: RootedFS, tree: Tree) -> None:
    os.mknod(tree.root / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    for dry_run in (False, True):
        with pytest.raises(NotAFile):
            fs.edit_file("null", [Edit("a", "b")], dry_run=dry_run)


@pytest.fixture
def bystander() -> Iterator[ThreadPoolExecutor]:
    """A thread that exists before any write domain, so the kernel does not hold it to the roots: the "local
    process" that interferes (a thread started by a restricted worker would be restricted too)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(int).result()
        yield pool


def _interfere(monkeypatch: pytest.MonkeyPatch, action: Callable[[], None], by: ThreadPoolExecutor) -> None:
    """Run ``action`` (on the ``bystander`` thread) right after the temp file is complete, before the checks and
    the rename."""
    real = atomic.write_temp

    def write_temp(dir_fd: int, data: bytes, *, new_mode: int = 0o600, keep_mode: int | None = None) -> str:
        name = real(dir_fd, data, new_mode=new_mode, keep_mode=keep_mode)
        by.submit(action).result()
        return name

    monkeypatch.setattr(writes, "write_temp", write_temp)


def test_file_growing_while_edited_is_not_overwritten(
    fs: RootedFS, tree: Tree, monkeypatch: pytest.MonkeyPatch, bystander: ThreadPoolExecutor
) -> None:
    path = tree.root / "src" / "mod.py"

    def grow() -> None:
        with open(path, "a") as handle:
            handle.write("# appended by someone else\n")

    _interfere(monkeypatch, grow, bystander)
    with pytest.raises(FileChanged):
        fs.edit_file(path, [Edit("return 1", "return 2")])
    assert path.read_text() == "def f():\n    return 1\n# appended by someone else\n"
    assert temps(tree.root) == []


def test_an_in_place_write_with_the_same_size_and_mtime_is_not_lost(
    fs: RootedFS, tree: Tree, monkeypatch: pytest.MonkeyPatch, bystander: ThreadPoolExecutor
) -> None:
    """Issue 24 item 5: another process rewrites the file in place after the edit read it, same size, and the
    modification time reads the same (a write within the file system's timestamp granularity, made certain here
    by restoring it). Inode, size and mtime cannot see it; the edit reads the file again before the rename and
    refuses, so that writer's update is not lost."""
    path = tree.root / "src" / "mod.py"
    expected = hashlib.sha256(path.read_bytes()).hexdigest()

    def rewrite_in_place() -> None:
        before = path.stat()
        script = (
            "import os, sys\n"
            "fd = os.open(sys.argv[1], os.O_WRONLY)\n"
            "os.write(fd, b'DEF')\n"
            "os.close(fd)\n"
            "os.utime(sys.argv[1], ns=(int(sys.argv[2]), int(sys.argv[3])))\n"
        )
        args = [str(path), str(before.st_atime_ns), str(before.st_mtime_ns)]
        subprocess.run([sys.executable, "-c", script, *args], check=True)
        after = path.stat()
        assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)

    _interfere(monkeypatch, rewrite_in_place, bystander)
    with pytest.raises(FileChanged):
        fs.edit_file(path, [Edit("return 1", "return 2")], expected_hash=expected)
    assert path.read_text() == "DEF f():\n    return 1\n"
    assert temps(tree.root) == []


def test_target_swapped_for_a_link_before_the_rename(
    fs: RootedFS, tree: Tree, monkeypatch: pytest.MonkeyPatch, bystander: ThreadPoolExecutor
) -> None:
    path = tree.root / "src" / "mod.py"

    def swap() -> None:
        os.rename(path, tree.root / "src" / "moved.py")
        os.symlink(tree.outside / "secret", path)

    _interfere(monkeypatch, swap, bystander)
    with pytest.raises(FileChanged):
        fs.edit_file(path, [Edit("return 1", "return 2")])
    assert os.readlink(path) == str(tree.outside / "secret")
    assert temps(tree.root) == []


@pytest.mark.parametrize("operation", ["edit", "write", "create"])
def test_parent_moved_out_mid_write_is_denied(
    fs: RootedFS, tree: Tree, monkeypatch: pytest.MonkeyPatch, bystander: ThreadPoolExecutor, operation: str
) -> None:
    """A local process moves the directory out of the root after the temp file is written: the rename must not
    happen, and the temp file must not stay behind where the directory now is."""
    moved = tree.base / "elsewhere"

    def move_out() -> None:
        os.rename(tree.root / "src", moved)

    calls: dict[str, Callable[[], object]] = {
        "edit": lambda: fs.edit_file("src/mod.py", [Edit("return 1", "return 2")]),
        "write": lambda: fs.write_text("src/mod.py", "replaced\n"),
        "create": lambda: fs.write_text("src/new.py", "created\n", exclusive=True),
    }
    _interfere(monkeypatch, move_out, bystander)
    with pytest.raises(OutsideRoots):
        calls[operation]()
    assert (moved / "mod.py").read_text() == "def f():\n    return 1\n"
    assert not (moved / "new.py").exists()
    assert temps(moved) == []


def test_edit_on_a_file_root_and_outside_roots(tree: Tree) -> None:
    with Boundary([tree.root / "src" / "mod.py"]) as boundary:
        fs = RootedFS(boundary)
        outcome = fs.edit_file(tree.root / "src" / "mod.py", [Edit("1", "2")], dry_run=True)
        assert outcome.diff.endswith("\n-    return 1\n+    return 2\n")
        with pytest.raises(ReadOnly):
            fs.edit_file(tree.root / "src" / "mod.py", [Edit("1", "2")])


# -- write -------------------------------------------------------------------------------------------------------


def test_write_create_only(fs: RootedFS, tree: Tree) -> None:
    assert fs.write_text("new.txt", "first\n", exclusive=True) == tree.root / "new.txt"
    for name in ("new.txt", "secret_link", "mod_link", "src"):
        with pytest.raises((PathExists, IsADirectory)):
            fs.write_text(name, "second\n", exclusive=True)
    os.symlink(tree.outside / "nothing-yet", tree.root / "dangling_out")
    with pytest.raises(PathExists):
        fs.write_text("dangling_out", "x", exclusive=True)
    assert (tree.root / "new.txt").read_text() == "first\n"
    assert not (tree.outside / "nothing-yet").exists()


def test_write_mode_new_and_kept(fs: RootedFS, tree: Tree) -> None:
    umask = os.umask(0o022)
    try:
        fs.write_text("m.txt", "x", mode=0o640)
        assert stat.S_IMODE((tree.root / "m.txt").stat().st_mode) == 0o640
        (tree.root / "m.txt").chmod(0o600)
        fs.write_text("m.txt", "y")
        assert stat.S_IMODE((tree.root / "m.txt").stat().st_mode) == 0o600
        fs.write_text("n.txt", "x")
        assert stat.S_IMODE((tree.root / "n.txt").stat().st_mode) == 0o644
    finally:
        os.umask(umask)


def test_write_create_parents(fs: RootedFS, tree: Tree) -> None:
    path = fs.write_text("pkg/sub/deep/init.py", "x = 1\n", create_parents=True)
    assert path == tree.root / "pkg" / "sub" / "deep" / "init.py"
    assert path.read_text() == "x = 1\n"
    assert fs.write_text("pkg/sub/deep/init.py", "x = 2\n", create_parents=True) == path
    with pytest.raises(PathNotFound):
        fs.write_text("nope/x.py", "x")  # without create_parents, the old error
    with pytest.raises(OutsideRoots):
        fs.write_text("out_link/newdir/x", "x", create_parents=True)
    with pytest.raises(OutsideRoots):
        fs.write_text(tree.outside / "newdir" / "x", "x", create_parents=True)
    (tree.root / "afile").write_text("")
    with pytest.raises(NotADirectory):
        fs.write_text("afile/sub/x", "x", create_parents=True)


def test_write_refusals(fs: RootedFS, tree: Tree) -> None:
    os.mkfifo(tree.root / "fifo")
    with pytest.raises(NotAFile):
        fs.write_text("fifo", "x")
    with pytest.raises(SymlinkEscape):
        fs.write_text("secret_link", "x")
    os.link(tree.root / "src" / "mod.py", tree.root / "hard.py")
    with pytest.raises(HardLinked):
        fs.write_text("hard.py", "x")
    with pytest.raises(ReadOnly):
        RootedFS(fs.boundary, read_only=True).write_text("new", "x")


# -- directories ---------------------------------------------------------------------------------------------


def test_create_directory(fs: RootedFS, tree: Tree) -> None:
    assert fs.create_directory("a/b/c") == tree.root / "a" / "b" / "c"
    assert (tree.root / "a" / "b" / "c").is_dir()
    assert fs.create_directory("a/b/c") == tree.root / "a" / "b" / "c"  # exists: fine
    with pytest.raises(PathExists):
        fs.create_directory("a/b/c", exist_ok=False)
    assert fs.create_directory(tree.root) == tree.root
    assert fs.create_directory("src/../y") == tree.root / "y"  # ".." through existing levels: resolved
    for path in ("x/../y", "new/.."):
        with pytest.raises(InvalidPath):  # ".." among levels still to be created: refused, not guessed
            fs.create_directory(path)
    assert not (tree.root / "x").exists()
    assert fs.create_directory(tree.other / "o1" / "o2") == tree.other / "o1" / "o2"
    (tree.root / "afile").write_text("")
    with pytest.raises(NotADirectory):
        fs.create_directory("afile/sub")
    with pytest.raises(ReadOnly):
        RootedFS(fs.boundary, read_only=True).create_directory("z")


def test_create_directory_never_follows_links_out(fs: RootedFS, tree: Tree) -> None:
    with pytest.raises(OutsideRoots):
        fs.create_directory("out_link/made")
    with pytest.raises(OutsideRoots):
        fs.create_directory(tree.outside / "made")
    os.symlink(tree.outside / "made", tree.root / "dangling_out")  # absolute, leads outside
    with pytest.raises(OutsideRoots):
        fs.create_directory("dangling_out/x")
    os.symlink("nowhere", tree.root / "dangling_in")  # relative, dangling: a link at a level to be created
    with pytest.raises(SymlinkEscape):
        fs.create_directory("dangling_in/x")
    assert not (tree.root / "nowhere").exists()
    os.symlink("src", tree.root / "src_link")  # an existing in-root link on the way is fine
    assert fs.create_directory("src_link/new") == tree.root / "src" / "new"


def test_mkdir_keeps_its_contract(fs: RootedFS, tree: Tree) -> None:
    assert fs.mkdir("m") == tree.root / "m"
    with pytest.raises(PathExists):
        fs.mkdir("m")
    assert fs.mkdir("m", exist_ok=True) == tree.root / "m"
    with pytest.raises(PathNotFound):
        fs.mkdir("p/q")
    assert fs.mkdir("p/q", parents=True) == tree.root / "p" / "q"
    with pytest.raises(PathExists):
        fs.mkdir(".")


# -- move ----------------------------------------------------------------------------------------------------------


def test_move_files_and_directories(fs: RootedFS, tree: Tree) -> None:
    assert fs.move("src/mod.py", "src/pkg/renamed.py") == tree.root / "src" / "pkg" / "renamed.py"
    assert not (tree.root / "src" / "mod.py").exists()
    assert fs.move("src/pkg", "pkg2") == tree.root / "pkg2"
    assert (tree.root / "pkg2" / "renamed.py").read_text().startswith("def f")
    assert fs.move("pkg2/renamed.py", tree.other / "from_root.py") == tree.other / "from_root.py"  # two roots
    assert fs.move("mod_link", "link2") == tree.root / "link2"  # a link moves as itself
    assert os.readlink(tree.root / "link2") == "src/mod.py"
    assert fs.move("secret_link", "secret_link2") == tree.root / "secret_link2"  # never followed
    assert os.readlink(tree.root / "secret_link2") == str(tree.outside / "secret")


def test_move_overwrite(fs: RootedFS, tree: Tree) -> None:
    (tree.root / "a.txt").write_text("a")
    (tree.root / "b.txt").write_text("b")
    with pytest.raises(PathExists):
        fs.move("a.txt", "b.txt")
    assert fs.move("a.txt", "b.txt", overwrite=True) == tree.root / "b.txt"
    assert (tree.root / "b.txt").read_text() == "a"
    (tree.root / "c.txt").write_text("c")
    os.mkfifo(tree.root / "fifo")
    os.link(tree.root / "src" / "crlf.txt", tree.root / "hard")
    for target, error in [
        ("fifo", NotAFile),
        ("src", IsADirectory),
        ("mod_link", NotAFile),
        ("secret_link", NotAFile),
        ("hard", HardLinked),
    ]:
        with pytest.raises(error):
            fs.move("c.txt", target, overwrite=True)
        with pytest.raises(PathExists):
            fs.move("c.txt", target)
    assert (tree.root / "c.txt").read_text() == "c"
    (tree.root / "d1").mkdir()
    with pytest.raises(NotADirectory):
        fs.move("d1", "c.txt", overwrite=True)


def test_move_refusals(fs: RootedFS, tree: Tree) -> None:
    for source, destination, error in [
        (".", "x", InvalidPath),
        (tree.other, "x", InvalidPath),
        ("src/mod.py", ".", InvalidPath),
        ("src/mod.py", tree.other, InvalidPath),
        ("src", "src/pkg/inner", InvalidPath),
        ("src", "src/inner", InvalidPath),
        ("src/mod.py", tree.outside / "stolen.py", OutsideRoots),
        ("src/mod.py", "out_link/stolen.py", OutsideRoots),
        (tree.outside / "secret", "mine", OutsideRoots),
        ("out_link/secret", "mine", OutsideRoots),
        ("absent", "x", PathNotFound),
        ("src/mod.py", "nodir/x.py", PathNotFound),
    ]:
        with pytest.raises(error):
            fs.move(source, destination)
    assert (tree.root / "src" / "mod.py").exists()
    with pytest.raises(ReadOnly):
        RootedFS(fs.boundary, read_only=True).move("src/mod.py", "x")


def test_move_refuses_carrying_a_nested_root(tree: Tree) -> None:
    with Boundary([tree.root, tree.root / "src" / "pkg"]) as boundary:
        fs = RootedFS(boundary)
        with pytest.raises(InvalidPath):
            fs.move("src", "elsewhere")
        with pytest.raises(InvalidPath):
            fs.move(tree.root / "src" / "pkg", "elsewhere")
        assert fs.move("src/mod.py", "mod.py") == tree.root / "mod.py"
    with Boundary([tree.root, tree.root / "src" / "crlf.txt"]) as boundary, pytest.raises(InvalidPath):
        RootedFS(boundary).move("src", "elsewhere")  # carries a file root


def test_move_across_file_systems_is_refused(tree: Tree) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tree.root).st_dev:
        pytest.skip("needs a second file system (/dev/shm)")
    other = Path(os.path.realpath(shm)) / f"rootbound-test-{os.getpid()}"
    other.mkdir()
    try:
        with Boundary([tree.root, other], cross_mounts=True) as boundary, pytest.raises(FileOperationFailed):
            RootedFS(boundary).move("src/mod.py", other / "x.py")
        assert (tree.root / "src" / "mod.py").exists()
        assert list(other.iterdir()) == []
    finally:
        other.rmdir()


# -- delete --------------------------------------------------------------------------------------------------------


def test_delete_file(fs: RootedFS, tree: Tree) -> None:
    assert fs.delete_file("src/mod.py") == tree.root / "src" / "mod.py"
    assert not (tree.root / "src" / "mod.py").exists()
    assert fs.delete_file("secret_link") == tree.root / "secret_link"  # the link, never its target
    os.link(tree.root / "src" / "crlf.txt", tree.root / "hard")
    fs.delete_file("hard")  # only this name goes
    assert (tree.root / "src" / "crlf.txt").read_bytes() == b"one\r\ntwo\r\n"
    os.mkfifo(tree.root / "fifo")
    for path, error in [
        ("src", IsADirectory),
        (".", IsADirectory),
        ("fifo", NotAFile),
        ("absent", PathNotFound),
        ("out_link/secret", OutsideRoots),
        (tree.outside / "secret", OutsideRoots),
    ]:
        with pytest.raises(error):
            fs.delete_file(path)
    with pytest.raises(ReadOnly):
        RootedFS(fs.boundary, read_only=True).delete_file("src/crlf.txt")


def test_errors_are_typed_and_never_echo(fs: RootedFS, tree: Tree) -> None:
    marker = "SECRET-NAME-42"
    for call in (
        lambda: fs.edit_file(f"{marker}/x", [Edit("a", "b")]),
        lambda: fs.write_text(tree.outside / marker, "x", create_parents=True),
        lambda: fs.create_directory(tree.outside / marker),
        lambda: fs.move(marker, f"{marker}2"),
        lambda: fs.delete_file(marker),
    ):
        with pytest.raises(RootsError) as caught:
            call()
        assert marker not in str(caught.value)
