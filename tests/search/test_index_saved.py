"""The index kept between servers (issue 51): taken up only where the kernel says nothing changed, refused whole
when its file is not exactly what a server wrote, and never an answer other than a full scan's.

Each "server" here is a new :class:`IndexRegistry` over the same saved folder (the processes that change the tree
are separate ones, as in the churn test); ``tests/workspace/test_index_saved_serve.py`` restarts real servers.
"""

from __future__ import annotations

import os
import random
import struct
import threading
import time
from pathlib import Path

import pytest

from rootbound.confine.boundary import Boundary
from rootbound.confine.cache_folder import hold_secure
from rootbound.search.agent_grep import grep_tree
from rootbound.search.grep_query import GrepQuery
from rootbound.search.ignore_rules import PathFilter
from rootbound.search.index import saved as saved_format
from rootbound.search.index.checker import Checker
from rootbound.search.index.indexed_search import grep_with_index
from rootbound.search.index.registry import IndexRegistry
from rootbound.search.index.saved import Refused, SavedStore, decode, saved_name
from rootbound.search.rooted_fs import RootedFS
from rootbound.search.safe_regex import compile_bytes
from tests.helpers.grep_reports import summary
from tests.helpers.index_churn import CHURN_QUERIES, build_tree, change_in_another_process
from tests.search.test_index import WIDE, _names, _ready

QUERIES = [*CHURN_QUERIES, ("nothing", False, False), ("zz-absent-zz", False, False)]


@pytest.fixture(autouse=True)
def take_up_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """These cases are the take up in this process (slowed, watched mid-way); a take up's child forks only where no
    other thread runs, which a test session may or may not be: never here, so each case is the same every run
    (the child's take up: ``tests/search/test_index_checker.py``, each case in a process of its own)."""
    monkeypatch.setattr(Checker, "fork", classmethod(lambda cls, path, max_entries: None))


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A tree whose files are older than the racy window, and a saved folder."""
    root = tmp_path / "tree"
    root.mkdir()
    build_tree(root, fillers=40)
    (tmp_path / "cache").mkdir(mode=0o700)
    time.sleep(saved_format.RACY_NS / 1e9 + 0.2)  # else every file was changed too close to the save to be kept
    return root.resolve(), tmp_path / "cache" / "saved"


def _store(folder: Path) -> SavedStore:
    fd = hold_secure(folder, made=1)
    assert fd is not None
    return SavedStore(fd)


def _server(root: Path, folder: Path) -> tuple[IndexRegistry, SavedStore]:
    """A new server's index of ``root``, ready (taken up from ``folder`` when a saved index is there)."""
    store = _store(folder)
    registry = IndexRegistry([root], cache=None, saved=store)
    registry.start_saved()
    registry.find(str(root) + "/")
    _ready(registry, root)
    thread = _index(registry, root).thread
    assert thread is not None
    thread.join(60)  # the build's last step is the save: a close before it ends gives the save up
    return registry, store


def _index(registry: IndexRegistry, root: Path):  # type: ignore[no-untyped-def]
    return registry.slots[root].current


def _same_as_a_full_scan(registry: IndexRegistry, root: Path, step: object = None) -> int:
    """Every query through the index equals a full scan; how many the index answered."""
    answered = 0
    with Boundary([root]) as boundary:
        fs = RootedFS(boundary)
        for pattern, regex, ignore_case in QUERIES:
            compiled = compile_bytes(pattern, regex=regex, ignore_case=ignore_case)
            required = None if regex or ignore_case else pattern.encode()
            for _ in range(2):  # the second with what the first learnt
                query = GrepQuery(
                    compiled,
                    PathFilter(),
                    source=(pattern, regex, ignore_case),
                    where_key=((), (), True),
                    limits=WIDE,
                    max_files=100_000,
                    required=required,
                    line_local=True,
                )
                report, _ = grep_with_index(registry, fs, str(root), query)
                full = grep_tree(
                    fs, str(root), GrepQuery(compiled, PathFilter(), limits=WIDE, required=required, line_local=True)
                )
                if report is not None:
                    answered += 1
                    assert summary(report) == summary(full), (step, pattern)
        answer, _, walked = _names(registry, fs, root)
        if answer is not None:
            assert answer[0] == walked, step
    return answered


def test_a_new_server_takes_up_the_saved_index_and_reads_only_what_changed(tree: tuple[Path, Path]) -> None:
    root, folder = tree
    first, store = _server(root, folder)
    built = _index(first, root)
    assert not built.loaded and built.reused == 0
    first.close()
    assert os.listdir(folder) == [saved_name(str(root))]
    assert os.stat(folder / saved_name(str(root))).st_mode & 0o777 == 0o600
    assert os.stat(folder).st_mode & 0o777 == 0o700

    second, store = _server(root, folder)
    taken = _index(second, root)
    assert taken.loaded and store.refused == []
    files = len(taken.kinds)
    assert taken.reused >= files - 3  # all but the two links to one file (read by every query) and the unreadable
    assert _same_as_a_full_scan(second, root) > 0
    second.close()

    (root / "d0" / "e0" / "f0.py").write_text("def getaddrinfo_changed(): pass\n")  # while no server ran
    (root / "d3" / "new.py").write_text("class NewError(\n")
    os.unlink(root / "d2" / "e2" / "f2.py")
    third, store = _server(root, folder)
    taken = _index(third, root)
    assert taken.loaded and taken.reused < files
    assert _same_as_a_full_scan(third, root) > 0
    third.close()


def test_the_index_stays_a_full_scan_across_restarts(tree: tuple[Path, Path], tmp_path: Path) -> None:
    """The churn test across restarts: each round a change while no server runs, a new server that takes up the
    saved index, a change while it runs; every answer equals a full scan."""
    root, folder = tree
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    taken_up = answered = 0
    for step in range(36):
        change_in_another_process(root, outside, step)  # while no server runs
        registry, _ = _server(root, folder)
        taken_up += _index(registry, root).loaded
        answered += _same_as_a_full_scan(registry, root, ("restarted", step))
        change_in_another_process(root, outside, step + 1003)  # while it runs (another kind, its own names)
        answered += _same_as_a_full_scan(registry, root, ("running", step))
        registry.close()
    assert taken_up >= 30  # most rounds took up the saved index (a round after a big change may build afresh)
    assert answered >= 36 * len(QUERIES) * 2


# -- a saved file that is not what a server wrote ---------------------------------------------------------------


def _saved_bytes(tree: tuple[Path, Path]) -> bytes:
    root, folder = tree
    registry, _ = _server(root, folder)
    registry.close()
    return (folder / saved_name(str(root))).read_bytes()


def _with_body(data: bytes, body: bytes) -> bytes:
    """``body`` as a saved file's, its length and checksum made right (a hostile file, not a damaged one)."""
    import hashlib

    head = struct.Struct("<8sIIQ32s")
    magic, version, flags, _, _ = head.unpack_from(data)
    return head.pack(magic, version, flags, len(body), hashlib.sha256(body).digest()) + body


def _taken_up_or_refused(tree: tuple[Path, Path], data: bytes) -> tuple[bool, list[str]]:
    """Plant ``data`` as the saved index, start a server: it never crashes and answers as a full scan."""
    root, folder = tree
    path = folder / saved_name(str(root))
    path.unlink(missing_ok=True)
    path.write_bytes(data)
    path.chmod(0o600)
    registry, store = _server(root, folder)
    try:
        assert _index(registry, root).state == "ready"
        assert _same_as_a_full_scan(registry, root) > 0
        return _index(registry, root).loaded, store.refused
    finally:
        registry.close()


def test_damaged_saved_files_are_refused_and_the_server_builds(tree: tuple[Path, Path]) -> None:
    good = _saved_bytes(tree)
    rng = random.Random(51)
    head = struct.calcsize("<8sIIQ32s")
    cases = [b"", good[:7], good[: head + 3], good[:-1], good + b"\0", b"\0" * len(good)]
    cases.append(good[:8] + struct.pack("<I", 2) + good[12:])  # another format version
    cases += [rng.randbytes(rng.randrange(1, 4096)) for _ in range(4)]
    for _ in range(12):  # bytes flipped anywhere
        at = rng.randrange(len(good))
        cases.append(good[:at] + bytes([good[at] ^ (1 << rng.randrange(8))]) + good[at + 1 :])
    for _ in range(6):  # cut anywhere
        cases.append(good[: rng.randrange(len(good))])
    for data in cases:
        loaded, refused = _taken_up_or_refused(tree, data)
        assert not loaded and len(refused) == 1, refused


def test_hostile_saved_files_with_a_right_checksum_are_refused(tree: tuple[Path, Path]) -> None:
    """A body rewritten whole (its checksum made right): every field that does not fit is refused."""
    root, _ = tree
    good = _saved_bytes(tree)
    head = struct.calcsize("<8sIIQ32s")
    body = good[head:]
    (size,) = struct.unpack_from("<Q", body)
    meta = body[8 : 8 + size]
    import json

    parsed = json.loads(meta)

    def rewritten(change: object) -> bytes:
        new = json.dumps(change).encode()
        new = new + b" " * (len(meta) - len(new)) if len(new) <= len(meta) else new
        lead = struct.pack("<Q", len(new)) + new
        rest = body[(8 + size + 7) & ~7 :]
        pad = b"\0" * (((len(lead) + 7) & ~7) - len(lead))
        return _with_body(good, lead + pad + rest)

    def edit(**changes: object) -> dict[str, object]:
        return {**parsed, **changes}

    blobs = parsed["blobs"]
    hostile = [
        rewritten(edit(dir="/elsewhere")),  # swapped in from another DIR
        rewritten(edit(ino=parsed["ino"] + 1)),  # the same path, another directory
        rewritten(edit(total=parsed["total"] + 1)),
        rewritten(edit(files=parsed["files"] + 1)),
        rewritten(edit(files=-1)),
        rewritten(edit(saved_ns="now")),
        rewritten(edit(segments=[70_000])),
        rewritten(edit(blobs={**blobs, "names": [1 << 40, 8]})),
        rewritten(edit(blobs={**blobs, "records": [blobs["records"][0] + 4, blobs["records"][1]]})),
        rewritten(edit(blobs={**blobs, "0.ids": [blobs["0.keys"][0], blobs["0.ids"][1]]})),
        rewritten(edit(blobs={**blobs, "0.keys": [blobs["0.dense"][0], blobs["0.keys"][1]]})),
        rewritten([1, 2, 3]),
        _with_body(good, struct.pack("<Q", 1 << 62) + body[8:]),
        _with_body(good, body[:8] + b"[" * len(meta) + body[8 + len(meta) :]),
    ]
    for data in hostile:
        with pytest.raises(Refused):
            decode(data, str(root), (os.stat(root).st_dev, os.stat(root).st_ino))
    for data in hostile[:3]:
        loaded, refused = _taken_up_or_refused(tree, data)
        assert not loaded and len(refused) == 1, refused


def test_a_saved_file_swapped_in_from_another_dir_is_refused(tree: tuple[Path, Path], tmp_path: Path) -> None:
    _, folder = tree
    other = tmp_path / "other"
    other.mkdir()
    (other / "g.py").write_text("getaddrinfo elsewhere\n")
    registry, _ = _server(other.resolve(), folder)
    registry.close()
    swapped = (folder / saved_name(str(other.resolve()))).read_bytes()
    loaded, refused = _taken_up_or_refused(tree, swapped)
    assert not loaded and refused == ["saved for another directory"]


def test_a_link_or_a_file_others_may_write_is_never_taken_up(tree: tuple[Path, Path], tmp_path: Path) -> None:
    root, folder = tree
    good = _saved_bytes(tree)
    path = folder / saved_name(str(root))
    elsewhere = tmp_path / "planted.rbi"
    elsewhere.write_bytes(good)
    elsewhere.chmod(0o600)
    path.unlink()
    path.symlink_to(elsewhere)
    registry, store = _server(root, folder)
    assert not _index(registry, root).loaded and store.refused == []  # never opened: nothing to refuse
    assert _same_as_a_full_scan(registry, root) > 0
    registry.close()
    assert elsewhere.read_bytes() == good  # the link was replaced, never written through
    assert not path.is_symlink()
    path.unlink()
    path.write_bytes(good)
    path.chmod(0o644)  # readable by others: not one this server wrote
    registry, _ = _server(root, folder)
    assert not _index(registry, root).loaded
    registry.close()


def test_the_saved_indexes_are_bounded_least_recently_used_first(tmp_path: Path) -> None:
    folder = tmp_path / "saved"
    (tmp_path / "c").mkdir()
    dirs = []
    for n in range(5):
        d = tmp_path / f"dir{n}"
        d.mkdir()
        (d / "a.py").write_text(f"getaddrinfo {n}\n")
        dirs.append(d.resolve())
    for d in dirs:
        store = _store(folder)
        store.max_files = 3
        registry = IndexRegistry([d], cache=None, saved=store)
        registry.find(str(d) + "/")
        _ready(registry, d)
        registry.close()
        time.sleep(0.02)
    assert sorted(os.listdir(folder)) == sorted(saved_name(str(d)) for d in dirs[2:])


SWAPPER = r"""
import os, sys, time
folder, elsewhere, stop = sys.argv[1], sys.argv[2], sys.argv[3]
moved = folder + ".moved"
while not os.path.exists(stop):
    try:
        os.rename(folder, moved)             # the held folder moved away ...
        os.symlink(elsewhere, folder)        # ... and a link to elsewhere in its place
        time.sleep(0.01)
        os.unlink(folder)
        os.rename(moved, folder)
    except OSError:
        pass
"""


def test_a_process_swapping_the_saved_folder_for_a_link_never_gets_a_write_elsewhere(
    tree: tuple[Path, Path], tmp_path: Path
) -> None:
    """A separate process keeps moving the saved folder away and planting a link to another folder in its place
    while servers save and take up indexes: every write stays in the folder the store holds open (or, for a store
    opened meanwhile, is refused), nothing is written or removed through the link, and answers equal a full scan."""
    import subprocess
    import sys

    root, folder = tree
    _store(folder).close()  # made before the swapping starts
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.rbi").write_bytes(b"keep")
    stop = tmp_path / "stop"
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(folder), str(elsewhere), str(stop)])
    try:
        for _ in range(6):
            fd = hold_secure(folder, made=1)  # a new server's start: the link is refused, never followed
            if fd is None:
                continue
            registry = IndexRegistry([root], cache=None, saved=SavedStore(fd))
            registry.start_saved()
            registry.find(str(root) + "/")
            _ready(registry, root)
            assert _same_as_a_full_scan(registry, root) > 0
            registry.close()
            os.close(fd)
    finally:
        stop.touch()
        swapper.wait(30)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.rbi"]
    assert (elsewhere / "keep.rbi").read_bytes() == b"keep"


def test_queries_while_a_saved_index_is_taken_up_equal_a_full_scan(
    tree: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the take up checks files one by one (slowed here), queries use the saved postings for the files
    already checked and open every other one; files re-read (changed while no server ran) count only once their
    postings are searchable; changes made meanwhile by another process are seen. Every answer is a full scan's."""
    from rootbound.search.index import kept_files, tree_index

    root, folder = tree
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    registry, _ = _server(root, folder)
    registry.close()
    slow = kept_files.kept

    def kept_slowly(*args: object) -> bool:
        time.sleep(0.004)
        return slow(*args)  # type: ignore[arg-type]  # the build's own call, slowed

    monkeypatch.setattr(tree_index, "kept", kept_slowly)  # the name the build calls
    during = 0
    for step in range(6):
        change_in_another_process(root, outside, step)  # while no server runs: re-read by the take up
        store = _store(folder)
        registry = IndexRegistry([root], cache=None, saved=store)
        registry.start_saved()
        index = _index(registry, root)
        for round_ in range(40):
            if index.state == "ready":
                break
            if index.checking:
                during += _same_as_a_full_scan(registry, root, (step, round_)) > 0
                change_in_another_process(root, outside, 2000 + step * 40 + round_)  # meanwhile
            time.sleep(0.01)
        _ready(registry, root)
        assert _same_as_a_full_scan(registry, root, (step, "after")) > 0
        registry.close()
        store.close()
    assert during >= 6  # the index answered while it was being taken up


def test_a_save_given_up_by_a_closing_server_leaves_the_old_file_and_no_temporary(tree: tuple[Path, Path]) -> None:
    root, folder = tree
    good = _saved_bytes(tree)
    store = _store(folder)
    snap = store.load(root, (os.stat(root).st_dev, os.stat(root).st_ino))
    assert snap is not None
    snap.saved_ns += 1
    store.save(snap, stop=lambda: True)  # closing: given up between pieces
    assert os.listdir(folder) == [saved_name(str(root))]
    assert (folder / saved_name(str(root))).read_bytes() == good
    store.save(snap)
    assert (folder / saved_name(str(root))).read_bytes() != good
    assert decode((folder / saved_name(str(root))).read_bytes(), str(root), snap.identity).saved_ns == snap.saved_ns
    store.close()


def _taken_up_and_held(
    root: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[IndexRegistry, SavedStore, threading.Event]:
    """A new server taking up the saved index, its take up held before it checks any file (until the event is
    set): every query meanwhile checks each file against the saved records itself."""
    from rootbound.search.index import kept_files, tree_index

    release = threading.Event()
    real = kept_files.kept

    def kept_later(*args: object) -> bool:
        release.wait(120)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(tree_index, "kept", kept_later)  # the name the build calls
    store = _store(folder)
    registry = IndexRegistry([root], cache=None, saved=store)
    registry.start_saved()
    index = _index(registry, root)
    for _ in range(1200):
        if index.checking:
            break
        time.sleep(0.05)
    assert index.checking and index.reused == 0, index.state
    return registry, store, release


def test_a_file_changed_with_its_mtime_set_back_is_never_answered_from_its_saved_postings(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same size, content changed to match, ``mtime`` set back with ``utime`` while no server ran: only its ctime
    says so. A query made before the take up reached it must search it, not trust its saved postings."""
    root, folder = tree
    registry, store = _server(root, folder)
    registry.close()
    store.close()
    target = root / "d2" / "e2" / "f2.py"  # "nothing\n" twice: no match in the saved postings
    before = os.stat(target)
    target.write_bytes(b"getaddrinfo!!!!\n")
    assert os.stat(target).st_size == before.st_size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    registry, store, release = _taken_up_and_held(root, folder, monkeypatch)
    try:
        assert _same_as_a_full_scan(registry, root, "held") > 0
        with Boundary([root]) as boundary:
            query = GrepQuery(
                compile_bytes("getaddrinfo", regex=False, ignore_case=False),
                PathFilter(),
                source=("getaddrinfo", False, False),
                where_key=((), (), True),
                limits=WIDE,
                max_files=100_000,
                required=b"getaddrinfo",
                line_local=True,
            )
            report, status = grep_with_index(registry, RootedFS(boundary), str(root), query)
        assert report is not None, status
        assert str(target) in [display for display, _ in report.files]
    finally:
        release.set()
        registry.close()
        store.close()


def test_a_directory_whose_listing_changed_while_no_server_ran_is_walked_again(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files created, removed, renamed and two names swapped in one directory while no server ran: a query made
    during the take up lists what is there now and checks each file by its own record, never by another name's."""
    root, folder = tree
    registry, store = _server(root, folder)
    registry.close()
    store.close()
    where = root / "d0" / "e1"
    names = sorted(p.name for p in where.iterdir())
    (where / "added.py").write_text("def getaddrinfo_added(): pass\nclass AddedError(\n")
    os.unlink(where / names[0])
    os.rename(where / names[1], where / "renamed.py")
    os.rename(where / names[2], where / "swap.tmp")  # a file with a match and one with none, names swapped
    os.rename(where / names[3], where / names[2])
    os.rename(where / "swap.tmp", where / names[3])
    registry, store, release = _taken_up_and_held(root, folder, monkeypatch)
    try:
        assert _same_as_a_full_scan(registry, root, "held") > 0
    finally:
        release.set()
        registry.close()
        store.close()


def test_the_first_query_takes_up_the_saved_index_when_the_build_thread_has_not_run(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build thread held before its first step (as a thread the kernel runs last may be): the first query loads
    the saved index itself and answers from it, checking every file itself; each answer is a full scan's."""
    from rootbound.search.index import tree_index

    root, folder = tree
    registry, store = _server(root, folder)
    registry.close()
    store.close()
    (root / "d3" / "e0" / "f3.py").write_text("def getaddrinfo_while_no_server_ran(): pass\n")
    release = threading.Event()
    real = tree_index.TreeIndex._build

    def held_build(self: tree_index.TreeIndex) -> None:
        release.wait(120)
        real(self)

    monkeypatch.setattr(tree_index.TreeIndex, "_build", held_build)
    store = _store(folder)
    registry = IndexRegistry([root], cache=None, saved=store)
    registry.start_saved()
    try:
        assert _same_as_a_full_scan(registry, root, "first") == 2 * len(QUERIES)
        assert _index(registry, root).reused == 0  # nothing checked by the take up: every answer checked by itself
    finally:
        release.set()
        registry.close()
        store.close()
