"""RootedFS behaviour inside the roots, for both resolvers: reads, atomic writes, listings, trees, limits, policies.

Escapes are in ``test_escapes.py``; here the operations must do the right thing for legitimate paths.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rootbound import (
    Boundary,
    DanglingSymlink,
    Entry,
    HardLinked,
    InvalidPattern,
    IsADirectory,
    LimitExceeded,
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
    TooLarge,
)
from rootbound.search.rooted_fs import GrepResult

RESOLVERS = ["openat2", "walk"]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    base = Path(os.path.realpath(tmp_path))
    work = base / "work"
    (work / "src" / "pkg").mkdir(parents=True)
    (work / "docs").mkdir()
    (work / "src" / "main.py").write_text("import os\nprint('hello')\n# TODO: fix\n")
    (work / "src" / "pkg" / "__init__.py").write_text("")
    (work / "src" / "pkg" / "mod.py").write_text("def f():\n    return 'Hello'\n")
    (work / "docs" / "guide.md").write_text("# Guide\nhello world\nTODO later\n")
    (work / ".hidden").write_text("dot file\n")
    (work / "data.bin").write_bytes(b"\x00\x01hello\x00")
    (base / "outside").mkdir()
    (base / "outside" / "secret").write_text("secret hello\n")
    return work


@pytest.fixture(params=RESOLVERS)
def fs(request: pytest.FixtureRequest, work: Path) -> Iterator[RootedFS]:
    with Boundary([work]) as boundary:
        yield RootedFS(boundary, resolver=request.param)


def names(paths: list[Path] | tuple[Path, ...], work: Path) -> list[str]:
    return [str(p.relative_to(work)) for p in paths]


# -- reading ---------------------------------------------------------------------------------------------------


def test_read_bytes_and_text(fs: RootedFS, work: Path) -> None:
    assert fs.read_bytes("src/main.py") == (work / "src" / "main.py").read_bytes()
    assert fs.read_text(work / "docs" / "guide.md").startswith("# Guide")
    assert fs.read_bytes(f"file://{work}/src/pkg/__init__.py") == b""


def test_read_limits_and_types(fs: RootedFS, work: Path) -> None:
    (work / "big").write_bytes(b"x" * 10_000)
    assert fs.read_bytes("big", max_size=10_000) == b"x" * 10_000
    with pytest.raises(TooLarge):
        fs.read_bytes("big", max_size=9_999)
    with pytest.raises(IsADirectory):
        fs.read_bytes("src")
    (work / "latin1").write_bytes(b"caf\xe9\n")
    with pytest.raises(NotText):
        fs.read_text("latin1")
    assert fs.read_text("latin1", encoding="latin-1") == "caf\u00e9\n"
    os.mkfifo(work / "fifo")
    with pytest.raises(NotAFile):  # opened non-blocking, then refused: never hangs
        fs.read_bytes("fifo")
    with pytest.raises(PathNotFound):
        fs.read_bytes("nope")


def test_read_refuses_files_growing_past_the_limit(fs: RootedFS, work: Path) -> None:
    """/proc-like files report size 0: the limit is enforced on the bytes actually read."""
    with Boundary(["/proc/self"]) as boundary:
        proc = RootedFS(boundary, resolver=fs.resolver)
        assert b"Name:" in proc.read_bytes("status")
        with pytest.raises(TooLarge):
            proc.read_bytes("status", max_size=10)


def test_read_range(fs: RootedFS, work: Path) -> None:
    (work / "big").write_bytes(bytes(range(256)) * 100)
    data, size = fs.read_range("big", 250, 10)
    assert (data, size) == (bytes(range(250, 256)) + bytes(range(4)), 25_600)
    assert fs.read_range("big", 25_590) == (bytes(range(246, 256)), 25_600)
    with pytest.raises(IsADirectory):
        fs.read_range("src")


def test_stat(fs: RootedFS, work: Path) -> None:
    os.symlink("src/main.py", work / "link")
    assert stat.S_ISREG(fs.stat("link").st_mode)
    assert stat.S_ISLNK(fs.stat("link", follow_symlinks=False).st_mode)
    assert stat.S_ISDIR(fs.stat().st_mode)
    assert fs.stat("src/main.py").st_size == (work / "src" / "main.py").stat().st_size
    assert fs.exists("src") and not fs.exists("nope") and not fs.exists("../outside/secret")


# -- listing ---------------------------------------------------------------------------------------------------


def test_listdir_and_scandir(fs: RootedFS, work: Path) -> None:
    os.symlink(work.parent / "outside", work / "out")
    assert fs.listdir() == sorted([".hidden", "data.bin", "docs", "out", "src"])
    assert fs.listdir("src") == ["main.py", "pkg"]
    entries = fs.scandir()
    assert [(e.path.name, e.kind) for e in entries] == [
        (".hidden", "file"),
        ("data.bin", "file"),
        ("docs", "dir"),
        ("out", "symlink"),
        ("src", "dir"),
    ]
    assert entries[0].path == work / ".hidden"
    with pytest.raises(NotADirectory):
        fs.listdir("src/main.py")


def test_walk(fs: RootedFS, work: Path) -> None:
    os.symlink(work.parent / "outside", work / "out")
    os.symlink("src", work / "srclink")
    found = {str(e.path.relative_to(work)): e.kind for e in fs.walk()}
    assert found == {
        ".hidden": "file",
        "data.bin": "file",
        "docs": "dir",
        "docs/guide.md": "file",
        "out": "symlink",
        "src": "dir",
        "src/main.py": "file",
        "src/pkg": "dir",
        "src/pkg/__init__.py": "file",
        "src/pkg/mod.py": "file",
        "srclink": "symlink",  # listed, never entered (no duplicates, no loops, no escapes)
    }
    assert {str(e.path.relative_to(work)) for e in fs.walk("src", max_depth=1)} == {"src/main.py", "src/pkg"}
    pruned = {str(e.path.relative_to(work)) for e in fs.walk(prune=("pkg", "docs"))}
    assert "src/pkg" in pruned and "src/pkg/mod.py" not in pruned and "docs/guide.md" not in pruned
    assert list(fs.walk("srclink")) == list(fs.walk("src"))  # a start through an in-root link is fine
    with pytest.raises(LimitExceeded):
        list(fs.walk(max_entries=5))


def test_walk_generator_can_be_abandoned(fs: RootedFS, work: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    walker = fs.walk()
    next(walker)
    walker.close()
    assert len(os.listdir("/proc/self/fd")) == before


# -- glob and search ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("*.py", []),
        ("src/*.py", ["src/main.py"]),
        ("**/*.py", ["src/main.py", "src/pkg/__init__.py", "src/pkg/mod.py"]),
        ("src/**/*.py", ["src/main.py", "src/pkg/__init__.py", "src/pkg/mod.py"]),
        ("*/pkg/m?d.py", ["src/pkg/mod.py"]),
        ("*/[mx]*.py", ["src/main.py"]),
        ("*/[!m]*", ["docs/guide.md", "src/pkg"]),
        ("*", [".hidden", "data.bin", "docs", "src"]),
        ("src/main.py", ["src/main.py"]),
        ("src/missing.py", []),
        ("docs/**", ["docs/guide.md"]),
        ("./src/./*.py", ["src/main.py"]),
    ],
)
def test_glob(fs: RootedFS, work: Path, pattern: str, expected: list[str]) -> None:
    assert names(fs.glob(pattern), work) == expected


def test_glob_limits_and_bad_patterns(fs: RootedFS, work: Path) -> None:
    assert names(fs.glob("*.py", "src"), work) == ["src/main.py"]
    with pytest.raises(LimitExceeded):
        fs.glob("**/*", max_results=3)
    for bad in ("", "/etc/*", "../*", "a/../b", "x\x00", "*" * 2000):
        with pytest.raises(InvalidPattern):
            fs.glob(bad)


def test_glob_does_not_enter_symlinks(fs: RootedFS, work: Path) -> None:
    os.symlink("src", work / "srclink")
    assert names(fs.glob("**/main.py"), work) == ["src/main.py"]
    assert names(fs.glob("srclink/*.py"), work) == ["src/main.py"]  # a literal prefix resolves in-root links


def test_search(fs: RootedFS, work: Path) -> None:
    result = fs.search("*.py")
    assert names(result.paths, work) == ["src/main.py", "src/pkg/__init__.py", "src/pkg/mod.py"]
    assert not result.truncated
    small = fs.search("*", max_results=2)
    assert len(small.paths) == 2 and small.truncated
    with pytest.raises(InvalidPattern):
        fs.search("a/b")


# -- grep --------------------------------------------------------------------------------------------------------


def test_grep_literal_regex_and_case(fs: RootedFS, work: Path) -> None:
    literal = fs.grep("hello")
    assert [(str(m.path.relative_to(work)), m.line_number, m.line) for m in literal.matches] == sorted(
        [("docs/guide.md", 2, "hello world"), ("src/main.py", 2, "print('hello')")],
        key=lambda m: [str(x.path.relative_to(work)) for x in literal.matches].index(m[0]),
    )
    assert literal.files_skipped >= 1  # data.bin is binary
    assert {m.path.name for m in fs.grep("hello", ignore_case=True).matches} == {"guide.md", "main.py", "mod.py"}
    regex = fs.grep(r"^(def|import) \w+", regex=True)
    assert sorted((m.path.name, m.line_number) for m in regex.matches) == [("main.py", 1), ("mod.py", 1)]
    assert fs.grep("TODO", include="*.md").files == (work / "docs" / "guide.md",)
    assert fs.grep("hello", binary=True).files_skipped == literal.files_skipped - 1


def test_grep_limits(fs: RootedFS, work: Path) -> None:
    (work / "many.txt").write_text("x\n" * 100)
    capped = fs.grep("x", "many.txt", max_matches=10)
    assert len(capped.matches) == 10 and capped.truncated
    assert [m.line_number for m in capped.matches] == list(range(1, 11))
    assert len(fs.grep("x", "many.txt", files_only=True).matches) == 1
    (work / "huge.txt").write_text("needle\n" * 1000)
    assert fs.grep("needle", max_file_size=100).matches == ()
    long_line = "y" * 5000
    (work / "long.txt").write_text(long_line)
    assert len(fs.grep("y", "long.txt", max_line_length=80).matches[0].line) == 80
    with pytest.raises(InvalidPattern):
        fs.grep("(", regex=True)
    with pytest.raises(LimitExceeded):
        fs.grep("x", max_entries=3)
    assert isinstance(fs.grep("nothing-matches-this"), GrepResult)


def test_grep_skips_symlinks_and_special_files(fs: RootedFS, work: Path) -> None:
    os.symlink(work.parent / "outside" / "secret", work / "leak")
    os.symlink("src/main.py", work / "inroot")
    os.mkfifo(work / "fifo")
    result = fs.grep("hello")
    assert {m.path.name for m in result.matches} == {"guide.md", "main.py"}  # never through a link


# -- writing -----------------------------------------------------------------------------------------------------


def _temp_leftovers(directory: Path) -> list[str]:
    return [n for n in os.listdir(directory) if n.startswith(".rootbound-")]


def test_write_creates_and_replaces_atomically(fs: RootedFS, work: Path) -> None:
    assert fs.write_bytes("new.txt", b"one") == work / "new.txt"
    assert (work / "new.txt").read_bytes() == b"one"
    os.chmod(work / "new.txt", 0o640)
    inode = (work / "new.txt").stat().st_ino
    assert fs.write_text(f"{work}/new.txt", "two") == work / "new.txt"
    assert (work / "new.txt").read_text() == "two"
    assert (work / "new.txt").stat().st_ino != inode  # a new inode renamed into place
    assert stat.S_IMODE((work / "new.txt").stat().st_mode) == 0o640  # permissions kept
    assert _temp_leftovers(work) == []


def test_exclusive_write(fs: RootedFS, work: Path) -> None:
    fs.write_bytes("fresh", b"x", exclusive=True)
    with pytest.raises(PathExists):
        fs.write_bytes("fresh", b"y", exclusive=True)
    assert (work / "fresh").read_bytes() == b"x"


def test_write_through_an_in_root_symlink_writes_its_target(fs: RootedFS, work: Path) -> None:
    os.symlink("src/main.py", work / "alias")
    assert fs.write_text("alias", "rewritten\n") == work / "src" / "main.py"
    assert (work / "alias").is_symlink()
    assert (work / "src" / "main.py").read_text() == "rewritten\n"
    os.symlink("src/absent.py", work / "dangling")
    with pytest.raises(DanglingSymlink):
        fs.write_text("dangling", "x")
    assert not (work / "src" / "absent.py").exists()


def test_write_errors(fs: RootedFS, work: Path) -> None:
    with pytest.raises(IsADirectory):
        fs.write_bytes("src", b"x")
    with pytest.raises(IsADirectory):
        fs.write_bytes(".", b"x")
    with pytest.raises(PathNotFound):
        fs.write_bytes("missing/dir/x", b"x")
    with pytest.raises(NotADirectory):
        fs.write_bytes("src/main.py/x", b"x")
    with pytest.raises(TypeError):
        fs.write_bytes("x", "text")  # type: ignore[arg-type]
    assert _temp_leftovers(work) == []


def test_read_only_and_file_roots(work: Path) -> None:
    with Boundary([work, work / "docs" / "guide.md"]) as boundary:
        read_only = RootedFS(boundary, read_only=True)
        with pytest.raises(ReadOnly):
            read_only.write_bytes("x", b"x")
        with pytest.raises(ReadOnly):
            read_only.mkdir("d")
        assert read_only.read_text("docs/guide.md").startswith("# Guide")
    with Boundary([work / "docs" / "guide.md"]) as boundary:
        file_root = RootedFS(boundary)
        assert file_root.read_text(".").startswith("# Guide")
        with pytest.raises(ReadOnly):
            file_root.write_text(work / "docs" / "guide.md", "x")
        with pytest.raises(OutsideRoots):
            file_root.write_text(work / "docs" / "guide.md" / "x", "x")
        assert file_root.grep("hello", ".").files == (work / "docs" / "guide.md",)
        with pytest.raises(NotADirectory):
            file_root.listdir(".")


def test_hardlink_policies(work: Path) -> None:
    os.link(work / "src" / "main.py", work / "twin")
    with Boundary([work]) as boundary:
        default = RootedFS(boundary)
        assert default.read_bytes("twin") == (work / "src" / "main.py").read_bytes()
        with pytest.raises(HardLinked):
            default.write_bytes("twin", b"x")
        refuse = RootedFS(boundary, hardlinks="refuse")
        with pytest.raises(HardLinked):
            refuse.read_bytes("twin")
        assert "twin" not in {m.path.name for m in refuse.grep("hello").matches}
        assert refuse.grep("hello").files_skipped > default.grep("hello").files_skipped
        allow = RootedFS(boundary, hardlinks="allow")
        allow.write_bytes("twin", b"mine")
        assert (work / "src" / "main.py").read_bytes() != b"mine"  # the other name keeps the old inode
        with pytest.raises(ValueError, match="hardlinks"):
            RootedFS(boundary, hardlinks="sometimes")  # type: ignore[arg-type]


def test_mkdir(fs: RootedFS, work: Path) -> None:
    assert fs.mkdir("a") == work / "a"
    assert (work / "a").is_dir()
    with pytest.raises(PathExists):
        fs.mkdir("a")
    assert fs.mkdir("a", exist_ok=True) == work / "a"
    with pytest.raises(PathNotFound):
        fs.mkdir("b/c")
    assert fs.mkdir("b/c/d", parents=True) == work / "b" / "c" / "d"
    os.symlink("b", work / "blink")
    assert fs.mkdir("blink/c/e", parents=True) == work / "b" / "c" / "e"
    with pytest.raises(PathExists):
        fs.mkdir("src/main.py", exist_ok=True)  # exists, but not as a directory
    os.symlink(work.parent / "outside", work / "out")
    with pytest.raises(SymlinkEscape):
        fs.mkdir("out/x", parents=True)
    assert not (work.parent / "outside" / "x").exists()


# -- misc ----------------------------------------------------------------------------------------------------------


def test_resolver_override_and_repr(work: Path) -> None:
    with Boundary([work], resolver="walk") as boundary:
        assert RootedFS(boundary).resolver == "walk"
        assert RootedFS(boundary, resolver="openat2").resolver == "openat2"
        assert "resolver='walk'" in repr(RootedFS(boundary))
        with pytest.raises(ValueError, match="resolver"):
            RootedFS(boundary, resolver="fast")  # type: ignore[arg-type]


def test_operations_do_not_leak_fds(fs: RootedFS, work: Path) -> None:
    os.symlink(work.parent / "outside", work / "out")
    fs.write_bytes("w.txt", b"x")  # the write domain's ruleset: one fd per root set, held from its first write
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        for op in (
            lambda: fs.read_bytes("src/main.py"),
            lambda: fs.read_bytes("out/secret"),
            lambda: fs.write_bytes("w.txt", b"x"),
            lambda: fs.write_bytes("out/x", b"x"),
            lambda: fs.listdir("src"),
            lambda: list(fs.walk()),
            lambda: fs.glob("**/*.py"),
            lambda: fs.grep("hello"),
            lambda: fs.mkdir("m", exist_ok=True),
            lambda: fs.stat("nope"),
        ):
            with contextlib.suppress(RootsError):
                op()
    assert len(os.listdir("/proc/self/fd")) == before


def test_concurrent_use_from_threads(fs: RootedFS, work: Path) -> None:
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(100):
                fs.write_text(f"t{n}.txt", f"{n}-{i}")
                assert fs.read_text(f"t{n}.txt") == f"{n}-{i}"
                assert "t0.txt" in fs.listdir() or n != 0
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_entry_is_frozen(work: Path) -> None:
    entry = Entry(work, "dir")
    with pytest.raises(AttributeError):
        entry.kind = "file"  # type: ignore[misc]
