"""``python -m rootbound``: the command line."""

from __future__ import annotations

import sys

from rootbound.cli import main

sys.exit(main())
