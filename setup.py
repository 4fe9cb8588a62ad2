"""Ships the documentation in the wheel: ``docs/*.md``, ``README.md`` and ``examples/*.py`` become package data
(``rootbound/_docs``), which ``rootbound docs`` prints. Everything else is in ``pyproject.toml``.

Why a build step rather than a URL: the project has no documentation site to point to, and pages shipped with the
code always match the installed version. Why a copy rather than moving the files: the repository keeps one
``docs/`` that its README links to and its tests check. The sdist carries the same files (``MANIFEST.in``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithDocs(build_py):  # type: ignore[misc]
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib, "rootbound", "_docs")
        pages = [*sorted((HERE / "docs").glob("*.md")), HERE / "README.md"]
        examples = sorted((HERE / "examples").glob("*.py"))
        (target / "examples").mkdir(parents=True, exist_ok=True)
        for page in pages:
            shutil.copyfile(page, target / page.name)
        for example in examples:
            shutil.copyfile(example, target / "examples" / example.name)


setup(cmdclass={"build_py": BuildWithDocs})
