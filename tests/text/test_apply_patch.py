"""The ``apply_patch`` grammar and hunk placement, pure: one test per rule of the Codex format (written from its
documented grammar and scenario list), the leniencies, the bounds, and errors that name lines, never text."""

from __future__ import annotations

import pytest

from rootbound.text.patch_apply import AnchorNotFound, HunkNotFound, patch_text
from rootbound.text.patch_grammar import (
    MAX_FILES,
    MAX_HUNKS,
    MAX_PATCH_CHARS,
    FileOp,
    HunkLine,
    PatchSyntaxError,
    parse_patch,
)


def wrap(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def update(text: str, *body: str) -> str:
    """``text`` after a one-file Update patch of ``body``."""
    (op,) = parse_patch(wrap("*** Update File: f.txt", *body)).ops
    return patch_text(text, op).after


# -- operations -------------------------------------------------------------------------------------------------


def test_add_file_lines_each_take_a_plus() -> None:
    (op,) = parse_patch(wrap("*** Add File: docs/new.md", "+# Title", "+", "+body")).ops
    assert (op.kind, op.path, op.content, op.line) == ("add", "docs/new.md", "# Title\n\nbody\n", 2)


def test_an_add_file_with_no_lines_is_an_empty_file() -> None:
    (op,) = parse_patch(wrap("*** Add File: empty.txt")).ops
    assert op.content == ""


def test_several_operations_in_one_patch() -> None:
    ops = parse_patch(
        wrap(
            "*** Add File: nested/made.txt",
            "+made",
            "*** Delete File: gone.txt",
            "*** Update File: kept.txt",
            "@@",
            "-old",
            "+new",
        )
    ).ops
    assert [(op.kind, op.path) for op in ops] == [
        ("add", "nested/made.txt"),
        ("delete", "gone.txt"),
        ("update", "kept.txt"),
    ]
    assert ops[2].hunks[0].lines == (HunkLine("-", "old", 7), HunkLine("+", "new", 8))


def test_update_with_move_to() -> None:
    (op,) = parse_patch(wrap("*** Update File: a/one.txt", "*** Move to: b/c/two.txt", "@@", "-x", "+y")).ops
    assert (op.path, op.move_to) == ("a/one.txt", "b/c/two.txt")


def test_a_move_with_no_hunks_is_refused() -> None:
    with pytest.raises(PatchSyntaxError, match=r"patch line 2: the Update File has no hunks"):
        parse_patch(wrap("*** Update File: a.txt", "*** Move to: b.txt"))


# -- hunks ------------------------------------------------------------------------------------------------------


def test_multiple_hunks_apply_in_order() -> None:
    text = "one\ntwo\nthree\nfour\nfive\n"
    assert update(text, "@@", "-two", "+TWO", "@@", "-four", "+FOUR") == "one\nTWO\nthree\nFOUR\nfive\n"


def test_context_lines_locate_and_are_kept_as_the_file_has_them() -> None:
    text = "a = 1   \nb = 2\nc = 3\n"
    assert update(text, "@@", " a = 1", "-b = 2", "+b = 20", " c = 3") == "a = 1   \nb = 20\nc = 3\n"


def test_deletion_only_hunk() -> None:
    assert update("keep\ndrop\nkeep too\n", "@@", " keep", "-drop", " keep too") == "keep\nkeep too\n"


def test_pure_addition_goes_to_the_end_of_the_file() -> None:
    assert update("first\nsecond\n", "@@", "+third", "+fourth") == "first\nsecond\nthird\nfourth\n"


def test_pure_addition_below_an_anchor() -> None:
    text = "class A:\n    x = 1\nclass B:\n    y = 2\n"
    assert update(text, "@@ class A:", "+    z = 0") == "class A:\n    z = 0\n    x = 1\nclass B:\n    y = 2\n"


def test_first_hunk_may_omit_its_marker() -> None:
    assert update("import os\nrest\n", " import os", "+import re") == "import os\nimport re\nrest\n"


def test_anchors_narrow_step_by_step() -> None:
    text = "class A:\n    def run(self):\n        return 1\nclass B:\n    def run(self):\n        return 1\n"
    after = update(text, "@@ class B:", "@@     def run(self):", "-        return 1", "+        return 2")
    assert after == text.replace("return 1\n", "return 2\n").replace("return 2", "return 1", 1)


def test_a_later_hunk_is_searched_below_the_previous_one() -> None:
    text = "x\nmark\nx\n"
    assert update(text, "@@", " mark", "@@", "-x", "+y") == "x\nmark\ny\n"


def test_end_of_file_hunk_matches_the_last_lines() -> None:
    text = "value\nmiddle\nvalue\n"
    assert update(text, "@@", "-value", "+last", "*** End of File") == "value\nmiddle\nlast\n"


def test_end_of_file_hunk_refuses_lines_that_are_not_last() -> None:
    with pytest.raises(HunkNotFound, match="at its end"):
        update("value\nmiddle\n", "@@", "-value", "+last", "*** End of File")


def test_an_updated_file_ends_with_a_newline() -> None:
    assert update("only line", "@@", "-only line", "+first", "+second") == "first\nsecond\n"
    assert update("a\nb", "@@", " a", "+between") == "a\nbetween\nb\n"


def test_unicode_lines() -> None:
    text = "première\nnaïve café\n終わり\n"
    assert update(text, "@@", " première", "-naïve café", "+naïve café ✅") == "première\nnaïve café ✅\n終わり\n"


def test_crlf_file_keeps_crlf_and_an_lf_patch_is_exact() -> None:
    (op,) = parse_patch(wrap("*** Update File: w.txt", "@@", " alpha", "-beta", "+gamma")).ops
    result = patch_text("alpha\r\nbeta\r\n", op)
    assert result.after == "alpha\r\ngamma\r\n"
    assert result.tolerances == ()


def test_tolerances_are_reported_in_edit_file_words() -> None:
    (op,) = parse_patch(
        wrap("*** Update File: t.py", "@@", " def f():", "-    return 1", "+    return 2", "@@", "-x = 1", "+x = 2")
    ).ops
    result = patch_text("class K:\n    def f():\n        return 1\nx = 1  \n", op)
    assert result.after == "class K:\n    def f():\n        return 2\nx = 2\n"
    assert [h.tolerances for h in result.hunks] == [("indentation",), ("trailing-whitespace",)]
    assert [h.line for h in result.hunks] == [2, 4]
    assert (result.added, result.removed) == (2, 2)


def test_exact_match_wins_over_an_earlier_tolerant_one() -> None:
    assert update("x = 1 \nx = 1\n", "@@", "-x = 1", "+x = 2") == "x = 1 \nx = 2\n"


def test_a_trailing_blank_context_line_may_stand_for_the_end_of_the_file() -> None:
    assert update("a\nb\n", "@@", "-b", "+c", " ", "*** End of File") == "a\nc\n"


def test_blank_lines_between_hunks_are_separators() -> None:
    assert update("a\nb\nc\n", "@@", "-a", "+A", "", "", "@@", "-c", "+C") == "A\nb\nC\n"


def test_an_empty_line_inside_a_hunk_is_an_empty_context_line() -> None:
    assert update("a\n\nb\n", "@@", " a", "", "-b", "+B") == "a\n\nB\n"


def test_a_unified_diff_range_header_is_a_bare_marker() -> None:
    (op,) = parse_patch(wrap("*** Update File: f", "@@ -1,2 +1,2 @@", "-a", "+b")).ops
    assert op.hunks[0].anchors == ()


# -- leniencies of the envelope ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "patch",
    [
        " *** Begin Patch\n*** Update File: f\n@@\n-a\n+b\n*** End Patch \n",  # padded first and last lines
        "*** Begin Patch \n*** Update File: f\n@@\n-a\n+b\n *** End Patch\n",  # padded marker lines
        "*** Begin Patch\n  *** Update File: f  \n@@\n-a\n+b\n*** End Patch",  # padded header, no final newline
        "\n\n*** Begin Patch\r\n*** Update File: f\r\n@@\r\n-a\r\n+b\r\n*** End Patch\r\n\n",  # CRLF, blank lines
        "<<'EOF'\n*** Begin Patch\n*** Update File: f\n@@\n-a\n+b\n*** End Patch\nEOF\n",  # a heredoc wrapper
        '<<"EOF"\n*** Begin Patch\n*** Update File: f\n  @@  \n-a\n+b\n*** End Patch\nEOF',
        "<<EOF\n*** Begin Patch\n*** Update File: f\n@@\n-a\n+b\n*** End Patch\nEOF\n",
    ],
)
def test_envelope_leniencies(patch: str) -> None:
    (op,) = parse_patch(patch).ops
    assert (op.kind, op.path) == ("update", "f")
    assert patch_text("a\n", op).after == "b\n"


# -- refusals ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("", "the patch is empty"),
        ("   \n\n", "the patch is empty"),
        ("*** Begin Patch\n*** End Patch\n", "the patch has no file operations: nothing to apply"),
        ("*** Update File: f\n@@\n-a\n+b\n*** End Patch", "patch line 1: the patch must start with '*** Begin Patch'"),
        ("*** Begin Patch\n*** Update File: f\n@@\n-a\n+b\n", "patch line 5: the patch must end with '*** End Patch'"),
        ("*** Begin Patch\n*** End Patch\n*** End Patch", "patch line 2: expected '*** Add File: PATH'"),
        (wrap("*** Frobnicate File: f"), "patch line 2: expected '*** Add File: PATH', '*** Update File: PATH'"),
        (wrap("*** Update File: f"), "patch line 2: the Update File has no hunks"),
        (wrap("*** Update File: f", "@@"), "patch line 3: the hunk has no lines"),
        (wrap("*** Update File: f", "@@", "*** End of File"), "patch line 3: the hunk has no lines"),
        (wrap("*** Update File: f", "@@", "-a", "oops"), "patch line 5: a hunk line starts with ' ' (context)"),
        (wrap("*** Update File: f", "@@", "-a", "@@ x"), "patch line 5: the hunk has no lines"),
        (wrap("*** Add File: f", "+a", "b"), "patch line 4: in an Add File every line of the new file starts"),
        (wrap("*** Delete File: f", "x"), "patch line 3: a Delete File has no lines after it"),
        (wrap("*** Add File:   "), "patch line 2: a path must follow '*** Add File:'"),
        (wrap("*** Delete File: a\x00b"), "patch line 2: the path is not a valid path"),
    ],
)
def test_syntax_errors_name_the_patch_line(patch: str, message: str) -> None:
    with pytest.raises(PatchSyntaxError) as caught:
        parse_patch(patch)
    assert caught.value.message.startswith(message), caught.value.message
    assert caught.value.reason == "invalid patch"


def test_errors_never_echo_the_patch() -> None:
    secret = "s3cr3t-token"
    attempts = [
        wrap(f"*** Frobnicate File: {secret}"),
        wrap(f"*** Update File: {secret}", f"{secret} no prefix"),
        f"{secret}\n*** End Patch",
    ]
    for patch in attempts:
        with pytest.raises(PatchSyntaxError) as caught:
            parse_patch(patch)
        assert secret not in str(caught.value)
    (op,) = parse_patch(wrap(f"*** Update File: {secret}", f"@@ {secret}", f"-{secret}", "+x")).ops
    with pytest.raises(AnchorNotFound) as anchor:
        patch_text("nothing here\n", op)
    assert secret not in str(anchor.value)
    (op,) = parse_patch(wrap(f"*** Update File: {secret}", f" {secret}", f"-{secret}", "+x")).ops
    with pytest.raises(HunkNotFound) as missing:
        patch_text(f"{secret}\nother\n", op)
    assert secret not in str(missing.value)


def test_bounds_are_stated_and_enforced() -> None:
    with pytest.raises(PatchSyntaxError, match=f"longer than {MAX_PATCH_CHARS} characters"):
        parse_patch("x" * (MAX_PATCH_CHARS + 1))
    many = wrap(*[f"*** Delete File: f{n}" for n in range(MAX_FILES + 1)])
    with pytest.raises(PatchSyntaxError, match=f"more than {MAX_FILES} files"):
        parse_patch(many)
    assert len(parse_patch(wrap(*[f"*** Delete File: f{n}" for n in range(MAX_FILES)])).ops) == MAX_FILES
    hunks = [line for n in range(MAX_HUNKS + 1) for line in ("@@", f"-{n}", f"+{n}")]
    with pytest.raises(PatchSyntaxError, match=f"more than {MAX_HUNKS} hunks in one file"):
        parse_patch(wrap("*** Update File: f", *hunks))


# -- where a hunk does not apply ------------------------------------------------------------------------------------


def test_missing_context_names_hunk_patch_line_and_the_near_miss() -> None:
    (op,) = parse_patch(
        wrap("*** Update File: m.py", "@@", "-a", "+A", "@@", " def f():", "     x = 1", "-    y = 2", "+    y = 3")
    ).ops
    text = "a\n\ndef f():\n    x = 1\n    y = 99\n"
    with pytest.raises(HunkNotFound) as caught:
        patch_text(text, op)
    message = caught.value.message
    assert message == (
        "hunk 2 (patch line 6): its lines were not found below line 1 of the file; "
        "the nearest is at file line 3, which agrees up to patch line 8 and then expects patch line 9 (file line 5 "
        "differs): read_file shows the current text"
    )
    assert (caught.value.hunk, caught.value.line, caught.value.reason) == (2, 7, "no match")


def test_nothing_alike_says_so() -> None:
    (op,) = parse_patch(wrap("*** Update File: m", "@@", "-absent", "+x")).ops
    with pytest.raises(HunkNotFound, match="in the file; no line of the file looks like its line at patch line 4"):
        patch_text("a\nb\n", op)


def test_hunks_out_of_order_are_explained() -> None:
    (op,) = parse_patch(wrap("*** Update File: m", "@@", "-b", "+B", "@@", "-a", "+A")).ops
    with pytest.raises(HunkNotFound, match=r"file lines 1-1 hold them, above where the previous hunk"):
        patch_text("a\nb\n", op)


def test_a_missing_anchor_is_its_own_error() -> None:
    (op,) = parse_patch(wrap("*** Update File: m", "@@ def absent():", "-a", "+b")).ops
    with pytest.raises(AnchorNotFound, match=r"hunk 1: its '@@' line \(patch line 3\) matches no line of the file"):
        patch_text("a\n", op)


def test_file_op_label_never_shows_the_path() -> None:
    assert FileOp("update", "secret/path", 7).label == "Update File at patch line 7"
