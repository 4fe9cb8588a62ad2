"""The MCP Bundle's entry point: ``rootbound serve`` from the packages bundled beside it (``server/lib``).

The host runs ``python3 -I server/main.py DIR...`` (``-I``: no user site-packages, no ``PYTHONPATH``, so only what
the bundle carries is imported) with the folders the user picked as arguments, and the "Allow changes" setting as
``ROOTBOUND_BUNDLE_WRITABLE``: a manifest can substitute a setting's value but cannot add a flag only when it is
set, so this file turns exactly ``true`` into ``--writable``. Anything else, a missing variable included, serves
read-only: the setting fails closed.

The packages are in ``lib/common`` (the same for every Python) and ``lib/cpXY.cpZW...`` (those that differ, in one
folder for each group of versions that shares them): the host's ``python3`` is whatever its desktop ships, so this
file puts the folders of its version on the path, and says in one line which versions the bundle carries when it
has none for this one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

WRITABLE_ENV = "ROOTBOUND_BUNDLE_WRITABLE"


def serve_argv(dirs: list[str], writable_setting: str | None) -> list[str]:
    """``rootbound`` arguments for the folders and the setting's value as the host substituted it."""
    return ["serve", *(["--writable"] if writable_setting == "true" else []), "--", *dirs]


def carried(lib: Path) -> list[str]:
    """The minor versions the bundle has packages for (``cp310`` ... in its folders' names)."""
    tags = {tag for folder in lib.iterdir() for tag in folder.name.split(".") if tag.startswith("cp3")}
    return sorted((f"3.{tag[3:]}" for tag in tags), key=lambda version: int(version[2:]))


def lib_paths(lib: Path, version: tuple[int, int]) -> list[str] | None:
    """The folders to import from for a Python of ``version``, or ``None`` when the bundle has none for it."""
    own = f"cp{version[0]}{version[1]}"
    folders = [folder for folder in sorted(lib.iterdir()) if own in folder.name.split(".")]
    return [*(str(folder) for folder in folders), str(lib / "common")] if folders else None


def main() -> int:
    lib = Path(__file__).resolve().parent / "lib"
    paths = lib_paths(lib, sys.version_info[:2])
    if paths is None:
        here = f"{sys.version_info[0]}.{sys.version_info[1]}"
        print(
            f"rootbound: this bundle carries its packages for Python {', '.join(carried(lib))}; the host's python3 is "
            f"{here}: install one of those (as python3 on the PATH the host uses)",
            file=sys.stderr,
        )
        return 1
    sys.path[:0] = paths
    from rootbound.cli import main as rootbound_main

    return rootbound_main(serve_argv(sys.argv[1:], os.environ.get(WRITABLE_ENV)))


if __name__ == "__main__":
    sys.exit(main())
