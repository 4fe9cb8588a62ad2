"""``make demo``: a scripted session against ``rootbound serve`` (arrives with the serve issue)."""

from __future__ import annotations

import sys


def main() -> int:
    print("rootbound demo: the scripted `rootbound serve` session lands with the serve issue.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
