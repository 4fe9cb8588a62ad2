"""Globs in linear time (issue 16 #1): the NFA matcher agrees with the ``re`` translation, and the pathological
patterns finish (on ``re`` they take minutes)."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rootbound.search.glob_match import _translate_component, compile_glob, name_matcher
from rootbound.search.glob_nfa import LinearGlob, Token, component_tokens

COMPONENT = st.text(alphabet="ab*?[]!-^", min_size=1, max_size=8)
TEXT = st.text(alphabet="ab-]![/^", max_size=10)


@settings(max_examples=400, deadline=None)
@given(COMPONENT, TEXT)
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_component_agrees_with_re(pattern: str, text: str) -> None:
    try:
        compiled = re.compile(_translate_component(pattern), re.DOTALL)
    except re.error:
        assume(False)  # the glob module refuses these (InvalidPattern) before matching anything
        return
    expected = compiled.fullmatch(text) is not None
    assert (LinearGlob(component_tokens(pattern)).fullmatch(text) is not None) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "*", "**", "a*b", "?", "[ab]"]), min_size=1, max_size=5), TEXT)
def test_paths_agree_with_re(parts: list[str], text: str) -> None:
    pieces: list[str] = []
    tokens: list[Token] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            pieces.append(".*" if last else "(?:[^/]+/)*")
            tokens.append(Token("all" if last else "segs"))
        else:
            pieces.append(_translate_component(part) + ("" if last else "/"))
            tokens.extend(component_tokens(part) + ([] if last else [Token("lit", "/")]))
    expected = re.fullmatch("".join(pieces), text, re.DOTALL) is not None
    assert (LinearGlob(tokens).fullmatch(text) is not None) == expected


@pytest.mark.timeout(60)
def test_pathological_globs_finish() -> None:
    name = "n" * 41 + "a"
    assert name_matcher("*?" * 12 + "Z")(name) is None
    assert name_matcher("*?" * 12 + "a")(name)
    deep = "/".join(f"d{i}" for i in range(40)) + "/leaf.txt"
    spec = compile_glob("**/" * 17 + "Z")
    assert spec.regex.fullmatch(deep) is None
    assert compile_glob("**/" * 17 + "leaf.txt").regex.fullmatch(deep)
    assert compile_glob("*?*?*?*?*?*?/**/*x*y*Z").regex.fullmatch(deep) is None
