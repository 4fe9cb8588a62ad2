"""Boundary: root intake, the allowlist intersection, nesting, the relative-path rule, lifetime, and properties.

The attack matrix is in ``test_escapes.py``; this file pins the rules a caller relies on, plus two properties over
generated paths: ``contains()`` is false for everything ``resolve()`` rejects, and both resolvers agree.
"""

from __future__ import annotations

import gc
import os
import platform
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rootbound import (
    Boundary,
    DanglingSymlink,
    InvalidPath,
    InvalidRootURI,
    OutsideRoots,
    PathNotFound,
    Root,
    RootChanged,
    RootsError,
    RootSet,
    RootsUnavailable,
    SymlinkEscape,
    SymlinkLoop,
    path_to_uri,
)
from rootbound.confine import syscalls as o2
from rootbound.confine.boundary import MAX_SYMLINK_HOPS, READ, Resolver, RootLike

RESOLVERS = ["openat2", "walk"]


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """``srv/work`` (the usual root) with a few files, siblings and an outside directory."""
    base = Path(os.path.realpath(tmp_path))
    work = base / "srv" / "work"
    (work / "sub" / "deeper").mkdir(parents=True)
    (work / "sub" / "file.txt").write_text("inside\n")
    (work / "notes.txt").write_text("notes\n")
    (base / "srv" / "work-evil").mkdir()
    (base / "outside").mkdir()
    (base / "outside" / "secret").write_text("secret\n")
    return base


@pytest.fixture(params=RESOLVERS)
def resolver(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# -- intake --------------------------------------------------------------------------------------------------


def test_roots_are_canonicalised_and_accept_every_spelling(base: Path) -> None:
    work = base / "srv" / "work"
    spellings: list[RootLike] = [work, str(work), path_to_uri(work), path_to_uri(work) + "/", Root.from_path(work)]
    with Boundary(spellings) as boundary:
        assert [r.path for r in boundary.roots] == [work]  # deduplicated after canonicalising
        assert boundary.roots[0].kind == "dir"
        assert boundary.roots[0].uri == path_to_uri(work)
        assert boundary.dropped == ()


def test_root_given_through_a_symlink_is_held_and_its_spelling_is_an_alias(base: Path) -> None:
    work = base / "srv" / "work"
    os.symlink(work, base / "srv" / "link")
    with Boundary([base / "srv" / "link"]) as boundary:
        assert boundary.roots[0].path == work
        assert boundary.resolve(f"{base}/srv/link/notes.txt") == work / "notes.txt"
        assert boundary.resolve(f"{work}/notes.txt") == work / "notes.txt"
        # re-pointing the link does not move the root: the alias still means the held directory
        os.unlink(base / "srv" / "link")
        os.symlink(base / "outside", base / "srv" / "link")
        assert boundary.resolve(f"{base}/srv/link/notes.txt") == work / "notes.txt"
        with pytest.raises(PathNotFound):
            boundary.resolve(f"{base}/srv/link/secret")


def test_bad_roots_are_dropped_and_reported_never_widened(base: Path) -> None:
    fifo = base / "fifo"
    os.mkfifo(fifo)
    bad: list[RootLike] = [
        base / "missing",
        fifo,
        "file://host/share",
        "file:///C:/Users/dev",
        "https://example.com/x",
        "/",
        path_to_uri("/"),
    ]
    with Boundary([*bad, base / "srv" / "work"]) as boundary:
        assert [r.path for r in boundary.roots] == [base / "srv" / "work"]
        assert [d.reason for d in boundary.dropped] == [
            "does not exist",
            "not a directory or regular file",
            "invalid root URI",
            "not a local path",
            "invalid root URI",
            "filesystem root not allowed",
            "filesystem root not allowed",
        ]
        assert [d.original for d in boundary.dropped] == bad


def test_filesystem_root_only_with_an_explicit_allowlist(base: Path) -> None:
    with Boundary(["/"], allow=["/"]) as boundary:
        assert [r.path for r in boundary.roots] == [Path("/")]
        assert boundary.resolve(base / "outside" / "secret") == base / "outside" / "secret"
        assert boundary.resolve("etc") == Path("/etc")  # relative: against the first root, here "/"


def test_empty_boundary_denies_everything(base: Path) -> None:
    with Boundary([]) as boundary:
        assert not boundary and len(boundary) == 0
        for candidate in ("notes.txt", ".", str(base), "/"):
            with pytest.raises(OutsideRoots):
                boundary.resolve(candidate)


def test_roots_accept_a_rootset_and_keep_its_version(base: Path) -> None:
    roots = RootSet.of([base / "srv" / "work"], version=7)
    with Boundary(roots) as boundary:
        assert boundary.version == 7
        assert boundary.roots[0].source == roots[0]
        assert boundary.roots[0].name is None


# -- the allowlist intersection -----------------------------------------------------------------------------


def test_intersection_keeps_narrows_and_drops(base: Path) -> None:
    srv, work = base / "srv", base / "srv" / "work"
    (base / "other").mkdir()
    allow = [work / "sub", base / "other"]
    roots = [work / "sub" / "deeper", srv, base / "outside", srv / "work-evil"]
    with Boundary(roots, allow=allow) as boundary:
        assert [(r.path, r.narrowed) for r in boundary.roots] == [
            (work / "sub" / "deeper", False),  # inside an allowed dir: kept as is
            (work / "sub", True),  # contains an allowed dir: narrowed to it
        ]
        assert [d.reason for d in boundary.dropped] == ["not in allowlist", "not in allowlist"]
        assert not boundary.contains(work / "notes.txt")  # the client's wider root never widens the allowlist
        assert boundary.resolve(work / "sub" / "file.txt") == work / "sub" / "file.txt"


def test_intersection_compares_components_not_strings(base: Path) -> None:
    with Boundary([base / "srv" / "work-evil"], allow=[base / "srv" / "work"]) as boundary:
        assert boundary.roots == ()
        assert boundary.dropped[0].reason == "not in allowlist"


def test_intersection_uses_canonical_names_on_both_sides(base: Path) -> None:
    os.symlink(base / "srv", base / "srvlink")
    with Boundary([base / "srv" / "work"], allow=[base / "srvlink"]) as boundary:
        assert [r.path for r in boundary.roots] == [base / "srv" / "work"]
    os.symlink(base / "srv" / "work", base / "worklink")
    with Boundary([base / "worklink"], allow=[base / "outside"]) as boundary:
        assert boundary.roots == ()


def test_file_roots_and_file_allow_entries(base: Path) -> None:
    work = base / "srv" / "work"
    with Boundary([work / "notes.txt"], allow=[work]) as boundary:
        assert [(r.path, r.kind) for r in boundary.roots] == [(work / "notes.txt", "file")]
    with Boundary([work], allow=[work / "notes.txt"]) as boundary:
        assert [(r.path, r.kind, r.narrowed) for r in boundary.roots] == [(work / "notes.txt", "file", True)]
        assert boundary.resolve(work / "notes.txt") == work / "notes.txt"
        with pytest.raises(OutsideRoots):
            boundary.resolve(work / "sub" / "file.txt")


def test_allowlist_problems_are_reported_and_fail_closed(base: Path) -> None:
    with Boundary([base / "srv" / "work"], allow=[base / "missing", "file://remote/x"]) as boundary:
        assert boundary.roots == ()
        assert [d.reason for d in boundary.allow_dropped] == ["does not exist", "invalid root URI"]
    with Boundary([base / "srv" / "work"], allow=[]) as boundary:
        assert boundary.roots == ()


def test_narrowing_keeps_only_outermost_allowed_entries(base: Path) -> None:
    work = base / "srv" / "work"
    with Boundary([base], allow=[work, work / "sub", base / "outside"]) as boundary:
        assert [r.path for r in boundary.roots] == [base / "outside", work]


# -- nesting, relative paths, resolution rules ----------------------------------------------------------------


def test_nested_roots_listed_but_containment_uses_the_outermost(base: Path, resolver: str) -> None:
    work = base / "srv" / "work"
    os.symlink("../notes.txt", work / "sub" / "up")  # leaves sub, stays in work
    with Boundary([work / "sub", work], resolver=resolver) as boundary:  # type: ignore[arg-type]
        assert [r.path for r in boundary.roots] == [work / "sub", work]
        assert boundary.resolve("up") == work / "notes.txt"  # relative: first root (sub), then the union
        assert boundary.resolve(work / "sub" / "up") == work / "notes.txt"
        assert boundary.resolve("../notes.txt") == work / "notes.txt"


def test_symlinks_between_two_roots_are_refused(base: Path, resolver: str) -> None:
    (base / "other").mkdir()
    (base / "other" / "x").write_text("x")
    work = base / "srv" / "work"
    os.symlink(base / "other", work / "to-other")
    with Boundary([work, base / "other"], resolver=resolver) as boundary:  # type: ignore[arg-type]
        assert boundary.resolve(base / "other" / "x") == base / "other" / "x"
        with pytest.raises(SymlinkEscape):
            boundary.resolve("to-other/x")


def test_relative_candidates_use_the_first_root_never_the_cwd(
    base: Path, resolver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = base / "srv" / "work"
    (base / "outside" / "notes.txt").write_text("cwd copy\n")
    monkeypatch.chdir(base / "outside")
    with Boundary([work, base / "outside"], resolver=resolver) as boundary:  # type: ignore[arg-type]
        assert boundary.resolve("notes.txt") == work / "notes.txt"
        assert boundary.resolve(".") == work
        assert boundary.resolve("./sub/./file.txt") == work / "sub" / "file.txt"


def test_no_tilde_expansion_and_no_percent_decoding_of_plain_paths(base: Path, resolver: str) -> None:
    work = base / "srv" / "work"
    (work / "~").mkdir()
    (work / "~" / "x").write_text("literal tilde\n")
    (work / "%2e%2e").mkdir()
    with Boundary([work], resolver=resolver) as boundary:  # type: ignore[arg-type]
        assert boundary.resolve("~/x") == work / "~" / "x"
        assert boundary.resolve("%2e%2e") == work / "%2e%2e"
        assert boundary.resolve(f"file://{work}/%252e%252e") == work / "%2e%2e"  # a URI is decoded once


def test_file_uri_candidates_and_scheme_case(base: Path, resolver: str) -> None:
    work = base / "srv" / "work"
    with Boundary([work], resolver=resolver) as boundary:  # type: ignore[arg-type]
        assert boundary.resolve(path_to_uri(work / "notes.txt")) == work / "notes.txt"
        assert boundary.resolve("FILE://" + str(work / "notes.txt")) == work / "notes.txt"
        assert boundary.resolve(f"file://localhost{work}/notes.txt") == work / "notes.txt"
        with pytest.raises(InvalidRootURI):
            boundary.resolve(f"file://elsewhere{work}/notes.txt")


def test_in_root_symlinks_are_followed_including_absolute_ones(base: Path, resolver: str) -> None:
    work = base / "srv" / "work"
    os.symlink("sub", work / "rel")
    os.symlink(work / "sub", work / "abs")
    os.symlink("../file.txt", work / "sub" / "deeper" / "back")
    with Boundary([work], resolver=resolver) as boundary:  # type: ignore[arg-type]
        assert boundary.resolve("rel/file.txt") == work / "sub" / "file.txt"
        assert boundary.resolve("abs/file.txt") == work / "sub" / "file.txt"
        assert boundary.resolve("sub/deeper/back") == work / "sub" / "file.txt"
        assert boundary.resolve("abs/deeper/../file.txt") == work / "sub" / "file.txt"


def test_symlink_hop_limit_matches_the_kernel(base: Path, resolver: str) -> None:
    work = base / "srv" / "work"
    for index in range(MAX_SYMLINK_HOPS + 1):
        os.symlink(f"l{index + 1}" if index < MAX_SYMLINK_HOPS else "sub", work / f"l{index}")
    with Boundary([work], resolver=resolver) as boundary:  # type: ignore[arg-type]
        assert boundary.resolve("l1/file.txt") == work / "sub" / "file.txt"  # exactly 40 hops
        with pytest.raises(SymlinkLoop):
            boundary.resolve("l0/file.txt")  # 41 hops


def test_must_exist_false(base: Path, resolver: str) -> None:
    work = base / "srv" / "work"
    os.symlink("sub/absent", work / "dangling")
    with Boundary([work], resolver=resolver) as boundary:  # type: ignore[arg-type]
        assert boundary.resolve("sub/new.txt", must_exist=False) == work / "sub" / "new.txt"
        assert boundary.resolve("sub/file.txt", must_exist=False) == work / "sub" / "file.txt"
        with pytest.raises(PathNotFound):
            boundary.resolve("sub/new.txt")
        with pytest.raises(PathNotFound):
            boundary.resolve("missing/new.txt", must_exist=False)
        with pytest.raises(DanglingSymlink):
            boundary.resolve("dangling", must_exist=False)
        with pytest.raises(OutsideRoots):
            boundary.resolve("../new.txt", must_exist=False)


def test_file_root_matches_only_itself(base: Path, resolver: str) -> None:
    notes = base / "srv" / "work" / "notes.txt"
    with Boundary([notes], resolver=resolver) as boundary:  # type: ignore[arg-type]
        assert boundary.resolve(notes) == notes
        assert boundary.resolve(".") == notes  # relative "." against the first root
        for candidate in (f"{notes}/x", f"{notes}/../sub/file.txt", "notes.txt", str(notes.parent)):
            with pytest.raises(RootsError):
                boundary.resolve(candidate)
        os.unlink(notes)
        notes.write_text("replaced\n")
        with pytest.raises(RootChanged):
            boundary.resolve(notes)


def test_errors_never_echo_the_candidate(base: Path) -> None:
    marker = "ZZ-marker-ZZ"
    with Boundary([base / "srv" / "work"]) as boundary:
        for candidate in (f"{marker}/x", f"../{marker}", f"file://{marker}/x", f"{marker}\x00", f"/{marker}"):
            with pytest.raises(RootsError) as caught:
                boundary.resolve(candidate)
            assert marker not in str(caught.value) and marker not in repr(caught.value.to_error())


# -- verify, lifetime and fds ---------------------------------------------------------------------------------


def test_verify_reports_replaced_roots(base: Path) -> None:
    (base / "a").mkdir()
    (base / "b").mkdir()
    with Boundary([base / "a", base / "b"]) as boundary:
        assert boundary.verify() == ()
        os.rename(base / "a", base / "a.old")
        os.symlink(base / "outside", base / "a")
        assert [r.path for r in boundary.verify()] == [base / "a"]


def test_close_releases_fds_and_refuses_later_use(base: Path) -> None:
    before = open_fds()
    boundary = Boundary([base / "srv" / "work", base / "srv" / "work" / "notes.txt"])
    assert open_fds() == before + 3  # a directory root: one fd; a file root: the file and its parent
    boundary.close()
    assert open_fds() == before
    assert boundary.closed
    with pytest.raises(RootsUnavailable):
        boundary.resolve("notes.txt")
    assert not boundary.contains("notes.txt")
    boundary.close()  # idempotent


def test_close_waits_for_in_flight_operations(base: Path) -> None:
    before = open_fds()
    boundary = Boundary([base / "srv" / "work"])
    boundary._acquire()  # an operation in flight
    boundary.close()
    assert open_fds() == before + 1  # not closed under the running operation (its fd number must not be reused)
    boundary._release()
    assert open_fds() == before


def test_finaliser_releases_fds(base: Path) -> None:
    before = open_fds()
    boundary = Boundary([base / "srv" / "work"])
    assert open_fds() == before + 1
    del boundary
    gc.collect()
    assert open_fds() == before


def test_failed_operations_do_not_leak_fds(base: Path, resolver: str) -> None:
    work = base / "srv" / "work"
    os.symlink(base / "outside", work / "out")
    os.symlink("loop", work / "loop")
    with Boundary([work], resolver=resolver) as boundary:  # type: ignore[arg-type]
        before = open_fds()
        for _ in range(50):
            for candidate in ("out/secret", "loop/x", "sub/missing", "../x", "sub/file.txt", "notes.txt/x"):
                boundary.contains(candidate)
        assert open_fds() == before


def test_resolver_selection() -> None:
    assert Boundary([]).resolver == ("openat2" if o2.available() else "walk")
    assert Boundary([], resolver="walk").resolver == "walk"
    with pytest.raises(ValueError, match="resolver"):
        Boundary([], resolver="magic")  # type: ignore[arg-type]


def test_openat2_is_detected_on_this_kernel() -> None:
    """On Linux >= 5.6 (x86_64/aarch64...) the probe must find openat2; a broken probe would silently downgrade."""
    release = tuple(int(p) for p in platform.release().split("-")[0].split(".")[:2])
    if platform.system() == "Linux" and release >= (5, 6) and platform.machine() in ("x86_64", "aarch64"):
        assert o2.available()


@pytest.mark.skipif(not o2.available(), reason="needs openat2")
def test_openat2_never_passes_a_path_with_a_nul_to_the_kernel(base: Path) -> None:
    """ctypes would pass ``b"a\\x00/../x"`` as the C string ``"a"``: both wrappers must refuse it instead (the
    candidate parser refuses NULs first; this is the layer below, which must not depend on it)."""
    (base / "a").write_bytes(b"x")
    fd = os.open(base, os.O_PATH | os.O_DIRECTORY)
    try:
        how = o2.packed_how(os.O_RDONLY | os.O_CLOEXEC, o2.RESOLVE_BENEATH)
        for path in (b"a\x00", b"\x00", b"a\x00/../etc"):
            assert o2.openat2_packed(fd, path, how) == -1
            with pytest.raises(ValueError, match="null"):
                o2.openat2(fd, path, os.O_RDONLY | os.O_CLOEXEC, o2.RESOLVE_BENEATH)
        opened = o2.openat2_packed(fd, b"a", how)  # the same call without the NUL works
        assert opened >= 0
        os.close(opened)
    finally:
        os.close(fd)


def test_statx_facts_agree_with_fstat_and_the_mount_id(base: Path) -> None:
    """The walk takes an object's type, links, size and mount from one statx (instead of fstat + mount_id): for
    every kind of object it must say what those two say."""
    (base / "file").write_bytes(b"12345")
    os.link(base / "file", base / "hard")
    (base / "dir").mkdir()
    os.symlink("file", base / "link")
    os.mkfifo(base / "fifo")
    for path in ("file", "dir", "link", "fifo", "/dev/null", "/proc/self"):
        fd = os.open(base / path, os.O_PATH | os.O_NOFOLLOW)
        try:
            facts = o2.statx_facts(fd)
            assert facts is not None
            st = os.fstat(fd)
            assert (facts.st_mode, facts.st_nlink, facts.st_ino, facts.st_size) == (
                st.st_mode,
                st.st_nlink,
                st.st_ino,
                st.st_size,
            ), path
            assert facts.mnt_id == o2.mount_id(fd), path
        finally:
            os.close(fd)


@pytest.mark.parametrize("resolver", ["openat2", "walk", "portable"])
def test_handle_fstat_is_a_full_stat_whatever_the_typed_open_took(base: Path, resolver: Resolver) -> None:
    """A typed open keeps what it took (on the walk: statx facts); ``Handle.fstat()`` still answers with the
    object's full ``os.stat_result``."""
    if resolver == "openat2" and not o2.available():
        pytest.skip("needs openat2")
    (base / "a").mkdir()
    (base / "a" / "f").write_bytes(b"hello")
    with Boundary([base], resolver=resolver) as boundary, boundary.open("a/f", READ) as handle:
        assert handle.st is not None and handle.st.st_size == 5
        full = handle.fstat()
        assert isinstance(full, os.stat_result)
        assert full == os.stat(base / "a" / "f") and full.st_mtime_ns == os.stat(base / "a" / "f").st_mtime_ns


def test_mount_id_is_known_for_an_ordinary_directory(base: Path) -> None:
    """The walk fallback's bind-mount check relies on it (it falls back to st_dev where it is unknown)."""
    fd = os.open(base, os.O_PATH)
    try:
        assert isinstance(o2.mount_id(fd), int)
    finally:
        os.close(fd)


# -- properties over generated candidates ----------------------------------------------------------------------

_TOKENS = st.sampled_from(
    [
        "sub",
        "file.txt",
        "notes.txt",
        "deeper",
        "..",
        ".",
        "",
        "rel",
        "abs",
        "out",
        "relout",
        "loop",
        "dang",
        "chain",
        "~",
        "%2e%2e",
        "work",
        "work-evil",
        "srv",
        "outside",
        "secret",
        "a\x00b",
        "x\\y",
        "\n",
        "caf\u00e9",
        "\uff0e\uff0e",
    ]
)


@st.composite
def candidates(draw: st.DrawFn) -> str:
    parts = draw(st.lists(_TOKENS, min_size=1, max_size=8))
    prefix = draw(st.sampled_from(["", "/", "ROOT/", "BASE/", "file://ROOT/", "file:///", "FILE://BASE/"]))
    return prefix + "/".join(parts)


@pytest.fixture
def linked(base: Path) -> Path:
    work = base / "srv" / "work"
    os.symlink("sub", work / "rel")
    os.symlink(work / "sub", work / "abs")
    os.symlink(base / "outside", work / "out")
    os.symlink("../../outside", work / "relout")
    os.symlink("loop", work / "loop")
    os.symlink("nowhere", work / "dang")
    os.symlink("rel/deeper/..", work / "chain")
    return base


def _outcome(boundary: Boundary, candidate: str) -> object:
    try:
        return boundary.resolve(candidate)
    except RootsError as exc:
        return type(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=candidates())
def test_contains_is_false_for_everything_resolve_rejects(linked: Path, raw: str) -> None:
    work = linked / "srv" / "work"
    candidate = raw.replace("ROOT", str(work)[1:]).replace("BASE", str(linked)[1:])
    for resolver in RESOLVERS:
        with Boundary([work], resolver=resolver) as boundary:  # type: ignore[arg-type]
            try:
                resolved = boundary.resolve(candidate)
            except RootsError:
                assert not boundary.contains(candidate)
            else:
                assert boundary.contains(candidate)
                assert resolved.is_relative_to(work)
                assert os.path.realpath(resolved) == str(resolved)  # canonical


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=candidates())
def test_both_resolvers_agree(linked: Path, raw: str) -> None:
    work = linked / "srv" / "work"
    candidate = raw.replace("ROOT", str(work)[1:]).replace("BASE", str(linked)[1:])
    with Boundary([work], resolver="openat2") as kernel, Boundary([work], resolver="walk") as walk:
        assert _outcome(kernel, candidate) == _outcome(walk, candidate)


def test_contains_never_raises_on_odd_input(base: Path) -> None:
    with Boundary([base / "srv" / "work"]) as boundary:
        for odd in (None, 3, b"notes.txt", object(), PurePosixPath("notes.txt"), "", "\udcff"):
            boundary.contains(odd)
        assert boundary.contains(PurePosixPath("notes.txt"))
        for bad in ("", "\udcff", b"x"):
            with pytest.raises(InvalidPath):
                boundary.resolve(bad)
