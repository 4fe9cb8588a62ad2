"""Bad ``[...]`` sets in a glob: a clear, typed error that says how to fix the glob (issue 24 item 5: ``[z-a]``
used to escape as "internal error"; issue 27: an unclosed ``[`` in ``search_files`` answered "(no matches)").

Here the checker itself and the ``RootedFS.glob``/``search``/``grep`` dialect; the tools (gitignore syntax, and
ignore files in the tree) in ``tests/workspace/test_glob_errors_tools.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootbound import Boundary, InvalidPattern, RootedFS
from rootbound.search.glob_match import BACKWARDS_RANGE, UNCLOSED_SET, bracket_error
from tests.helpers.trees import bracket_workspace


@pytest.fixture
def fs(tmp_path: Path) -> RootedFS:
    return RootedFS(Boundary([bracket_workspace(tmp_path)]))


@pytest.mark.parametrize(
    ("glob", "escapes", "problem"),
    [
        ("[", True, UNCLOSED_SET),
        ("[abc", True, UNCLOSED_SET),
        ("[]", True, UNCLOSED_SET),  # a ']' right after '[' is a member, so nothing closes the set
        ("[!]", True, UNCLOSED_SET),
        ("[\\]", True, UNCLOSED_SET),  # the escaped ']' is a member
        ("[z-a]", True, BACKWARDS_RANGE),
        ("x*[!z-a].py", True, BACKWARDS_RANGE),
        ("[a-cz-a]", False, BACKWARDS_RANGE),
        ("[a-z]", True, None),
        ("[]]", True, None),
        ("[[]", True, None),
        ("\\[", True, None),  # an escaped '[' opens no set
        ("[a-]", True, None),
        ("[--z]", True, None),
        ("a]", True, None),
        ("*.py", True, None),
    ],
)
def test_bracket_error_names_the_problem(glob: str, escapes: bool, problem: str | None) -> None:
    assert bracket_error(glob, escapes=escapes) == problem


def test_the_messages_say_how_to_fix_the_glob() -> None:
    assert "close the set" in UNCLOSED_SET and "[[]" in UNCLOSED_SET
    assert "low to high" in BACKWARDS_RANGE and "[a-z]" in BACKWARDS_RANGE


@pytest.mark.parametrize("glob", ["[z-a]", "*[z-a]", "a/[z-a]/*", "**/[z-a]", "src/*[z-a]*.py"])
def test_rooted_fs_globs_raise_invalid_pattern(fs: RootedFS, glob: str) -> None:
    root = fs.boundary.resolve(".")
    with pytest.raises(InvalidPattern):
        list(fs.glob(glob, root))
    with pytest.raises(InvalidPattern):
        fs.search(glob, root)
    with pytest.raises(InvalidPattern):
        fs.grep("needle", root, include="x[z-a]")
