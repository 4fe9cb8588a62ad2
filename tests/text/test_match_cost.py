"""Matching is linear in the file and each candidate bounded (issue 48 #5); the loops check the call's budget.

Outcomes only: which answer each costly case gets (found, not found, too large to match), and that an installed
check is called and stops the work. No time is asserted (``bench/edit_cost.py`` measures the CPU).
"""

from __future__ import annotations

import difflib

import pytest

from rootbound.core.call_budget import checking, checkpoint
from rootbound.text.edit import Edit, EditAmbiguous, EditNotFound, EditTooLarge, apply_edits, unified_diff
from rootbound.text.line_match import Block, Lines, TooLargeToMatch
from rootbound.text.patch_apply import patch_text
from rootbound.text.patch_grammar import parse_patch


class Stop(Exception):
    pass


def test_overlapping_tolerant_candidates_of_a_long_old_text_are_too_large_to_match() -> None:
    with pytest.raises(EditTooLarge) as caught:
        apply_edits("    x\n" * 50_000, [Edit("  x\n" * 5_000, "Q")])
    assert "narrow the old text" in str(caught.value) and caught.value.index == 0


def test_a_short_repeated_block_is_still_counted_as_ambiguous() -> None:
    with pytest.raises(EditAmbiguous, match="more than 1000 times"):
        apply_edits("a \nb\n" * 5_000, [Edit("a\nb\n", "Q")])


def test_hits_that_are_not_line_starts_are_never_candidates() -> None:
    # The old text occurs in the text, but only from the second character of a line on.
    with pytest.raises(EditNotFound):
        apply_edits("xa \n" * 20_000, [Edit("a\n" + "xa\n" * 2_000 + "zz", "Q")])


def test_a_tolerant_match_found_among_many_lines_is_replaced() -> None:
    text = "".join(f"line {n}\n" for n in range(20_000)) + "  target  \n"
    result = apply_edits(text, [Edit("target\n", "done\n")])
    assert result.after.endswith("done\n") and result.applied[0].tolerances


def test_exact_overlapping_counts_stop_early_and_say_more_than() -> None:
    with pytest.raises(EditAmbiguous, match="more than"):
        apply_edits("a" * 400_000, [Edit("a" * 100_000, "Q")])


def test_lines_find_raises_too_large_past_the_work_bound() -> None:
    with pytest.raises(TooLargeToMatch):
        Lines("a\n" * 100_000).find(Block("a \n" * 20_000), False, 10**6)


def test_matching_calls_the_installed_check_and_stops_when_it_raises() -> None:
    seen: list[int] = []

    def check(steps: int) -> None:
        seen.append(steps)
        if len(seen) > 3:
            raise Stop()

    with checking(check), pytest.raises(Stop):
        apply_edits("a\n" * 200_000, [Edit("a \nb\n", "Q")])
    checkpoint()  # outside: nothing installed, nothing happens
    assert len(seen) == 4


def test_a_patch_hunk_too_costly_to_match_is_too_large() -> None:
    body = "\n".join(["*** Begin Patch", "*** Update File: f.txt", "@@", *[" a " for _ in range(20_000)], "+b"])
    (op,) = parse_patch(body + "\n*** End Patch\n").ops
    with pytest.raises(TooLargeToMatch):
        patch_text("a\n" * 100_000, op)


def test_a_huge_changed_middle_is_one_hunk_that_applies() -> None:
    before = "".join(f"old {n}\n" for n in range(3_000))
    after = "".join(f"new {n}\n" for n in range(3_000))
    diff = unified_diff("head\n" + before + "tail\n", "head\n" + after + "tail\n", "f")
    assert diff.count("@@ ") == 1
    assert diff.count("\n-old ") == 3_000 and diff.count("\n+new ") == 3_000
    small = unified_diff("a\nb\nc\n", "a\nB\nc\n", "f")
    assert small.splitlines()[2:] == list(difflib.unified_diff(["a", "b", "c"], ["a", "B", "c"], lineterm=""))[2:]
