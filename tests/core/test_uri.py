"""rootbound.core.uri: strict file URIs, every URI-shaped class in docs/threats.md, and round-trip properties."""

from __future__ import annotations

import string
from pathlib import PurePath, PurePosixPath, PureWindowsPath

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rootbound import InvalidPath, InvalidRootURI, RootsError, canonical_uri, path_to_uri, uri_to_path
from rootbound.core.uri import MAX_COMPONENT_BYTES, child_uri

ACCEPTED: list[tuple[str, PurePath]] = [
    ("file:///srv/work", PurePosixPath("/srv/work")),
    ("file:///srv/work/", PurePosixPath("/srv/work")),
    ("FILE:///srv/work", PurePosixPath("/srv/work")),
    ("File:///srv/work", PurePosixPath("/srv/work")),
    ("file://localhost/srv/work", PurePosixPath("/srv/work")),
    ("file://LOCALHOST/srv/work", PurePosixPath("/srv/work")),
    ("file:///", PurePosixPath("/")),
    ("file://localhost/", PurePosixPath("/")),
    ("file:///a%20b", PurePosixPath("/a b")),
    ("file:///caf%C3%A9", PurePosixPath("/café")),
    ("file:///caf%c3%a9", PurePosixPath("/café")),
    ("file:///café", PurePosixPath("/café")),  # raw IRI character
    ("file:///%252e%252e/etc", PurePosixPath("/%2e%2e/etc")),  # decoded once: a literal name
    ("file:///%2525", PurePosixPath("/%25")),
    ("file:///a%3Fb", PurePosixPath("/a?b")),
    ("file:///a%23b", PurePosixPath("/a#b")),
    ("file:///~/x", PurePosixPath("/~/x")),  # '~' is an ordinary character
    ("file:///...", PurePosixPath("/...")),
    ("file:///.hidden", PurePosixPath("/.hidden")),
    ("file:///a;b=c,d@e:f", PurePosixPath("/a;b=c,d@e:f")),
    ("file:///C%3A/x", PurePosixPath("/C:/x")),  # an encoded colon is not a drive
    ("file:///C:/x/y", PureWindowsPath("C:/x/y")),
    ("file:///c:/x", PureWindowsPath("C:/x")),
    ("file:///C:/", PureWindowsPath("C:/")),
    ("file://localhost/D:/Projects/My%20App", PureWindowsPath("D:/Projects/My App")),
    ("file:///%EF%BC%8E%EF%BC%8E%EF%BC%8Fx", PurePosixPath("/．．／x")),  # fullwidth: data, never NFKC'd
    ("file:///cafe%CC%81", PurePosixPath("/cafe\u0301")),  # NFD kept as sent
]

REJECTED: list[tuple[str, str]] = [
    # 1.9 authority and malformed forms
    ("file://attacker.example/share/x", "non-local authority"),
    ("file://srv/work/x", "non-local authority"),
    ("file://127.0.0.1/x", "non-local authority"),
    ("file://user@localhost/x", "non-local authority"),
    ("file://localhost:80/x", "non-local authority"),
    ("file://[::1]/x", "non-local authority"),
    ("file:////server/share/x", "dot or empty segment"),  # UNC in URI form
    ("file://///server/share", "dot or empty segment"),
    ("file:srv/work", "file URI without authority"),
    ("file:/srv/work", "file URI without authority"),
    ("file:", "file URI without authority"),
    ("file://", "empty path"),
    ("file://localhost", "empty path"),
    ("http://example.com/x", "scheme is not file"),
    ("https:///srv/work", "scheme is not file"),
    ("filex:///srv", "scheme is not file"),
    ("fil:///srv", "scheme is not file"),
    ("/srv/work", "no scheme"),
    ("srv/work", "no scheme"),
    ("", "no scheme"),
    (" file:///srv", "no scheme"),
    ("file:///srv/work?x=1", "query not allowed"),
    ("file:///srv/work?", "query not allowed"),
    ("file:///srv/work#frag", "fragment not allowed"),
    ("file:///srv/work#", "fragment not allowed"),
    # 1.8 percent-encoding
    ("file:///srv/work/a%2F..%2F..%2Fetc%2Fpasswd", "encoded separator or NUL"),
    ("file:///srv/work/a%2f..", "encoded separator or NUL"),
    ("file:///srv/work/a%5C..%5Cx", "encoded separator or NUL"),
    ("file:///srv/work/a%5c", "encoded separator or NUL"),
    ("file:///srv/work/notes.txt%00.png", "encoded separator or NUL"),
    ("file:///srv/%", "bad percent-encoding"),
    ("file:///srv/%4", "bad percent-encoding"),
    ("file:///srv/%zz", "bad percent-encoding"),
    ("file:///srv/%G0", "bad percent-encoding"),
    ("file:///srv/%ff", "not valid UTF-8"),
    ("file:///srv/%C3", "not valid UTF-8"),
    ("file:///srv/%C3%28", "not valid UTF-8"),
    ("file:///srv/%ED%A0%80", "not valid UTF-8"),  # encoded surrogate
    ("file:///srv/%C0%AE%C0%AE", "not valid UTF-8"),  # overlong '..'
    # 1.2 dot segments, raw and encoded
    ("file:///srv/work/../etc/passwd", "dot or empty segment"),
    ("file:///srv/work/./x", "dot or empty segment"),
    ("file:///srv/work/..", "dot or empty segment"),
    ("file:///..", "dot or empty segment"),
    ("file:///srv/work/%2e%2e/etc", "dot or empty segment"),
    ("file:///srv/work/%2E%2E", "dot or empty segment"),
    ("file:///srv/work/.%2e/x", "dot or empty segment"),
    ("file:///srv/work/%2e", "dot or empty segment"),
    ("file:///srv//work", "dot or empty segment"),
    ("file:///srv/work//", "dot or empty segment"),
    # 1.11 NUL and control characters
    ("file:///srv/work/a\x00b", "character not allowed in a URI"),
    ("file:///srv/work/%01", "control character"),
    ("file:///srv/work/report%0A%5BINFO%5D", "control character"),
    ("file:///srv/work/report%0Aok", "control character"),
    ("file:///srv/work/a%0Db", "control character"),
    ("file:///srv/work/a%7Fb", "control character"),
    ("file:///srv/work/a%C2%85b", "control character"),  # C1 NEL
    ("file:///srv/work/a\tb", "character not allowed in a URI"),
    ("file:///srv/work/a b", "character not allowed in a URI"),
    ("file:///srv/work/a\\..\\b", "character not allowed in a URI"),
    ('file:///srv/"x"', "character not allowed in a URI"),
    ("file:///srv/<x>", "character not allowed in a URI"),
    ("file:///srv/x\x85", "control character"),
    # 1.10 Windows forms
    ("file:///C:", "drive-relative path"),
    ("file:///c|/x", "legacy drive form"),
    ("file:///C|/x", "legacy drive form"),
    ("file:///C:/secret.txt::$DATA", "character not allowed on Windows"),
    ("file:///C:/a%3Ab", "character not allowed on Windows"),
    ("file:///C:/secret.", "trailing dot or space"),
    ("file:///C:/secret%20", "trailing dot or space"),
    ("file:///C:/CON", "reserved Windows device name"),
    ("file:///C:/nul.txt", "reserved Windows device name"),
    ("file:///C:/x/com1", "reserved Windows device name"),
    ("file:///C:/LPT9.log", "reserved Windows device name"),
    ("file:///C:/a%3Cb", "character not allowed on Windows"),
    ("file:///C:/../x", "dot or empty segment"),
    # 1.13 overlong
    ("file:///" + "a" * 256, "segment too long"),
    ("file:///" + "%C3%A9" * 128, "segment too long"),
    ("file:///" + "a/" * 5000, "URI too long"),
]


@pytest.mark.parametrize(("uri", "expected"), ACCEPTED)
def test_accepted_uris_parse_to_the_expected_path(uri: str, expected: PurePath) -> None:
    path = uri_to_path(uri)
    assert path == expected
    assert type(path) is type(expected)
    assert uri_to_path(path_to_uri(path)) == path


@pytest.mark.parametrize(("uri", "reason"), REJECTED)
def test_rejected_uris_raise_invalid_root_uri_with_the_reason_class(uri: str, reason: str) -> None:
    with pytest.raises(InvalidRootURI) as info:
        uri_to_path(uri)
    assert info.value.reason == reason
    assert info.value.code == -32602
    # The message and JSON-RPC error never carry the submitted text.
    payload = str(info.value) + repr(info.value.to_error())
    for fragment in ("attacker", "passwd", "secret", "server", "srv", "DATA", "work"):
        assert fragment not in payload


def test_non_string_inputs_are_invalid() -> None:
    for value in (None, 1, b"file:///x", ["file:///x"]):
        with pytest.raises(InvalidRootURI):
            uri_to_path(value)  # type: ignore[arg-type]


def test_max_length_is_configurable() -> None:
    uri = "file:///" + "a/" * 100 + "b"
    assert uri_to_path(uri) == PurePosixPath("/" + "a/" * 100 + "b")
    with pytest.raises(InvalidRootURI) as info:
        uri_to_path(uri, max_length=50)
    assert info.value.reason == "URI too long"


def test_double_encoding_is_decoded_exactly_once() -> None:
    path = uri_to_path("file:///srv/work/%252e%252e/etc/passwd")
    assert path.parts == ("/", "srv", "work", "%2e%2e", "etc", "passwd")
    # Encoding the decoded path again re-escapes the '%': nothing is ever decoded twice.
    assert path_to_uri(path) == "file:///srv/work/%252e%252e/etc/passwd"


PATH_TO_URI: list[tuple[PurePath | str, str]] = [
    (PurePosixPath("/srv/work"), "file:///srv/work"),
    (PurePosixPath("/"), "file:///"),
    (PurePosixPath("/a b/c#d?e%f"), "file:///a%20b/c%23d%3Fe%25f"),
    (PurePosixPath("/café"), "file:///caf%C3%A9"),
    (PurePosixPath('/a[b]{c}|d^e`f"g<h>'), "file:///a%5Bb%5D%7Bc%7D%7Cd%5Ee%60f%22g%3Ch%3E"),
    (PurePosixPath("/a;b=c,d@e:f!$&'()*+~"), "file:///a;b=c,d@e:f!$&'()*+~"),
    (PurePosixPath("/C:/x"), "file:///C%3A/x"),
    (PureWindowsPath("C:/Users/me/My Project"), "file:///C:/Users/me/My%20Project"),
    (PureWindowsPath("c:\\x"), "file:///C:/x"),
    (PureWindowsPath("D:\\"), "file:///D:/"),
    ("/srv/work", "file:///srv/work"),
]


@pytest.mark.parametrize(("path", "uri"), PATH_TO_URI)
def test_path_to_uri_encodes_everything_outside_pchar(path: PurePath | str, uri: str) -> None:
    assert path_to_uri(path) == uri


PATH_TO_URI_REFUSED: list[PurePath | str] = [
    PurePosixPath("relative/path"),
    PurePosixPath("."),
    "relative",
    "",
    PurePosixPath("/a/../b"),
    PurePosixPath("//double/slash"),
    PurePosixPath("/a\\b"),
    PurePosixPath("/a\nb"),
    "/a\x00b",
    PurePosixPath("/" + "x" * (MAX_COMPONENT_BYTES + 1)),
    PurePosixPath("/bad\udcff"),
    PureWindowsPath("C:relative"),
    PureWindowsPath("\\\\server\\share\\x"),
    PureWindowsPath("\\\\?\\UNC\\attacker\\share\\x"),
    PureWindowsPath("\\\\?\\C:\\x"),
    PureWindowsPath("\\x"),
    PureWindowsPath("C:/secret.txt:$DATA"),
    PureWindowsPath("C:/secret."),
    PureWindowsPath("C:/aux.c"),
]


@pytest.mark.parametrize("path", PATH_TO_URI_REFUSED, ids=repr)
def test_path_to_uri_refuses_what_cannot_round_trip(path: PurePath | str) -> None:
    with pytest.raises(InvalidPath):
        path_to_uri(path)


def test_path_to_uri_refuses_non_paths() -> None:
    with pytest.raises(InvalidPath):
        path_to_uri(42)  # type: ignore[arg-type]


def test_canonical_uri_gives_one_spelling() -> None:
    spellings = ["file:///srv/work", "FILE:///srv/work/", "file://localhost/srv/work", "file:///s%72v/work"]
    assert {canonical_uri(s) for s in spellings} == {"file:///srv/work"}
    assert canonical_uri("file:///c:/x/") == "file:///C:/x"


# --- properties -----------------------------------------------------------------------------------------

_NAME_CHARS = st.characters(codec="utf-8", exclude_characters="/\\\x00")
posix_names = st.text(_NAME_CHARS, min_size=1, max_size=20).filter(
    lambda n: n not in (".", "..") and not any(c < " " or "\x7f" <= c <= "\x9f" for c in n)
)
windows_names = posix_names.filter(
    lambda n: (
        not any(c in '<>:"|?*' for c in n)
        and n[-1] not in ". "
        and n.split(".", 1)[0].rstrip(" ").upper()
        not in {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
        | {f"{d}{i}" for d in ("COM", "LPT") for i in "123456789¹²³"}
    )
)


@settings(max_examples=400)
@given(st.lists(posix_names, max_size=8))
@example(["C:", "x"])
@example(["%2e%2e", "%00"])
@example(["a?b#c", "d e"])
def test_round_trip_posix(names: list[str]) -> None:
    path = PurePosixPath("/", *names)
    uri = path_to_uri(path)
    assert uri.isascii()
    back = uri_to_path(uri)
    assert back == path
    assert type(back) is PurePosixPath


@settings(max_examples=400)
@given(st.sampled_from(string.ascii_letters), st.lists(windows_names, max_size=8))
def test_round_trip_windows(drive: str, names: list[str]) -> None:
    path = PureWindowsPath(f"{drive}:\\", *names)
    uri = path_to_uri(path)
    back = uri_to_path(uri)
    assert back == path
    assert type(back) is PureWindowsPath


_URI_ALPHABET = st.sampled_from(
    list("/:%?#@.;=&+$,!~*'()[]\\| \x00\n\x7f\x85é\ud800") + list("fileFILElocalhost%2F%5c%00%2e0aZC") + ["%"]
)


@settings(max_examples=1500)
@given(st.one_of(st.text(), st.text(_URI_ALPHABET), st.text(_URI_ALPHABET).map(lambda s: "file://" + s)))
def test_uri_to_path_raises_only_invalid_root_uri(text: str) -> None:
    try:
        path = uri_to_path(text)
    except InvalidRootURI:
        return
    # Whatever is accepted is absolute, dot-free and round-trips.
    assert path.is_absolute()
    assert ".." not in path.parts and "." not in path.parts
    assert uri_to_path(path_to_uri(path)) == path


@settings(max_examples=800)
@given(st.one_of(st.text(), st.text(_URI_ALPHABET)))
def test_path_to_uri_raises_only_invalid_path(text: str) -> None:
    for candidate in (text, PurePosixPath(text) if "\x00" not in text else text, PureWindowsPath(text)):
        try:
            uri = path_to_uri(candidate)
        except InvalidPath as exc:
            assert isinstance(exc, RootsError)
            assert isinstance(exc, ValueError)
            continue
        assert uri_to_path(uri) == (candidate if isinstance(candidate, PurePath) else PurePath(candidate))


@pytest.mark.parametrize(
    ("parent", "name"),
    [
        ("/", "C:"),
        ("/", "etc"),
        ("/srv/work", "a b.txt"),
        ("/srv/work", "é%#?.md"),
        ("/srv/wörk", "[x]@:;=+,$&'()*!~"),
        ("/srv/work", "c:"),
    ],
)
def test_child_uri_is_path_to_uri_of_the_joined_path(parent: str, name: str) -> None:
    """A directory listing makes each entry's URI from its parent's: the same text as the whole path's."""
    joined = parent.rstrip("/") + "/" + name
    assert child_uri(path_to_uri(parent), name) == path_to_uri(joined)


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\x00b", "a\nb", "x" * 256])
def test_child_uri_refuses_what_path_to_uri_refuses(name: str) -> None:
    with pytest.raises(InvalidPath):
        child_uri("file:///srv", name)
