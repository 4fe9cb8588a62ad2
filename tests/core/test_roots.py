"""rootbound.core.roots: the Root/RootSet model, strict answer parsing per era, limits, no echo."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootbound import InvalidRootsAnswer, Root, RootLimits, RootsChange, RootSet

SECRET = "s3cr3t-marker"


def test_parse_handshake_answer_with_meta_and_unknown_fields() -> None:
    answer = {
        "roots": [
            {
                "uri": "file:///home/dev/frontend",
                "name": "Frontend",
                "_meta": {"k": [1, 2]},
                "x-extra": {"a": 1},
            },
            {"uri": "file:///home/dev/backend"},
        ],
        "_meta": {"trace": "t"},
    }
    roots = RootSet.parse(answer, "handshake")
    assert len(roots) == 2
    assert roots.uris == ("file:///home/dev/frontend", "file:///home/dev/backend")
    assert roots[0].name == "Frontend"
    assert roots[0].path == PurePosixPath("/home/dev/frontend")
    assert roots.meta == {"trace": "t"}
    # Unknown fields are preserved and re-emitted; the wire form is plain JSON again.
    assert roots.to_wire() == {
        "roots": [
            {
                "uri": "file:///home/dev/frontend",
                "name": "Frontend",
                "_meta": {"k": [1, 2]},
                "x-extra": {"a": 1},
            },
            {"uri": "file:///home/dev/backend"},
        ]
    }


def test_parse_2026_bare_answer() -> None:
    roots = RootSet.parse({"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}, "2026-07-28")
    assert roots.uris == ("file:///test/root",)


def test_empty_roots_is_valid_and_falsy() -> None:
    roots = RootSet.parse({"roots": []})
    assert len(roots) == 0
    assert not roots


def test_dedup_by_canonical_uri_keeps_first_and_order() -> None:
    roots = RootSet.parse(
        {
            "roots": [
                {"uri": "file:///b"},
                {"uri": "file:///a/", "name": "first"},
                {"uri": "FILE://localhost/a", "name": "second"},
                {"uri": "file:///a/sub"},
            ]
        }
    )
    assert roots.uris == ("file:///b", "file:///a", "file:///a/sub")
    assert roots[1].name == "first"
    assert roots[1].uri == "file:///a/"  # kept verbatim


def test_rootset_is_immutable_and_hashable_roots() -> None:
    roots = RootSet.of(["file:///a", PurePosixPath("/b"), "/c d"])
    assert roots.uris == ("file:///a", "file:///b", "file:///c%20d")
    with pytest.raises(AttributeError):
        roots.version = 3  # type: ignore[misc]
    assert Root("file:///a/") == Root("FILE:///a")
    assert hash(Root("file:///a/")) == hash(Root("file:///a"))
    assert roots[0].meta is None
    meta = RootSet.parse({"roots": [{"uri": "file:///a", "_meta": {"k": [1]}}]})[0].meta
    assert meta is not None
    with pytest.raises(TypeError):
        meta["k"] = 2  # type: ignore[index]


def test_contains_and_version() -> None:
    roots = RootSet.of(["file:///a"], version=7)
    assert roots.has_uri("file:///a/")
    assert Root("file:///a") in roots
    assert not roots.has_uri("not a uri")
    assert not roots.has_uri("file:///b")
    assert roots.version == 7
    assert roots.with_version(8).version == 8
    assert roots.with_version(8).uris == roots.uris


def test_coerce_refuses_other_schemes() -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the subclass varies by input shape
        Root.coerce("https://example.com/x")
    with pytest.raises(ValueError):  # noqa: PT011
        Root.coerce(42)  # type: ignore[arg-type]


def test_era_is_checked() -> None:
    with pytest.raises(ValueError, match="era"):
        RootSet.parse({"roots": []}, "future")  # type: ignore[arg-type]


BAD_ANSWERS: list[tuple[Any, str]] = [
    (None, "answer is not an object"),
    ([], "answer is not an object"),
    (f"{SECRET}", "answer is not an object"),
    ({}, "roots is not an array"),
    ({"roots": None}, "roots is not an array"),
    ({"roots": {"uri": "file:///a"}}, "roots is not an array"),
    ({"roots": f"file:///{SECRET}"}, "roots is not an array"),
    ({"roots": [f"file:///{SECRET}"]}, "root is not an object"),
    ({"roots": [{}]}, "root uri is not a string"),
    ({"roots": [{"uri": 5}]}, "root uri is not a string"),
    ({"roots": [{"uri": f"https://{SECRET}/x"}]}, "root uri is not a valid local file URI"),
    ({"roots": [{"uri": f"file://{SECRET}.example/x"}]}, "root uri is not a valid local file URI"),
    ({"roots": [{"uri": f"file:///{SECRET}/a%2Fb"}]}, "root uri is not a valid local file URI"),
    ({"roots": [{"uri": f"file:///{SECRET}/a%00b"}]}, "root uri is not a valid local file URI"),
    ({"roots": [{"uri": f"file:///{SECRET}\x00"}]}, "root uri is not a valid local file URI"),
    ({"roots": [{"uri": f"file:///{SECRET}/../etc"}]}, "root uri is not a valid local file URI"),
    ({"roots": [{"uri": f"file:///{SECRET}?q"}]}, "root uri is not a valid local file URI"),
    ({"roots": [{"uri": "file:///a", "name": 3}]}, "root name is not a string"),
    ({"roots": [{"uri": "file:///a", "name": SECRET * 200}]}, "root name too long"),
    ({"roots": [{"uri": "file:///a", "_meta": [SECRET]}]}, "root _meta is not an object"),
    ({"roots": [{"uri": "file:///" + "a/" * 5000}]}, "root uri too long"),
    ({"roots": [], "_meta": SECRET}, "_meta is not an object"),
    ({"roots": [{"uri": "file:///a", "x": {1: SECRET}}]}, "object key is not a string"),
    ({"roots": [{"uri": "file:///a", "x": {SECRET}}]}, "value is not JSON"),
    ({"roots": [{"uri": "file:///a", "x": float("nan")}]}, "number out of range"),
    ({"roots": [{"uri": "file:///a", "x": 10**30}]}, "number out of range"),
]


@pytest.mark.parametrize(("answer", "reason"), BAD_ANSWERS)
@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
def test_bad_answers_raise_one_generic_error_without_echo(answer: Any, reason: str, era: Any) -> None:
    with pytest.raises(InvalidRootsAnswer) as info:
        RootSet.parse(answer, era)
    error = info.value
    assert error.reason == reason
    assert error.code == -32602
    assert SECRET not in str(error)
    assert SECRET not in repr(error.to_error())
    assert error.__cause__ is None  # no chained exception carrying the input either


def test_2026_answer_of_the_wrong_kind() -> None:
    with pytest.raises(InvalidRootsAnswer):
        RootSet.parse({"resultType": "complete", "roots": []}, "2026-07-28")
    with pytest.raises(InvalidRootsAnswer):
        RootSet.parse({"action": "accept", "content": {}}, "2026-07-28")


def test_deeply_nested_meta_is_refused_not_a_recursion_error() -> None:
    nested: Any = {}
    for _ in range(10_000):
        nested = {"a": nested}
    with pytest.raises(InvalidRootsAnswer) as info:
        RootSet.parse({"roots": [{"uri": "file:///a", "_meta": nested}]})
    assert info.value.reason == "answer nested too deeply"


def test_limits_on_count_and_total_bytes() -> None:
    many = {"roots": [{"uri": f"file:///r{i}"} for i in range(1025)]}
    with pytest.raises(InvalidRootsAnswer) as info:
        RootSet.parse(many)
    assert info.value.reason == "too many roots"
    assert len(RootSet.parse({"roots": many["roots"][:1024]})) == 1024
    assert len(RootSet.parse(many, limits=RootLimits(max_roots=2000))) == 1025

    big = {"roots": [{"uri": "file:///a", "name": "n" * 1000} for _ in range(1000)]}
    with pytest.raises(InvalidRootsAnswer) as info:
        RootSet.parse(big, limits=RootLimits(max_total_bytes=100_000))
    assert info.value.reason == "answer too large"
    huge_meta = {"roots": [{"uri": "file:///a", "_meta": {"blob": "x" * 2_000_000}}]}
    with pytest.raises(InvalidRootsAnswer):
        RootSet.parse(huge_meta)


@settings(max_examples=300)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
        max_leaves=20,
    )
)
def test_parse_raises_only_invalid_roots_answer(value: Any) -> None:
    for answer in (value, {"roots": value}, {"roots": [value]}, {"roots": [{"uri": value}]}):
        for era in ("handshake", "2026-07-28"):
            try:
                parsed = RootSet.parse(answer, era)
            except InvalidRootsAnswer:
                continue
            assert all(root.canonical.startswith("file:///") for root in parsed)


def test_parse_still_accepts_the_0_1_era_names() -> None:
    """rootbound 0.1 called the eras "legacy" and "modern"; callers of RootSet.parse keep working."""
    answer = {"resultType": "complete", "roots": []}
    assert RootSet.parse(answer, "legacy") == RootSet.parse(answer, "handshake")  # type: ignore[arg-type]
    with pytest.raises(InvalidRootsAnswer):
        RootSet.parse(answer, "modern")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="era must be"):
        RootSet.parse(answer, "2025-11-25")  # type: ignore[arg-type]


def test_roots_change_between_sets() -> None:
    old = RootSet.of(["/a", "/b"])
    assert RootsChange.between(None, old) is None
    assert RootsChange.between(old, RootSet.of(["/b", "/a"])) is None  # order alone is not a change
    change = RootsChange.between(old, RootSet.of(["/b", "/c"]))
    assert change is not None
    assert change.old is old
    assert [root.canonical for root in change.added] == ["file:///c"]
    assert [root.canonical for root in change.removed] == ["file:///a"]
    renamed = RootsChange.between(old, RootSet((Root("file:///a", "A"), Root("file:///b"))))
    assert renamed is not None
    assert [(r.canonical, r.name) for r in renamed.added] == [("file:///a", "A")]
    assert [(r.canonical, r.name) for r in renamed.removed] == [("file:///a", None)]
