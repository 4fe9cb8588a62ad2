"""``python -m rootbound.demo`` (``make demo``)."""

import sys

from rootbound.mcp._sdk_major import needs_mcp_2

refusal = needs_mcp_2("the rootbound demo")
if refusal is not None:  # the demo drives rootbound serve, built on the 2.x SDK: one line, exit 64, no traceback
    print(f"rootbound: {refusal}", file=sys.stderr)
    sys.exit(64)

from rootbound.demo.script import main  # noqa: E402 - after the check: it imports the 2.x SDK

sys.exit(main())
