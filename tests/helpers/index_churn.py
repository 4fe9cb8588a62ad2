"""The index's churn: a tree, and every kind of change the issue lists, made by a separate process.

Shared by ``tests/search/test_index.py`` (a few dozen rounds) and ``bench/search_index.py`` (a thousand):
after each change, every query answered through the index must equal a full scan.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["CHANGE_KINDS", "CHURN_QUERIES", "NEAR_MISS", "NO_LITERAL", "build_tree", "change_in_another_process"]


NEAR_MISS = "getaddrin drinfo\nGetAddrIn DrInfo\nclass Near:\n    raise Error(\nnear_4(\n"
"""Every trigram of the queries' literals, no match: a candidate each query searches, then rules out."""


CHANGER = r"""  # argv: root, outside, step, the near miss
import os, sys, shutil
root, outside, step = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = lambda *a: os.path.join(root, *a)
kind = step % 12
if kind == 0: open(p("d0", "e0", "f0.py"), "w").write("changed getaddrinfo %d\n" % step)
elif kind == 1: open(p("d2", "e2", "f2.py"), "a").write("getaddrinfo appended\n")  # was no candidate
elif kind == 2: open(p("d0", "e0", "f0.py"), "w").close()
elif kind == 3: open(p("d3", "new%d.py" % step), "w").write("getaddrinfo new\n")
elif kind == 4:
    for name in os.listdir(p("d3")):
        if name.startswith("new"): os.unlink(p("d3", name))
elif kind == 5:
    os.replace(p("d2", "e2", "f2.py"), p("d2", "e1", "moved%d.py" % step))
    open(p("d2", "e2", "f2.py"), "w").write("x\n")
elif kind == 6:
    new = os.path.join(outside, "in%d" % step)
    os.makedirs(os.path.join(new, "deep"))
    open(os.path.join(new, "deep", "g.py"), "w").write("getaddrinfo moved in\n")
    os.rename(os.path.join(outside, "in%d" % step), p("d0", "in%d" % step))
elif kind == 7:
    for name in os.listdir(p("d0")):
        if name.startswith("in"): os.rename(p("d0", name), os.path.join(outside, "out-" + name + "-%d" % step))
elif kind == 8:
    open(p("d0", "twin.py"), "w").write("getaddrinfo through the other link %d\n" % step)
    open(p(".gitignore"), "a").write("# edit %d\n" % step)
elif kind == 9: open(p("d2", "e2", "near.py"), "a").write("getaddrinfo class NearError( near_42(\n")  # ruled out
elif kind == 10: open(p("d2", "e2", "near.py"), "w").write(sys.argv[4])
elif kind == 11: open(p("d2", ".gitignore"), "w").write("near.py\n" if step % 24 == 11 else "")  # nested
"""


NO_LITERAL = (r"[a-z]+_[0-9]{2}\(", True, False)
"""No literal to narrow by: every indexed file is opened the first time, those without a match never again."""

CHANGE_KINDS = 12
"""Rewrite, append to a file that was no candidate, truncate, create, delete, rename over, a directory moved in
from outside, moved out, a write through the other hard link with an ignore file edit, a near miss made a match,
and back, and an ignore file below the top that leaves that file out, then not."""
CHURN_QUERIES = [
    ("getaddrinfo", False, False),
    (r"class [A-Za-z0-9_]+Error\(", True, False),
    ("GETADDRINFO", False, True),
    NO_LITERAL,
]


def build_tree(root: Path, fillers: int = 0) -> None:
    """The tree the index tests search: matches in every fifth file, a near miss, an ignore file and an ignored
    log, a binary, a file over the size cap, two links to one file; ``fillers`` more files with no match."""
    for i in range(60 + fillers):
        d = root / f"d{i % 4}" / f"e{i % 3}"
        d.mkdir(parents=True, exist_ok=True)
        if i >= 60:
            body = f"filler {i} getaddr info class Filler raise KeyError(\n" * (1 + i % 7)
        elif i % 5 == 0:
            body = f"def getaddrinfo_{i}(): pass\nclass Foo{i}Error(Exception):\n"
        else:
            body = "nothing\n" * i
        (d / f"f{i}.py").write_text(body)
    (root / ".gitignore").write_text("d1/\n*.log\n")
    (root / "x.log").write_text("getaddrinfo in a log\n")
    (root / "bin.dat").write_bytes(b"\0getaddrinfo")
    (root / "big.txt").write_bytes(b"getaddrinfo\n" * (5 * 1024 * 1024 // 12))
    (root / "d0" / "twin.py").write_text("getaddrinfo twin\n")
    os.link(root / "d0" / "twin.py", root / "d2" / "twin-link.py")
    (root / "d2" / "e2" / "near.py").write_text(NEAR_MISS)


def change_in_another_process(root: Path, outside: Path, step: int) -> None:
    """Change kind ``step % CHANGE_KINDS`` in ``root`` (``outside``: where directories move in from and out to),
    from a new process: the index learns of it only from the kernel."""
    subprocess.run([sys.executable, "-c", CHANGER, str(root), str(outside), str(step), NEAR_MISS], check=True)
