"""``python -m rootbound.demo`` (``make demo``)."""

import sys

from rootbound.demo.script import main

sys.exit(main())
