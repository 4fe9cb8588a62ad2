"""The pure parts of the reading side: UTF-8-safe windows, RE2 patterns, .gitignore rules (checked against git
itself), content sniffing, and the escaping of names in text output."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootbound.core.errors import InvalidPattern
from rootbound.search.agent_grep import scan
from rootbound.search.ignore_rules import IgnoreRules, PathFilter, name_matcher
from rootbound.search.safe_regex import compile_bytes
from rootbound.text.media_types import sniff
from rootbound.text.read_windows import read_byte_range, read_lines, read_tail, utf8_end, utf8_start
from rootbound.workspace.tools.render import TRUNCATED, bounded, escape, escape_line, fitting, plain, plain_lines
from tests.helpers.trees import git_repository

TEXT = st.text(alphabet=st.sampled_from("ab\n é€𝄞\r\t"), max_size=60)


def pread_of(data: bytes):  # type: ignore[no-untyped-def]
    return lambda offset, length: data[offset : offset + length]


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(0, 70), st.integers(1, 20))
def test_byte_windows_never_split_a_character(text: str, offset: int, length: int) -> None:
    data = text.encode()
    piece = read_byte_range(pread_of(data), len(data), offset, length)
    assert data[piece.start : piece.end].decode() == piece.text  # whole characters only
    assert piece.start <= min(offset, len(data)) <= piece.start + 3
    assert piece.next_offset == (piece.end if piece.end < len(data) else None)
    if offset < len(data):
        assert piece.end > piece.start  # always progress


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(1, 12), st.integers(1, 40))
def test_line_windows_read_on_to_the_whole_file(text: str, first: int, budget: int) -> None:
    """Reading on by the hints from any start line gives back exactly the rest of the file."""
    data = text.encode()
    start = read_lines(pread_of(data), len(data), first, None, budget).start
    out = b""
    piece = read_lines(pread_of(data), len(data), first, None, budget)
    for _ in range(200):
        chunk = piece.text.encode()
        assert data[piece.start : piece.end] == chunk
        out += chunk
        if piece.next_offset is None:
            break
        if piece.next_line is not None:
            piece = read_lines(pread_of(data), len(data), piece.next_line, None, budget)
        else:
            piece = read_byte_range(pread_of(data), len(data), piece.next_offset, budget)  # type: ignore[arg-type]
    assert out == data[start:]


@pytest.mark.parametrize(
    ("count", "expected"),
    [(1, "c\n"), (2, "b\nc\n"), (3, "a\nb\nc\n"), (9, "a\nb\nc\n")],
)
def test_tail(count: int, expected: str) -> None:
    data = b"a\nb\nc\n"
    piece = read_tail(pread_of(data), len(data), count, 100)
    assert piece.text == expected
    assert piece.last_line == 3


def test_tail_keeps_the_last_lines_that_fit_and_numbers_them() -> None:
    data = "".join(f"line {n}\n" for n in range(1, 1001)).encode()
    piece = read_tail(pread_of(data), len(data), 500, 30)
    assert piece.text == "line 998\nline 999\nline 1000\n"
    assert (piece.first_line, piece.last_line) == (998, 1000)


def test_utf8_cuts() -> None:
    data = "a€b".encode()  # a, e2 82 ac, b
    assert [utf8_start(data, i) for i in range(5)] == [0, 1, 1, 1, 4]
    assert [utf8_end(data, i) for i in range(6)] == [0, 1, 1, 1, 4, 5]


CATASTROPHIC = [
    "(a+)+$",
    "(a*)*$",
    "(a|aa)+$",
    "(a|a?)+$",
    "(.*a){20}$",
    "^(\\w+\\s?)*$",
    "(x+x+)+y",
    "([a-zA-Z]+)*$",
]


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_patterns_run_in_linear_time(pattern: str) -> None:
    compiled = compile_bytes(pattern, regex=True)
    line = b"a" * 50_000 + b"!\n"
    started = time.monotonic()
    for _ in range(5):
        compiled.search(line)
    # A backtracking engine takes longer than the age of the universe here; RE2 takes milliseconds.
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(a)\\1", "backreferences"),
        ("(?=a)", "lookaround"),
        ("(?<!a)b", "lookaround"),
        ("a{1001}", "repetition counts above 1000"),
        ("[", "unbalanced [ ]"),
        ("(", "unbalanced ( )"),
        ("(*a)", "nothing to repeat"),
    ],
)
def test_unsupported_regex_gets_a_clear_error_without_the_pattern(pattern: str, reason: str) -> None:
    with pytest.raises(InvalidPattern) as info:
        compile_bytes("EVIL" + pattern, regex=True)
    assert reason in str(info.value)
    assert "EVIL" not in str(info.value)


def test_literal_and_case_folding() -> None:
    assert compile_bytes("a.c", regex=False).search(b"abc") is None
    assert compile_bytes("a.c", regex=False).search(b"xa.c") is not None
    assert compile_bytes("CAFÉ", regex=False, ignore_case=True).search("un café".encode()) is not None
    assert compile_bytes("^x$", regex=True).search(b"a\nx\nb") is not None


def test_scan_context_merges_groups_and_caps() -> None:
    data = b"".join(b"hit\n" if n in (2, 3, 9) else b"x\n" for n in range(1, 13))
    hits, more = scan(data, compile_bytes("hit", regex=False), max_hits=10, context=1)
    assert [(h.number, h.match, h.gap) for h in hits] == [
        (1, False, False), (2, True, False), (3, True, False), (4, False, False),
        (8, False, True), (9, True, False), (10, False, False),
    ]  # fmt: skip
    assert not more
    hits, more = scan(data, compile_bytes("hit", regex=False), max_hits=2)
    assert ([h.number for h in hits], more) == ([2, 3], True)


GITIGNORES = {
    ".gitignore": "*.log\n!keep.log\nbuild/\n/top.txt\nnode_modules\ndocs/**/*.tmp\n",
    "sub/.gitignore": "!*.log\nlocal.txt\n",
    "sub/deeper/.gitignore": "*.log\n",
}
CANDIDATES = [
    "a.log", "keep.log", "x/keep.log", "x/a.log", "build/o.txt", "src/build/o.txt", "top.txt", "x/top.txt",
    "sub/a.log", "sub/local.txt", "local.txt", "sub/deeper/b.log", "sub/deeper/keep.log", "node_modules/i.js",
    "a/node_modules/i.js", "docs/a/b/c.tmp", "docs/c.tmp", "src/main.py",
]  # fmt: skip


def _rules_for(rel: str) -> IgnoreRules:
    rules = IgnoreRules()
    parts = rel.split("/")[:-1]
    for depth in range(len(parts) + 1):
        base = "/".join(parts[:depth])
        key = f"{base}/.gitignore" if base else ".gitignore"
        if key in GITIGNORES:
            rules = rules.child(base + "/" if base else "", GITIGNORES[key].encode())
    return rules


def _ignored_by_walk(rel: str) -> bool:
    """As a walk decides: a directory on the way that is ignored hides everything below it."""
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        directory = "/".join(parts[:depth])
        if _rules_for(directory + "/x").ignored(directory, True):
            return True
    return _rules_for(rel).ignored(rel, False)


def test_gitignore_rules_agree_with_git(tmp_path: Path) -> None:
    repo = git_repository(tmp_path / "repo", {**GITIGNORES, **dict.fromkeys(CANDIDATES, "x\n")})
    result = subprocess.run(
        ["git", "-C", str(repo), "check-ignore", "--no-index", *CANDIDATES], capture_output=True, text=True
    )
    by_git = set(result.stdout.split())
    assert by_git  # the fixture exercises both answers
    for rel in CANDIDATES:
        assert _ignored_by_walk(rel) == (rel in by_git), rel


def test_gitignore_above_the_walk_start_applies_like_git() -> None:
    """Rules of a .gitignore above the start see paths relative to their own directory (lead + rel)."""
    rules = IgnoreRules().child("", b"/src/gen/\n*.log\n!src/keep.log\n", lead="src/")
    assert rules.ignored("a.log", False)
    assert not rules.ignored("keep.log", False)  # src/keep.log, re-included by its full path
    assert rules.ignored("gen", True)  # /src/gen/ is anchored at the ancestor
    assert not rules.ignored("x/gen", True)


def test_path_filter_and_name_globs() -> None:
    where = PathFilter(exclude=["*.min.js", "vendor/"], include=["*.js"])
    rules = IgnoreRules()
    assert where.skip_file(rules, "a/b.min.js", "b.min.js")
    assert not where.skip_file(rules, "a/b.js", "b.js")
    assert where.skip_file(rules, "a/b.py", "b.py")
    assert where.skip_dir(rules, "x/vendor", "vendor")
    assert where.skip_dir(rules, ".git", ".git")
    assert not PathFilter(gitignore=False, skip_git=False).skip_dir(rules, ".git", ".git")
    assert name_matcher("*.py")("a/b.py", "b.py", False)
    assert name_matcher("test_*")("a/test_x", "test_x", True)
    assert name_matcher("src/**/*.py")("src/a/b.py", "b.py", False)
    assert not name_matcher("src/**/*.py")("lib/src/b.py", "b.py", False)
    assert name_matcher("[ab].txt")("x/a.txt", "a.txt", False)
    for bad in ("/etc/*", "!x", "../x", "a\nb", ""):
        with pytest.raises(InvalidPattern):
            name_matcher(bad)
    with pytest.raises(InvalidPattern):
        PathFilter(exclude=["x"] * 65)


def test_hostile_gitignore_is_bounded() -> None:
    """A .gitignore is tree content: pathological globs run on RE2 and cannot stall a walk."""
    rules = IgnoreRules().child("", ("/".join(["**"] * 40) + "/a*a*a*a*a*a*a*a*b\n").encode() * 200)
    started = time.monotonic()
    for i in range(200):
        rules.ignored("/".join(["a"] * 30) + f"/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaac{i}", False)
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    ("head", "kind", "mime"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "image", "image/png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image", "image/jpeg"),
        (b"GIF89a\x01\x00", "image", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image", "image/webp"),
        (b"RIFF\x00\x00\x00\x00WAVEfmt ", "audio", "audio/wav"),
        (b"ID3\x04\x00", "audio", "audio/mpeg"),
        (b"\xff\xfb\x90\x00", "audio", "audio/mpeg"),
        (b"OggS\x00\x02", "audio", "audio/ogg"),
        (b"fLaC\x00\x00", "audio", "audio/flac"),
        (b"\x00\x00\x00\x20ftypM4A \x00", "audio", "audio/mp4"),
        (b"\x00\x00\x00\x1cftypavif\x00", "image", "image/avif"),
        (b"<?xml version='1.0'?>\n<svg xmlns=", "image", "image/svg+xml"),
        (b"BM\x36\x00\x00\x00\x00\x00\x00\x00\x36\x00", "image", "image/bmp"),
        (b"BMI calculator notes\n", "text", "text/plain"),  # a text file that starts like a BMP
        (b"MZ is a fine start for prose\n", "text", "text/plain"),
        (b"%PDF-1.7\n", "binary", "application/pdf"),
        (b"\x7fELF\x02\x01", "binary", "application/x-executable"),
        (b"plain text\n", "text", "text/plain"),
        (b"\x00\x01\x02", "binary", "application/octet-stream"),
    ],
)
def test_sniff(head: bytes, kind: str, mime: str) -> None:
    found = sniff(head)
    assert (found.kind, found.mime) == (kind, mime)


def test_escape_keeps_lines_unforgeable() -> None:
    assert escape("a\nb\x1b[31m\u2028c") == "a\\x0ab\\x1b[31m\\u2028c"
    assert escape("plain/name.py") == "plain/name.py"
    assert escape_line("col1\tcol2\rX") == "col1\tcol2\\x0dX"


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.text(max_size=8), max_size=12), max_output=st.integers(0, 120), more=st.booleans())
def test_bounded_keeps_the_lines_that_fit_and_says_when_it_cut(lines: list[str], max_output: int, more: bool) -> None:
    """What a cut answer shows: the longest prefix of whole lines within ``max_output`` characters (newlines
    counted), and the marker whenever lines were left out or the caller knows of more."""
    kept = 0
    while kept < len(lines) and sum(len(line) + 1 for line in lines[: kept + 1]) <= max_output:
        kept += 1
    assert fitting(lines, max_output) == kept
    out = bounded(lines, max_output, more=more)
    cut = more or kept < len(lines)
    assert out == "\n".join(lines[:kept] + ([TRUNCATED.format(shown=f"the first {kept}")] if cut else []))


@settings(max_examples=300, deadline=None)
@given(names=st.lists(st.text(alphabet=st.sampled_from("aZ~ /.\x00\x1f\x7f\x80\x9f\u0085\u2028\u2029é\u00a0"))))
def test_plain_is_whether_escape_changes_any_name(names: list[str]) -> None:
    """One check for a whole listing (ASCII at C speed, the rest by the search) says what escaping each would."""
    assert plain(names) == all(escape(name) == name for name in names)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.text(alphabet=st.sampled_from("aZ~ \t\n.\x00\x1f\x7f\x80\x9f\u0085\u2028\u2029é\u00a0"))))
def test_plain_lines_is_whether_escape_line_changes_any_line(texts: list[str]) -> None:
    """The grep answer's one check for all its lines (a tab is kept) says what escaping each would."""
    assert plain_lines(texts) == all(escape_line(text) == text for text in texts)
