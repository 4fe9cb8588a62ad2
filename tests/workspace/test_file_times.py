"""File times past the calendar ``datetime`` knows (issue 24 #5): ``stat`` of a file whose mtime is ``2**62``
answered "i/o error" (``datetime.fromtimestamp`` raises EOVERFLOW); now ISO 8601's expanded years."""

from __future__ import annotations

from rootbound.workspace.tools.calls import iso, iso_expanded


def test_times_past_the_year_9999_or_before_the_year_1_use_expanded_years() -> None:
    assert iso(2**62) == "+146138514283-06-19T07:45:04+00:00"
    assert iso(-(2**62)) == "-146138510344-07-14T16:14:56+00:00"
    assert iso(253_402_300_800) == "+10000-01-01T00:00:00+00:00"  # one second past datetime's last
    assert iso(253_402_300_799) == "9999-12-31T23:59:59+00:00"


def test_the_expanded_form_agrees_with_datetime_wherever_datetime_works() -> None:
    """Every day boundary and leap rule from the year 1 to 9999 (a prime step walks every residue)."""
    first, last = -62_135_596_800, 253_402_300_799
    for seconds in [first, last, 0, 951_782_400, 951_868_800, 4_107_542_400, *range(first, last, 86_400 * 7919 + 3)]:
        assert iso_expanded(seconds) == "+" + iso(seconds), seconds
