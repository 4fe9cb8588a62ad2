"""``rootbound docs``: the documentation, readable where the package is installed.

Here, beside ``rootbound serve``, because its pages are what ``serve --help`` and the tool errors point to.

Why: ``serve --help``, tool errors and the README point to ``docs/*.md`` and ``examples/``; installed from a wheel
there is no repository to look in. The wheel carries them as package data (``rootbound/_docs``, copied by
``setup.py`` at build time); a checkout (an editable install) reads the repository's own files.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["docs_dir", "main"]

USAGE = """\
usage: rootbound docs [TOPIC] [--path]

Print a page of the documentation: TOPIC is a page name (writing, deploy, security, ...), README, or
examples/NAME.py. Without TOPIC, list the pages. --path prints where they are instead.
"""


def docs_dir() -> Path | None:
    """The directory holding the pages: the package's own copy, else a checkout's ``docs/``."""
    here = Path(__file__).resolve()  # rootbound/workspace/docs_pages.py
    shipped = here.parents[1] / "_docs"
    if (shipped / "README.md").is_file():
        return shipped
    checkout = here.parents[3]  # src/rootbound/workspace/ in a checkout
    if (checkout / "docs").is_dir() and (checkout / "README.md").is_file():
        return checkout / "docs"
    return None


def _topics(where: Path) -> dict[str, Path]:
    """Page names to files: ``docs/*.md`` by stem, ``README``, and ``examples/*.py``."""
    pages = {path.stem: path for path in sorted(where.glob("*.md"))}
    readme = where / "README.md" if (where / "README.md").is_file() else where.parent / "README.md"
    pages["README"] = readme
    examples = where / "examples" if (where / "examples").is_dir() else where.parent / "examples"
    pages.update({f"examples/{path.name}": path for path in sorted(examples.glob("*.py"))})
    return {name: path for name, path in pages.items() if path.is_file()}


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    if any(arg in ("-h", "--help") for arg in args):
        print(USAGE, end="")
        return 0
    where = docs_dir()
    if where is None:
        print("rootbound docs: this installation has no documentation files (reinstall from a wheel)", file=sys.stderr)
        return 1
    show_path = "--path" in args
    names = [arg for arg in args if arg != "--path"]
    if len(names) > 1:
        print(USAGE, end="", file=sys.stderr)
        return 2
    topics = _topics(where)
    if not names:
        if show_path:
            print(where)
            return 0
        print("Pages (rootbound docs TOPIC):")
        for name in topics:
            print(f"  {name}")
        return 0
    name = names[0].removesuffix(".md").removeprefix("docs/")
    path = topics.get(name)
    if path is None:
        print(f"rootbound docs: no such page; the pages are: {', '.join(topics)}", file=sys.stderr)
        return 2
    if show_path:
        print(path)
        return 0
    sys.stdout.write(path.read_text(encoding="utf-8"))
    return 0
