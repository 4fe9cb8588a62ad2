"""rootbound.text.edit: tiered matching (exact, line endings, trailing whitespace, indentation), ambiguity, diffs.

Every case states the exact text expected afterwards; properties check the invariants on generated texts.
"""

from __future__ import annotations

import difflib
import re

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from rootbound import RootsError
from rootbound.text.edit import (
    Edit,
    EditAmbiguous,
    EditError,
    EditNotFound,
    EditResult,
    InvalidEdit,
    apply_edits,
    content_hash,
    unified_diff,
)

E = Edit

# (id, text, edits, expected text, expected tolerances per edit, expected first lines per edit)
TOLERANT: list[tuple[str, str, list[Edit], str, list[tuple[str, ...]], list[tuple[int, ...]]]] = [
    (
        "crlf-file-lf-block",
        "def f():\r\n    a = 1\r\n    b = 2\r\n    return a\r\n",
        [E("    a = 1\n    b = 2\n", "    a = 10\n    b = 20\n    c = 30\n")],
        "def f():\r\n    a = 10\r\n    b = 20\r\n    c = 30\r\n    return a\r\n",
        [("line-endings",)],
        [(2,)],
    ),
    (
        "crlf-file-lf-partial-lines",
        "x = call(a,\r\n         b)\r\n",
        [E("call(a,\n         b)", "call(a, b,\n     c)")],
        "x = call(a, b,\r\n     c)\r\n",
        [("line-endings",)],
        [(1,)],
    ),
    (
        "crlf-file-exact-single-line-new-lines-get-crlf",
        "one\r\ntwo\r\n",
        [E("one", "one\nand a half")],
        "one\r\nand a half\r\ntwo\r\n",
        [()],
        [(1,)],
    ),
    (
        "lf-file-crlf-edit",
        "alpha\nbeta\ngamma\n",
        [E("alpha\r\nbeta\r\n", "ALPHA\r\nBETA\r\n")],
        "ALPHA\nBETA\ngamma\n",
        [("line-endings",)],
        [(1,)],
    ),
    (
        "trailing-spaces-in-file",
        "if x:  \n    y()   \nz()\n",
        [E("if x:\n    y()\n", "if x:\n    w()\n")],
        "if x:\n    w()\nz()\n",
        [("trailing-whitespace",)],
        [(1,)],
    ),
    (
        "trailing-spaces-in-edit",
        "a = 1\nb = 2\n",
        [E("a = 1 \t\nb = 2  ", "a = 3\nb = 4")],
        "a = 3\nb = 4\n",
        [("trailing-whitespace",)],
        [(1,)],
    ),
    (
        "trailing-tabs-and-crlf-together",
        "k: v\t\r\nl: w\r\n",
        [E("k: v\nl: w\n", "k: V\nl: W\n")],
        "k: V\r\nl: W\r\n",
        [("line-endings", "trailing-whitespace")],
        [(1,)],
    ),
    (
        "re-indented-block-dedented-in-edit",
        "class A:\n    def f(self):\n        if x:\n            return 1\n        return 2\n",
        [E("if x:\n    return 1\n", "if x and y:\n    return 1\nelif z:\n    return 3\n")],
        "class A:\n    def f(self):\n        if x and y:\n            return 1\n        elif z:\n            return 3\n"
        "        return 2\n",
        [("indentation",)],
        [(3,)],
    ),
    (
        "re-indented-block-over-indented-in-edit",
        "def f():\n  if x:\n    g()\n",
        [E("        if x:\n          g()\n", "        if x:\n          h()\n        i()\n")],
        "def f():\n  if x:\n    h()\n  i()\n",
        [("indentation",)],
        [(2,)],
    ),
    (
        "tabs-file-unindented-edit",
        "func main() {\n\tif ok {\n\t\trun()\n\t}\n}\n",
        [E("if ok {\n\trun()\n}", "if ok {\n\trun()\n\tstop()\n}")],
        "func main() {\n\tif ok {\n\t\trun()\n\t\tstop()\n\t}\n}\n",
        [("indentation",)],
        [(2,)],
    ),
    (
        "outdented-new-line-is-shifted-too",
        "class A:\n    x = 1\n    y = 2\n",
        [E("  x = 1\n  y = 2\n", "  x = 1\ny_module = 2\n")],
        "class A:\n    x = 1\n  y_module = 2\n",
        [("indentation",)],
        [(2,)],
    ),
    (
        "indentation-crlf-and-trailing-all-at-once",
        "fn a() {\r\n    b();  \r\n    c();\r\n}\r\n",
        [E("b();\nc();\n", "b();\nd();\n")],
        "fn a() {\r\n    b();\r\n    d();\r\n}\r\n",
        [("line-endings", "trailing-whitespace", "indentation")],
        [(2,)],
    ),
    (
        "blank-lines-with-whitespace-inside-block",
        "a()\n    \nb()\n",
        [E("a()\n\nb()\n", "a()\nb()\n")],
        "a()\nb()\n",
        [("trailing-whitespace",)],
        [(1,)],
    ),
    (
        "no-newline-at-eof-kept",
        "first\nlast  ",
        [E("last\n", "LAST\n")],
        "first\nLAST",
        [("line-endings", "trailing-whitespace")],
        [(2,)],
    ),
    (
        "old-without-final-newline-keeps-line-ending",
        "a  \nb\n",
        [E("a", "A")],
        "A  \nb\n",
        [()],
        [(1,)],
    ),
    (
        "tolerant-old-without-final-newline-keeps-ending",
        "  a  \nb\n",
        [E("a \t", "A")],
        "  A\nb\n",
        [("trailing-whitespace", "indentation")],
        [(1,)],
    ),
    (
        "tolerant-delete-lines",
        "keep\ndrop me  \nand me\nkeep too\n",
        [E("drop me\nand me\n", "")],
        "keep\nkeep too\n",
        [("trailing-whitespace",)],
        [(2,)],
    ),
    (
        "mixed-endings-exact-keeps-new-as-given",
        "a\r\nb\nc\n",
        [E("b", "b1\nb2")],
        "a\r\nb1\nb2\nc\n",
        [()],
        [(2,)],
    ),
    (
        "mixed-endings-tolerant-takes-the-matched-lines-ending",
        "a\r\nb \r\nc\n",
        [E("a\nb\n", "x\ny\nz\n")],
        "x\r\ny\r\nz\r\nc\n",
        [("line-endings", "trailing-whitespace")],
        [(1,)],
    ),
    (
        "least-tolerant-tier-wins",
        "  a \n  b\n    a\n    b\n",
        [E("  a\n  b\n", "  c\n")],
        "  c\n    a\n    b\n",
        [("trailing-whitespace",)],
        [(1,)],
    ),
    (
        "exact-beats-tolerant-elsewhere",
        "x = 1\n  y = 2  \ny = 2\n",
        [E("y = 2\n", "y = 3\n")],
        "x = 1\n  y = 2  \ny = 3\n",
        [()],
        [(3,)],
    ),
    (
        "replace-all-exact",
        "a.b\na.b\nc\n",
        [E("a.b", "a.c", replace_all=True)],
        "a.c\na.c\nc\n",
        [()],
        [(1, 2)],
    ),
    (
        "replace-all-uses-the-strictest-tier-that-matches",
        "if a:\n    x()  \nif b:\n  x()\n",
        [E("x()\n", "y()\n", replace_all=True)],
        "if a:\n    x()  \nif b:\n  y()\n",
        [()],
        [(4,)],
    ),
    (
        "replace-all-tolerant-windows-not-exact",
        "  f(1) \n  f(1)\t\nz\n",
        [E("f(1)  \n", "f(2)\n", replace_all=True)],
        "  f(2)\n  f(2)\nz\n",
        [("trailing-whitespace", "indentation")],
        [(1, 2)],
    ),
    (
        "edits-apply-in-order",
        "a = 1\nb = a\n",
        [E("a = 1", "a = 2"), E("a = 2\nb = a", "a = 2\nb = a + 1")],
        "a = 2\nb = a + 1\n",
        [(), ()],
        [(1,), (1,)],
    ),
    (
        "unicode-text",
        "naïve = 'café'\n    δ = 1  \n",
        [E("δ = 1\n", "δ = 2\n")],
        "naïve = 'café'\n    δ = 2\n",
        [("trailing-whitespace", "indentation")],
        [(2,)],
    ),
]


@pytest.mark.parametrize(
    ("text", "edits", "expected", "tolerances", "lines"),
    [pytest.param(*case[1:], id=case[0]) for case in TOLERANT],
)
def test_tolerant_match_table(
    text: str, edits: list[Edit], expected: str, tolerances: list[tuple[str, ...]], lines: list[tuple[int, ...]]
) -> None:
    result = apply_edits(text, edits)
    assert result.after == expected
    assert [a.tolerances for a in result.applied] == tolerances
    assert [a.lines for a in result.applied] == lines
    assert [a.index for a in result.applied] == list(range(len(edits)))
    assert result.before == text


def test_exact_match_reports_no_tolerance() -> None:
    result = apply_edits("a\nb\n", [E("b", "c")])
    assert result.applied[0].exact
    assert result.tolerances == ()
    assert result.changed


def test_tolerances_are_summed_in_tier_order() -> None:
    result = apply_edits("  a \r\nb\r\n", [E("a\n", "A\n"), E("b\n", "B\n")])
    assert result.after == "  A\r\nB\r\n"
    assert result.tolerances == ("line-endings", "trailing-whitespace", "indentation")


def test_identical_edit_is_a_no_op() -> None:
    result = apply_edits("same\n", [E("same", "same")])
    assert not result.changed
    assert result.diff() == ""


# -- ambiguity and failures -------------------------------------------------------------------------------------

AMBIGUOUS: list[tuple[str, str, list[Edit], int, int, tuple[int, ...], bool]] = [
    ("exact-twice", "x = 1\ny = 2\nx = 1\n", [E("x = 1", "x = 3")], 0, 2, (1, 3), False),
    ("overlapping", "aaa\n", [E("aa", "b")], 0, 2, (1,), False),
    ("same-line-twice", "f(a, a)\n", [E("a", "b")], 0, 2, (1,), False),
    ("tolerant-twice", "if a:\n  go()  \nif b:\n  go()\t\n", [E("go()\n", "stop()\n")], 0, 2, (2, 4), True),
    (
        "indentation-twice",
        "class A:\n    def f():\n        pass\nclass B:\n  def f():\n      pass\n",
        [E("def f():\n    pass\n", "def g():\n    pass\n")],
        0,
        2,
        (2, 5),
        True,
    ),
    (
        "second-edit-ambiguous-after-first",
        "a\nb\n",
        [E("b", "a"), E("a", "c")],
        1,
        2,
        (1, 2),
        False,
    ),
    ("overlapping-windows", "x\nx\nx\n", [E("x  \nx\n", "y\n")], 0, 2, (1, 2), True),
]


@pytest.mark.parametrize(
    ("text", "edits", "index", "count", "lines", "tolerant"),
    [pytest.param(*case[1:], id=case[0]) for case in AMBIGUOUS],
)
def test_ambiguous_edits_fail_with_lines(
    text: str, edits: list[Edit], index: int, count: int, lines: tuple[int, ...], tolerant: bool
) -> None:
    with pytest.raises(EditAmbiguous) as caught:
        apply_edits(text, edits)
    error = caught.value
    assert error.index == index
    assert error.count == count
    assert error.lines == lines
    assert error.reason == "ambiguous"
    assert f"edits[{index}]: old text matched {count} times" in str(error)
    assert ("tolerantly" in str(error)) is tolerant
    assert "at lines " + ", ".join(map(str, lines)) in str(error)
    assert error.data == {"reason": "ambiguous", "edit": index, "lines": list(lines)}


def test_ambiguous_edit_can_ask_for_all() -> None:
    result = apply_edits("x = 1\ny = 2\nx = 1\n", [E("x = 1", "x = 3", replace_all=True)])
    assert result.after == "x = 3\ny = 2\nx = 3\n"
    assert result.applied[0].lines == (1, 3)


def test_many_matches_are_counted_up_to_a_limit() -> None:
    with pytest.raises(EditAmbiguous) as caught:
        apply_edits("a\n" * 5000, [E("a", "b")])
    assert "matched more than 1000 times" in str(caught.value)
    assert caught.value.lines == tuple(range(1, 11))
    assert "at lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ...; include" in str(caught.value)  # not five thousand
    result = apply_edits("a\n" * 5000, [E("a", "b", replace_all=True)])
    assert result.after == "b\n" * 5000


def test_tolerant_replace_all_is_not_capped() -> None:
    text = "  a \n" * 3000
    result = apply_edits(text, [E("a\n", "b\n", replace_all=True)])
    assert result.after == "  b\n" * 3000
    assert len(result.applied[0].lines) == 3000


NOT_FOUND: list[tuple[str, str, list[Edit], int, tuple[int, ...]]] = [
    ("absent", "alpha\nbeta\n", [E("gamma", "delta")], 0, ()),
    (
        "first-line-seen-elsewhere",
        "def f():\n    return 1\ndef f():\n    return 2\n",
        [E("def f():\n    return 3", "")],
        0,
        (1, 3),
    ),
    ("first-line-contained", "x = compute(1)\n", [E("compute(1) \n", "")], 0, (1,)),
    ("inconsistent-indentation", "if a:\n    b\n  c\n", [E("if a:\nb\nc\n", "")], 0, (1,)),
    ("second-edit", "a\nb\n", [E("a", "c"), E("a", "d")], 1, ()),
    ("whitespace-only-old", "a\nb\n", [E("  \n", "x")], 0, ()),
    ("inconsistent-shift-is-not-a-match", "\tx\n\ty\n", [E("    x\n     y\n", "z\n")], 0, (1,)),
    ("partial-line-needs-exact", "value = 1  # note\n", [E("value  = 1", "value = 2")], 0, ()),
]


@pytest.mark.parametrize(("text", "edits", "index", "lines"), [pytest.param(*c[1:], id=c[0]) for c in NOT_FOUND])
def test_not_found_names_the_edit_and_lookalike_lines(
    text: str, edits: list[Edit], index: int, lines: tuple[int, ...]
) -> None:
    with pytest.raises(EditNotFound) as caught:
        apply_edits(text, edits)
    assert caught.value.index == index
    assert caught.value.lines == lines
    assert caught.value.reason == "no match"
    assert str(caught.value).startswith(f"edits[{index}]: old text not found")
    if lines:
        listed = ", ".join(map(str, lines))
        assert (f"line {listed} looks" if len(lines) == 1 else f"lines {listed} look") in str(caught.value)


@pytest.mark.parametrize(
    "edits",
    [
        [],
        [E("", "x")],
        [E("a", "b"), E("", "c")],
        [E(1, "b")],  # type: ignore[arg-type]
        [E("a", None)],  # type: ignore[arg-type]
        ["a"],
        E("a", "b"),
    ],
)
def test_invalid_edits_are_typed_errors(edits: object) -> None:
    with pytest.raises(InvalidEdit) as caught:
        apply_edits("a\n", edits)  # type: ignore[arg-type]
    assert isinstance(caught.value, EditError)
    assert isinstance(caught.value, RootsError)
    assert caught.value.code == -32602


SECRET = "hunter2-SECRET"


@pytest.mark.parametrize(
    ("text", "edits"),
    [
        (f"{SECRET}\n{SECRET}\n", [E(SECRET, "x")]),
        (f"{SECRET}\n", [E(f"{SECRET}-no", "x")]),
        (f"  {SECRET} \n  {SECRET}\n", [E(f"{SECRET}  \n", "x")]),
        (f"{SECRET}\n", [E("", SECRET)]),
    ],
)
def test_errors_never_echo_file_or_edit_text(text: str, edits: list[Edit]) -> None:
    with pytest.raises(EditError) as caught:
        apply_edits(text, edits)
    rendered = str(caught.value) + repr(caught.value.to_error())
    assert "hunter2" not in rendered
    assert "SECRET" not in rendered


# -- diff -------------------------------------------------------------------------------------------------------


def test_diff_matches_difflib_on_ordinary_text() -> None:
    before = "".join(f"line {n}\n" for n in range(1, 30))
    after = before.replace("line 5\n", "line five\n").replace("line 20\n", "")
    expected = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), "a/mod.py", "b/mod.py"))
    assert unified_diff(before, after, "mod.py") == expected
    assert expected.count("@@ ") == 2


def test_diff_marks_missing_final_newline_and_keeps_crlf() -> None:
    assert unified_diff("a\nb", "a\nc", "f") == (
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    )
    assert unified_diff("a\r\n", "b\r\n", "f") == "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\r\n+b\r\n"
    assert unified_diff("", "new\n", "f") == "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+new\n"
    assert unified_diff("same", "same") == ""
    # An absolute path as diff -u writes it, not glued to git's a/ and b/ (issue 27).
    assert unified_diff("a\n", "b\n", "/srv/x.py").startswith("--- /srv/x.py\n+++ /srv/x.py\n@@")


def test_result_diff_uses_the_label() -> None:
    result = apply_edits("a\n", [E("a", "b")])
    assert result.diff("src/x.py").startswith("--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-a\n+b\n")


def test_content_hash_is_sha256_hex() -> None:
    assert content_hash(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n")


def patch(before: str, diff: str) -> str:
    """Apply a unified diff (as unified_diff writes it) to ``before``: an independent check of the hunks."""
    if not diff:
        return before
    old = before.split("\n")
    old = [line + "\n" for line in old[:-1]] + ([old[-1]] if old[-1] else [])
    lines = diff.split("\n")[2:]
    out: list[str] = []
    pos = 0
    i = 0
    while i < len(lines) and lines[i]:
        header = _HUNK.match(lines[i] + "\n")
        assert header is not None, lines[i]
        start = int(header.group(1)) - (0 if header.group(2) == "0" else 1)
        out.extend(old[pos:start])
        pos = start
        i += 1
        while i < len(lines) and lines[i] and not lines[i].startswith("@@"):
            sign, body = lines[i][0], lines[i][1:]
            full = body + "\n"
            if i + 1 < len(lines) and lines[i + 1] == "\\ No newline at end of file":
                full = body
                i += 1
            if sign in " -":
                assert old[pos] == full
                pos += 1
            if sign in " +":
                out.append(full)
            i += 1
    out.extend(old[pos:])
    return "".join(out)


_TEXT = st.text(alphabet="ab \t\n\r", max_size=60)


@given(_TEXT, _TEXT)
@example("a\nb", "a\nb\n")
@example("x\r\n", "x\n")
def test_diff_applies_back(before: str, after: str) -> None:
    assert patch(before, unified_diff(before, after)) == after


# -- properties -------------------------------------------------------------------------------------------------

_LINE = st.text(alphabet="abcxyz()=", min_size=1, max_size=6)
_LINES = st.lists(_LINE, min_size=1, max_size=12)


def _count_overlapping(text: str, needle: str) -> int:
    return sum(1 for i in range(len(text)) if text.startswith(needle, i))


@given(st.text(alphabet="abc\n", max_size=40), st.data())
def test_unique_exact_edit_is_plain_replace(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, max(0, len(text) - 1)))
    stop = data.draw(st.integers(start + 1, max(start + 1, len(text))))
    old = text[start:stop]
    assume(old and _count_overlapping(text, old) == 1)
    new = data.draw(st.text(alphabet="xyz\n", max_size=10))
    result = apply_edits(text, [E(old, new)])
    assert result.after == text.replace(old, new, 1)
    assert result.applied[0].exact
    assert result.applied[0].lines == (text.count("\n", 0, text.index(old)) + 1,)


@given(st.text(alphabet="abc\n", max_size=40), st.data())
def test_exact_edit_round_trips(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, max(0, len(text) - 1)))
    old = text[start : data.draw(st.integers(start + 1, max(start + 1, len(text))))]
    new = data.draw(st.text(alphabet="xyz", min_size=1, max_size=5))
    assume(old and _count_overlapping(text, old) == 1)
    forward = apply_edits(text, [E(old, new)])
    assume(_count_overlapping(forward.after, new) == 1)
    assert apply_edits(forward.after, [E(new, old)]).after == text


@settings(max_examples=200)
@given(_LINES, st.data())
def test_crlf_file_edited_with_lf_text_equals_lf_edit_converted(lines: list[str], data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(lines) - 1))
    stop = data.draw(st.integers(start + 1, min(len(lines), start + 4)))
    text = "\n".join(lines) + "\n"
    old = "\n".join(lines[start:stop]) + "\n"
    new = "\n".join(data.draw(st.lists(_LINE, max_size=3))) + "\n"
    try:
        plain = apply_edits(text, [E(old, new)])
    except EditAmbiguous:
        with pytest.raises(EditAmbiguous):
            apply_edits(text.replace("\n", "\r\n"), [E(old, new)])
        return
    crlf = apply_edits(text.replace("\n", "\r\n"), [E(old, new)])
    assert crlf.after == plain.after.replace("\n", "\r\n")
    assert crlf.applied[0].lines == plain.applied[0].lines


@settings(max_examples=200)
@given(_LINES, st.data(), st.sampled_from(["  ", "    ", "\t", "\t  "]))
def test_indented_file_edited_with_dedented_block(lines: list[str], data: st.DataObject, indent: str) -> None:
    assume(len(lines) >= 2)
    start = data.draw(st.integers(0, len(lines) - 2))
    stop = data.draw(st.integers(start + 2, min(len(lines), start + 4)))
    old = "\n".join(lines[start:stop]) + "\n"
    new = "\n".join(data.draw(st.lists(_LINE, min_size=1, max_size=3))) + "\n"
    text = "\n".join(lines) + "\n"
    try:
        plain = apply_edits(text, [E(old, new)])
    except EditAmbiguous:
        return
    shifted = "".join(indent + line + "\n" for line in lines)
    result = apply_edits(shifted, [E(old, new)])
    assert result.after == "".join(indent + line + "\n" for line in plain.after.split("\n")[:-1])
    assert result.applied[0].tolerances == ("indentation",)


@given(st.text(alphabet="ab \n\r\t", max_size=50), st.text(alphabet="ab \n\r\t", min_size=1, max_size=8))
def test_any_input_gives_a_result_or_a_typed_error(text: str, old: str) -> None:
    try:
        result = apply_edits(text, [E(old, "Z")])
    except EditError as error:
        assert error.reason in ("ambiguous", "no match")
        return
    assert isinstance(result, EditResult)
    assert "Z" in result.after
    assert patch(text, result.diff()) == result.after
