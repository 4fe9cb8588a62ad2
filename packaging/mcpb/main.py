"""The MCP Bundle's entry point: ``rootbound serve`` from the packages bundled beside it (``server/lib``).

The host runs ``python3 -I server/main.py DIR...`` (``-I``: no user site-packages, no ``PYTHONPATH``, so only what
the bundle carries is imported) with the folders the user picked as arguments, and the "Allow changes" setting as
``ROOTBOUND_BUNDLE_WRITABLE``: a manifest can substitute a setting's value but cannot add a flag only when it is
set, so this file turns exactly ``true`` into ``--writable``. Anything else, a missing variable included, serves
read-only: the setting fails closed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

WRITABLE_ENV = "ROOTBOUND_BUNDLE_WRITABLE"


def serve_argv(dirs: list[str], writable_setting: str | None) -> list[str]:
    """``rootbound`` arguments for the folders and the setting's value as the host substituted it."""
    return ["serve", *(["--writable"] if writable_setting == "true" else []), "--", *dirs]


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
    from rootbound.cli import main as rootbound_main

    return rootbound_main(serve_argv(sys.argv[1:], os.environ.get(WRITABLE_ENV)))


if __name__ == "__main__":
    sys.exit(main())
