"""One grep report as a comparable value: what two ways of answering the same grep must agree on."""

from __future__ import annotations

from rootbound.search.agent_grep import GrepReport

__all__ = ["summary"]


def summary(report: GrepReport) -> tuple[object, ...]:
    """Every file's lines (number, text, matched or context, gap), the counts, the truncation and the caps."""
    return (
        report.files,
        report.matches,
        report.searched,
        report.skipped,
        report.truncated,
        report.capped_files,
        report.too_large,
        report.binary,
        report.links,
        report.unreadable,
        report.dirs_not_entered,
    )
