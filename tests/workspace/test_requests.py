"""A tool's arguments are parsed once, at the edge, into a frozen request that travels down whole: following the
``grep`` tool's ``args``, the call enters the argument parser (``workspace/tools/calls.py``) once."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from rootbound import Boundary, RootedFS
from rootbound.workspace.tools import Limits, call_tool
from rootbound.workspace.tools import calls as parser
from rootbound.workspace.tools.calls import grep_request

PARSERS = {"str_arg", "bool_arg", "int_arg", "globs_arg", "path_arg", "grep_request"}


def test_a_grep_enters_the_argument_parser_once(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("a needle too\n")
    args = {"pattern": "needle", "regex": True, "context": 1, "exclude": ["*.md"], "include": ["*.txt"]}
    entered: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if event == "call" and code.co_filename == parser.__file__ and code.co_name in PARSERS:
            caller = frame.f_back
            if caller is not None and caller.f_code.co_filename != parser.__file__:
                entered.append(code.co_name)

    with Boundary([tmp_path]) as boundary:
        fs = RootedFS(boundary, read_only=True)
        sys.setprofile(profile)
        try:
            out = call_tool("grep", fs, args, Limits())
        finally:
            sys.setprofile(None)
    assert out.structured is not None and len(out.structured["matches"]) >= 2
    assert entered == ["grep_request"]


def test_the_grep_request_is_frozen_and_carries_its_limits_and_deadline() -> None:
    class Budget:
        deadline = 12.5

        def check(self, steps: int = 1) -> None:
            pass

    limits = Limits(max_matches=7, max_results=9)
    request = grep_request({"pattern": "x", "max_per_file": 50}, limits, Budget())  # type: ignore[arg-type]
    query = request.query
    assert (query.limits.max_matches, query.limits.max_per_file, query.max_files) == (7, 7, 9)
    assert query.deadline == 12.5 and request.limits is limits
    with pytest.raises(dataclasses.FrozenInstanceError):
        query.max_files = 1  # type: ignore[misc]
