"""ripgrep (Debian package ``ripgrep``) judges the ignore-aware walk: on one tree with ``.gitignore``, ``.ignore``,
``.rgignore`` and ``.git/info/exclude`` files that disagree (negations each way, nested files, a nested
repository), ``rg --files`` and the walk under ``search_files``/``grep``/``directory_tree`` list the same files.

Where rootbound knowingly differs (documented in README and docs/security.md), the tree stays out of it: rootbound
applies ``.gitignore`` files outside any repository too (ripgrep needs ``.git``), and never reads a repository's
``info/exclude`` through a ``.git`` link or a ``gitdir:`` file.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rootbound import Boundary, RootedFS
from rootbound.search.ignore_rules import PathFilter
from rootbound.search.ignore_walk import walk
from tests.helpers.trees import git_repository

FILES = {
    ".gitignore": "*.log\n!x.tmp\nbuild/\n!keep.bak\n",
    ".ignore": "!keep.log\n*.tmp\n",
    ".rgignore": "!b.tmp\n",
    ".git/info/exclude": "*.bak\nsecret/\n/top.txt\n",
    "sub/.gitignore": "!*.tmp\n!*.bak\n",
    "sub/.ignore": "local.txt\n",
    "sub/deeper/.gitignore": "keep.log\n",
    "sub/deeper/.rgignore": "*.md\n",
    "inner/.git/info/exclude": "*.inner\n",
    "inner/.gitignore": "*.gen\n",
    "docs/.ignore": "*\n!*.md\n",
}
PLAIN = [
    "a.log", "keep.log", "x.tmp", "a.tmp", "b.tmp", "a.bak", "keep.bak", "main.py", "top.txt", "build/o.txt",
    "secret/s.txt", "sub/a.tmp", "sub/a.bak", "sub/local.txt", "sub/a.log", "sub/top.txt", "sub/deeper/keep.log",
    "sub/deeper/z.bak", "sub/deeper/r.md", "sub/secret/t.txt", "inner/x.bak", "inner/y.inner", "inner/a.log",
    "inner/c.tmp", "inner/z.gen", "docs/a.md", "docs/b.txt", "docs/deep/c.md",
]  # fmt: skip


def rg_binary() -> str:
    found = shutil.which("rg")
    if found is None:
        pytest.fail("ripgrep is not installed: run `bash scripts/setup-test-deps.sh` (`make test` does)", pytrace=False)
    return found


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repository(tmp_path.resolve() / "repo", {**FILES, **dict.fromkeys(PLAIN, "x\n")})


def by_ripgrep(start: Path) -> list[str]:
    result = subprocess.run(
        [rg_binary(), "--files", "--hidden", "--glob", "!.git", "--sort", "path"],
        cwd=start,
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(result.stdout.split())


def by_walk(root: Path, start: str) -> list[str]:
    fs = RootedFS(Boundary([root]))
    return sorted(found.rel for found in walk(fs, start, PathFilter()) if not found.is_dir)


@pytest.mark.parametrize("start", [".", "sub", "sub/deeper", "inner", "docs"])
def test_the_walk_lists_what_ripgrep_lists(repo: Path, start: str) -> None:
    expected = by_ripgrep(repo / start)
    assert expected  # and the tree exercises both answers:
    assert len(expected) < len([p for p in [*FILES, *PLAIN] if p.startswith("" if start == "." else start + "/")])
    assert by_walk(repo, start) == expected
