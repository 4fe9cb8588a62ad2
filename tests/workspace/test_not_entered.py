"""A directory the walk cannot enter is said, not silently left out (nothing silent, issue 27): here a mount point
below the root (another file system: never crossed), in ``search_files``, ``directory_tree`` and ``grep``, with
each resolver. Run in a private mount namespace (``unshare``), as the bind-mount tests are."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.helpers.processes import private_mount_namespace

_SCRIPT = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from rootbound import Boundary, RootedFS
    from rootbound.workspace.tools import Limits, call_tool

    w = os.path.join(sys.argv[1], "w")
    os.makedirs(os.path.join(w, "mnt"))
    os.makedirs(os.path.join(w, "plain"))
    with open(os.path.join(w, "plain", "f.txt"), "w") as f:
        f.write("needle\\n")
    subprocess.run(["mount", "-t", "tmpfs", "none", os.path.join(w, "mnt")], check=True)
    with open(os.path.join(w, "mnt", "g.txt"), "w") as f:
        f.write("needle\\n")
    out = {}
    for resolver in ("openat2", "walk"):
        with Boundary([w], resolver=resolver) as boundary:
            fs = RootedFS(boundary)
            for tool, args in (
                ("search_files", {"pattern": "*.txt"}),
                ("directory_tree", {"path": w}),
                ("grep", {"pattern": "needle"}),
            ):
                out[f"{resolver}/{tool}"] = call_tool(tool, fs, args, Limits()).text
    print(json.dumps(out))
    """
)


def test_a_directory_not_entered_is_said_in_the_text(tmp_path: Path) -> None:
    args = private_mount_namespace()
    done = subprocess.run(
        [*args, sys.executable, "-c", _SCRIPT, str(tmp_path.resolve())], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    said = "[not entered: 1 directory (unreadable, on another file system, or changed while walked)]"
    for key, text in json.loads(done.stdout).items():
        assert said in text.splitlines(), (key, text)
        assert "g.txt" not in text, (key, text)  # the mount is not crossed
        if not key.endswith("directory_tree"):
            assert "f.txt" in text, (key, text)  # the rest is still searched
