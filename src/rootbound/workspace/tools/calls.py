"""What every workspace tool call shares: its limits, its budget (deadline and cancellation), what it answers, the
checks on its arguments, and the safe text of a failure.

Why a module of its own: the tool modules (:mod:`~rootbound.workspace.tools`, :mod:`~rootbound.workspace.tools.reading`)
and the server (:mod:`~rootbound.workspace.server`) all speak these terms; none of them owns the others.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final

from rootbound.core.errors import InvalidPath, RootsError
from rootbound.search.grep_query import GrepLimits, GrepQuery
from rootbound.search.ignore_rules import PathFilter, filter_key
from rootbound.search.safe_regex import BytesPattern, compile_bytes, line_local

__all__ = [
    "DEFAULT_ANSWER_CHARS",
    "Budget",
    "Cancelled",
    "GrepRequest",
    "Limits",
    "Media",
    "SliceOver",
    "ToolError",
    "ToolOutput",
    "bool_arg",
    "budget_of",
    "describe",
    "globs_arg",
    "grep_request",
    "int_arg",
    "iso",
    "path_arg",
    "str_arg",
]


DEFAULT_ANSWER_CHARS: Final = 64 * 1024
"""How many characters one answer may hold, as text and as JSON (``--max-answer-chars``; why this default:
:mod:`rootbound.workspace.tools.answer_fit`)."""


class ToolError(Exception):
    """A tool failure whose message is safe to show (fixed text, never the caller's input)."""


@dataclass(frozen=True)
class Limits:
    """Bounds on what one tool call reads or returns."""

    max_read: int = 1024 * 1024
    """The most a read returns when asked for more (``--max-read``)."""
    default_read: int = 64 * 1024
    """What a read returns when not told how much: about 16k tokens, room left in a model's context."""
    max_results: int = 500
    max_matches: int = 200
    max_per_file: int = 20
    max_output: int = DEFAULT_ANSWER_CHARS
    """Characters one answer may hold, its text and its structured content as JSON each (``--max-answer-chars``)."""
    max_media: int = 4 * 1024 * 1024
    max_files: int = 20
    tree_depth: int = 3
    max_tree_depth: int = 10
    deadline: float = 30.0
    """Seconds a call may run; a walk past it stops with a tool error (``--tool-timeout``)."""
    max_answer: int | None = None
    """Bytes one answer may take on the wire (over HTTP: what one SSE event to the SDK's client holds)."""


class Cancelled(ToolError):
    """The client cancelled the request (``notifications/cancelled``); nobody reads the answer."""


class SliceOver(Exception):
    """A call tried on the event loop (:meth:`Budget.slice`) ran past its slice: run it again on a thread.

    Not a :class:`ToolError`, ``RootsError`` or ``OSError``, so no tool takes it for a failure of one entry."""


class Budget:
    """The time a call may still take and whether its client cancelled it, checked per walked entry.

    ``steps`` counts the entries seen, for progress notifications sent by the server while the call runs.
    """

    __slots__ = ("_cancelled", "_full", "deadline", "on_check", "seconds", "steps")

    def __init__(self, seconds: float) -> None:
        self.on_check: Callable[[], None] | None = None  # at each check that passes: the call's turn handed on
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self._cancelled = threading.Event()
        self._full: float | None = None
        self.steps = 0

    def slice(self, seconds: float) -> None:
        """Until :meth:`unslice`, a check past ``seconds`` from now raises :class:`SliceOver` (a read-only call is
        tried on the event loop, where it may not stay long; the deadline still applies)."""
        self._full = self.deadline
        self.deadline = min(self.deadline, time.monotonic() + seconds)

    def unslice(self) -> None:
        """Back to the whole deadline, with no steps counted: the call starts again from the beginning."""
        if self._full is not None:
            self.deadline, self._full = self._full, None
        self.steps = 0

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check(self, steps: int = 1) -> None:
        """Count ``steps`` more units of work; raise if the client cancelled or the deadline passed."""
        self.steps += steps
        if self._cancelled.is_set():
            raise Cancelled("cancelled")
        if time.monotonic() > self.deadline:
            if self._full is not None and time.monotonic() <= self._full:
                raise SliceOver()
            raise ToolError(f"stopped after {self.seconds:g} s (the per-call deadline); narrow the path or pattern")
        if self.on_check is not None:
            self.on_check()


@dataclass(frozen=True)
class Media:
    """An image or audio block: ``kind`` is ``image`` or ``audio``, ``data`` base64."""

    kind: str
    mime: str
    data: str


@dataclass(frozen=True)
class ToolOutput:
    """What a tool answers: text for the model, the same as JSON when the tool has an output schema, media."""

    text: str
    structured: dict[str, Any] | None = None
    media: tuple[Media, ...] = ()


def str_arg(args: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    value = args.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise ToolError(f"argument '{name}' must be a non-empty string")
    return value


def path_arg(args: Mapping[str, Any], name: str = "path") -> str:
    value = str_arg(args, name)
    assert value is not None
    return value


def int_arg(args: Mapping[str, Any], name: str, *, minimum: int, maximum: int | None = None) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (maximum and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise ToolError(f"argument '{name}' must be an integer {bound}")
    return value


def bool_arg(args: Mapping[str, Any], name: str, default: bool = False) -> bool:
    value = args.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ToolError(f"argument '{name}' must be a boolean")
    return value


def globs_arg(args: Mapping[str, Any], name: str) -> list[str]:
    value = args.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ToolError(f"argument '{name}' must be a list of strings")
    return value


def budget_of(context: Mapping[str, Any]) -> Budget:
    budget = context.get("budget")
    return budget if isinstance(budget, Budget) else Budget(Limits.deadline)


def iso(timestamp: float) -> str:
    """A file time as ISO 8601 UTC; past the year 9999 (an mtime of ``2**62``, issue 24 #5) or before the year 1,
    in ISO 8601's expanded form (``+146140482-04-24T...``), which ``datetime`` cannot make."""
    try:
        return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return iso_expanded(int(timestamp))


def iso_expanded(seconds: int) -> str:
    """ISO 8601 with a signed year of any size, proleptic Gregorian (Howard Hinnant's ``civil_from_days``)."""
    days, rest = divmod(seconds, 86400)
    shifted = days + 719_468  # from 0000-03-01
    era, day_of_era = divmod(shifted, 146_097)
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153  # March is 0
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + 3 if month_index < 10 else month_index - 9
    year = year_of_era + era * 400 + (month <= 2)
    hour, rest = divmod(rest, 3600)
    minute, second = divmod(rest, 60)
    sign = "-" if year < 0 else "+"
    return f"{sign}{abs(year):04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}+00:00"


def describe(error: RootsError) -> str:
    """The user-facing text for a denial: its fixed message and reason class, never the input."""
    if isinstance(error, InvalidPath):
        return f"denied: invalid path ({error.reason})"
    return f"{error.message} ({error.reason})" if error.reason else error.message


@dataclass(frozen=True)
class GrepRequest:
    """The ``grep`` tool's arguments, parsed once at the edge (:func:`grep_request`), with the call's limits and
    budget: the search layer's :class:`~rootbound.search.grep_query.GrepQuery` for every start comes from it."""

    query: GrepQuery
    """The whole search: compiled pattern, filter, caps (``max_matches`` the call's, ``max_files`` the call's
    ``max_results``), the budget's check and deadline."""
    path: str | None
    """The start named by the caller, or ``None``: every root's tree."""
    limits: Limits


def grep_request(args: Mapping[str, Any], limits: Limits, budget: Budget) -> GrepRequest:
    """Every argument of a ``grep`` call, read once, in the order the schema lists them (the first bad one is
    the error)."""
    pattern = str_arg(args, "pattern")
    assert pattern is not None
    regex = bool_arg(args, "regex")
    ignore_case = bool_arg(args, "ignore_case")
    compiled: BytesPattern = compile_bytes(pattern, regex=regex, ignore_case=ignore_case)
    required = None if regex or ignore_case else pattern.encode("utf-8", "surrogatepass")
    files_only = bool_arg(args, "files_only")
    around = int_arg(args, "context", minimum=0, maximum=10) or 0
    per_file = int_arg(args, "max_per_file", minimum=1, maximum=200) or limits.max_per_file
    exclude, include = globs_arg(args, "exclude"), globs_arg(args, "include")
    gitignore = not bool_arg(args, "include_ignored")
    query = GrepQuery(
        compiled,
        PathFilter(exclude=exclude, include=include, gitignore=gitignore),
        source=(pattern, regex, ignore_case),
        where_key=filter_key(exclude, include, gitignore),
        limits=GrepLimits(
            max_matches=limits.max_matches, max_per_file=min(per_file, limits.max_matches), context=around
        ),
        files_only=files_only,
        max_files=limits.max_results,
        check=budget.check,
        required=required,
        deadline=budget.deadline,
        line_local=line_local(pattern, regex=regex),
    )
    return GrepRequest(query, str_arg(args, "path", required=False), limits)
