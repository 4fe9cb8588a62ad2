"""Answers sized for the host: every tool's answer within ``Limits.max_output`` characters, as text and as JSON.

Why: the most-used host, Claude Code, refuses an MCP answer over ``MAX_MCP_OUTPUT_TOKENS`` (25,000 tokens by
default) and shows the model ``JSON.stringify(structuredContent)`` instead of the text when a tool has an output
schema (anthropics/claude-code#79944), so both forms must fit. The default, :data:`DEFAULT_ANSWER_CHARS`
(65,536 characters), is under 25,000 tokens at 2.7 characters a token; source code and English run 3-4, so a default
answer passes with room, and a model reads a shorter answer better than a long one (it asks again with a cursor,
an offset or a narrower path, which every cut names). Tools whose answers can pass 10,000 characters (Claude
Code's warning, and below its own default size for a result kept in the conversation) declare
``_meta["anthropic/maxResultSizeChars"]`` (:data:`RESULT_SIZE_META`) as this cap: the host then keeps the whole
answer in the conversation instead of moving it to a file. The operator sets the cap with ``--max-answer-chars``
(up to :data:`MAX_ANSWER_CHARS`, the most Claude Code honours); see docs/tools.md "Answer size".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from rootbound.workspace.tools.calls import DEFAULT_ANSWER_CHARS, ToolError, ToolOutput

__all__ = [
    "DEFAULT_ANSWER_CHARS",
    "LARGE_ANSWERS",
    "MAX_ANSWER_CHARS",
    "MIN_ANSWER_CHARS",
    "RESULT_SIZE_META",
    "answer_chars",
    "cut_marker",
    "fit_count",
    "json_chars",
    "within_cap",
]

MAX_ANSWER_CHARS: Final = 500_000
"""The most Claude Code honours in ``_meta["anthropic/maxResultSizeChars"]`` (since 2.1.91)."""
MIN_ANSWER_CHARS: Final = 8 * 1024
"""Room for the longest fixed part of an answer (a 4096-byte path escaped, a cursor) and some content."""
RESULT_SIZE_META: Final = "anthropic/maxResultSizeChars"
LARGE_ANSWERS: Final = frozenset(
    {
        "read_file",
        "read_multiple_files",
        "list_directory",
        "directory_tree",
        "search_files",
        "grep",
        "find_projects",
        "edit_file",
        "apply_patch",
    }
)
"""The tools whose answers can pass 10,000 characters, and so declare :data:`RESULT_SIZE_META`; the others answer
a few lines (``tests/workspace/test_answer_cap.py`` checks both sides)."""


def json_chars(value: Any) -> int:
    """Characters of ``value`` as compact JSON, as a host's ``JSON.stringify`` makes it."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def answer_chars(output: ToolOutput) -> int:
    """The larger of an answer's two forms a host may show: its text, and its structured content as JSON."""
    text = len(output.text)
    return max(text, json_chars(output.structured)) if output.structured is not None else text


def fit_count(text_sizes: Sequence[int], json_sizes: Sequence[int], text_room: int, json_room: int) -> int:
    """The most leading items whose text (``text_sizes``) and JSON (``json_sizes``) both fit their room."""
    if sum(text_sizes) <= text_room and sum(json_sizes) <= json_room:
        return len(text_sizes)
    for count, (text, data) in enumerate(zip(text_sizes, json_sizes, strict=True)):
        text_room -= text
        json_room -= data
        if text_room < 0 or json_room < 0:
            return count
    return len(text_sizes)


def cut_marker(shown: str, cap: int, narrow: str) -> str:
    """The line that ends an answer cut to fit: what is shown, the bound, and how to ask for the rest."""
    return f"[truncated: {shown}; the rest not shown, answers stop at {cap} characters; narrow with {narrow}]"


def within_cap(output: ToolOutput, cap: int) -> ToolOutput:
    """``output`` if both its forms fit ``cap`` characters: the net under every tool's own cut (which says more).

    Text past the cap is cut at a line with a marker; a diff in the structured result is cut the same way; any
    other structured result past the cap is refused with a typed error saying how to ask for less."""
    text, structured = output.text, output.structured
    if len(text) > cap:
        marker = f"\n[cut at {cap} characters, the answer's limit: ask for less (a narrower path, a smaller window)]"
        keep = text[: cap - len(marker)]
        text = (keep[: keep.rfind("\n")] if "\n" in keep else keep) + marker
    if structured is not None and json_chars(structured) > cap:
        diff = structured.get("diff")
        if not isinstance(diff, str):
            raise ToolError(
                f"the answer is over {cap} characters, this server's limit (--max-answer-chars); ask for less at "
                "once (a narrower path or fewer items)"
            )
        rest = json_chars({**structured, "diff": ""})
        lines = diff.split("\n")
        sizes = [json_chars(line) for line in lines]  # a line's JSON less its quotes, plus its "\n" (2)
        kept = fit_count(sizes, sizes, cap - rest - 200, cap - rest - 200)
        structured = {**structured, "diff": "\n".join(lines[:kept]) + "\n[diff cut: the answer's limit]"}
        structured["diff_truncated"] = True
    if text is output.text and structured is output.structured:
        return output
    return ToolOutput(text, structured, output.media)
