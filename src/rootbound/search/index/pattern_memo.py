"""What earlier queries of one pattern learned about the indexed files: which hold no match, and where the
matching lines of the others are.

Why it can be kept: an indexed file that is not dirty has not changed since the index read it (the kernel would
have said so), so what RE2 found in it then is what it would find now. A file changed since is dirty, and every
query opens and searches a dirty file whatever the memo says (:func:`~indexed_search.grep_plan`); a rebuild makes a
new index with no memos. Every file with a match is still opened beneath the session's start, and its lines are
taken from what it holds now (the memo gives where they are, never their text), only when its size is the one the
memo recorded. Bounded: :data:`MAX_LINES` lines a pattern, :data:`MAX_FILE_LINES` a file; beyond that, files are
searched as if never seen.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["MAX_FILE_LINES", "MAX_LINES", "PatternMemo"]

MAX_LINES: Final = 50_000
"""Matching lines one pattern's memo keeps (24 bytes each)."""
MAX_FILE_LINES: Final = 200
"""Matching lines kept for one file (the tool's largest per-file cap)."""


class PatternMemo:
    """One pattern's memo over an index's files (numbered as the index numbers them)."""

    __slots__ = ("found", "lines", "ruled_out")

    def __init__(self, files: int) -> None:
        import numpy as np

        self.ruled_out: npt.NDArray[np.bool_] = np.zeros(files, np.bool_)
        """Per file: searched unchanged, no match."""
        self.found: dict[int, tuple[int, array[int]]] = {}
        """Per file with a match: its size then, and ``(line number, start, end)`` of every matching line, flat."""
        self.lines = 0

    def rule_out(self, numbers: list[int]) -> None:
        if numbers:
            self.ruled_out[numbers] = True

    def keep(self, number: int, size: int, spans: list[tuple[int, int, int]]) -> None:
        """Every matching line of the file ``number`` (``size`` bytes when searched), if within the bounds."""
        if len(spans) > MAX_FILE_LINES or self.lines + len(spans) > MAX_LINES or number in self.found:
            return
        flat = array("q")
        for span in spans:
            flat.extend(span)
        self.found[number] = (size, flat)
        self.lines += len(spans)

    def lines_of(self, number: int, size: int) -> list[tuple[int, int, int]] | None:
        """The matching lines kept for the file ``number`` if it is still ``size`` bytes, else ``None``."""
        kept = self.found.get(number)
        if kept is None or kept[0] != size:
            return None
        flat = kept[1]
        return [(flat[i], flat[i + 1], flat[i + 2]) for i in range(0, len(flat), 3)]
