"""``Boundary``, ``RootedFS`` and the core need no SDK at all (issue 28): with every ``mcp`` module made
unimportable, ``import rootbound`` works and a confined read and a denial happen as usual. Run on both majors (and
so with whichever SDK is installed, or none). The AST check of the same rule is tests/test_layout.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PROGRAM = textwrap.dedent(
    """
    import sys

    class NoSDK:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("mcp", "mcp_types"):
                raise ImportError(f"no SDK here: {name}")
            return None

    sys.meta_path.insert(0, NoSDK())
    import rootbound
    from rootbound import Boundary, OutsideRoots, RootedFS

    workspace, outside = sys.argv[1], sys.argv[2]
    with Boundary([workspace]) as boundary:
        fs = RootedFS(boundary)
        print(fs.read_text("a.txt"))
        try:
            fs.read_text(outside)
        except OutsideRoots as error:
            print("denied:", error.code)
    assert not [name for name in sys.modules if name.split(".")[0] in ("mcp", "mcp_types")]
    """
)


def test_the_library_core_and_confinement_run_with_no_sdk_importable(tmp_path: Path) -> None:
    workspace = tmp_path.resolve() / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("inside")
    outside = tmp_path.resolve() / "secret.txt"
    outside.write_text("outside")
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(workspace), str(outside)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.strip().splitlines()
    assert first == "inside"
    assert second.startswith("denied: ")
