"""The wall is ``confine/`` and nothing else: outside it, no module opens a path, calls a syscall wrapper, or imports
the ``os.open`` family. A reviewer who reads ``confine/`` has read every place a name becomes an fd.

What counts, checked on the syntax tree of every module of ``src/rootbound`` outside ``confine/`` (and outside
``audit/``, the audit's own harness for *other* servers, rebuilt under its own issue):

* **a syscall wrapper**: importing ``ctypes``, or one of confine's kernel modules (:data:`KERNEL_MODULES`: the
  resolvers, the raw syscalls, the procfs reopen, root intake, the atomic-write internals);
* **opening a path**: the builtin ``open``, ``io.open``, ``os.fdopen``, any call in :data:`PATH_CALLS` (``os.open``,
  ``os.stat``, ``os.scandir``, ``os.rename``, ...), the ``os.path`` calls that touch the file system
  (:data:`OS_PATH_CALLS`), ``shutil`` and ``tempfile``;
* **the os.open family**: ``os.O_*`` flags, or ``from os import`` any of the above.

fd-level calls on fds the wall handed out (``os.read``, ``os.pread``, ``os.fstat``, ``os.close``, ...) are not
path operations and are allowed. Where a layer above needs more at the fd level (listing a directory fd, the
``lstat`` of a listed name, the flags ``Handle.open_entry`` takes), ``rootbound.confine.fd_access`` is its public
entry point. What pathlib methods do cannot be seen without types, so it is not checked here.

The few modules that do touch the file system outside the wall act on the operator's side, never on a path a
client named: they are listed in :data:`OUTSIDE_THE_ROOTS`, each with what it opens, and a listed call that is no
longer made fails the test too (the list cannot go stale).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import rootbound

PACKAGE = Path(rootbound.__file__).parent
DOCS_SECURITY = PACKAGE.parent.parent / "docs" / "security.md"

KERNEL_MODULES = frozenset(
    f"rootbound.confine.{name}" for name in ("resolvers", "syscalls", "proc_fd", "root_intake", "atomic_write")
)
PATH_CALLS = frozenset(
    [
        "open",
        "openat",
        "scandir",
        "listdir",
        "walk",
        "fwalk",
        "stat",
        "lstat",
        "statvfs",
        "readlink",
        "rename",
        "renames",
        "replace",
        "unlink",
        "remove",
        "removedirs",
        "mkdir",
        "makedirs",
        "rmdir",
        "link",
        "symlink",
        "chmod",
        "lchmod",
        "chown",
        "lchown",
        "chdir",
        "chroot",
        "mkfifo",
        "mknod",
        "utime",
        "access",
        "truncate",
        "getxattr",
        "setxattr",
        "listxattr",
        "removexattr",
        "fdopen",
    ]
)
OS_PATH_CALLS = frozenset(
    [
        "exists",
        "lexists",
        "isdir",
        "isfile",
        "islink",
        "ismount",
        "realpath",
        "getsize",
        "getmtime",
        "getatime",
        "getctime",
        "samefile",
    ]
)
SKIPPED = ("confine", "audit")

# (module, what it calls) -> what it opens: always the operator's side, never a path a client named.
_INDEX_CACHE = "the search index's own cache folder under $XDG_CACHE_HOME (0700, this user's), outside every root"
_FD_TABLE = "/proc/self/fd, to count this process's open fds (the fd budget)"
_SANDBOX = "the operator's DIRs and system paths, opened O_PATH to become Landlock rules"
_STDIO = "os.devnull, put on fd 0/1 so a stray print cannot corrupt the stdio transport"
_DEMO_LOG = "make demo's servers' stderr, held back in an anonymous temporary file"
OUTSIDE_THE_ROOTS: dict[tuple[str, str], str] = {
    ("demo/script.py", "import tempfile"): "make demo's sample project, in a temporary directory of its own",
    (
        "demo/script.py",
        "tempfile.TemporaryDirectory",
    ): "make demo's sample project, in a temporary directory of its own",
    ("demo/console.py", "import tempfile"): "make demo's servers' stderr, held back in an anonymous temporary file",
    (
        "demo/console.py",
        "tempfile.TemporaryFile",
    ): "make demo's servers' stderr, held back in an anonymous temporary file",
    ("mcp/client.py", "os.path.exists"): "the client side: whether a root the client itself declares exists",
    ("search/index/postings.py", "open"): _INDEX_CACHE,
    ("search/index/postings.py", "os.chmod"): _INDEX_CACHE,
    ("search/index/tree_index.py", "import shutil"): _INDEX_CACHE,
    ("search/index/tree_index.py", "shutil.rmtree"): _INDEX_CACHE,
    **{("workspace/limits/fd_budget.py", what): _FD_TABLE for what in ("os.open", "os.listdir")},
    **{("workspace/limits/fd_budget.py", f"os.{flag}"): _FD_TABLE for flag in ("O_CLOEXEC", "O_DIRECTORY", "O_RDONLY")},
    **{("workspace/sandbox.py", what): _SANDBOX for what in ("os.open", "os.O_CLOEXEC", "os.O_PATH")},
    ("workspace/sandbox.py", "open"): "/proc/self/maps: where the C library is, whose folder the loader reads",
    **{("workspace/transport/stdio_loop.py", what): _STDIO for what in ("os.open", "os.O_NONBLOCK", "os.O_RDONLY")},
}
"""What the few modules outside the wall that touch the file system open: never a path a client named."""


def _dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def reaches(source: str, module: str) -> set[str]:
    """What a module's source does that only the wall may do, named as the docstring lists it."""
    found: set[str] = set()
    package = module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in ("ctypes", "shutil", "tempfile") or alias.name in KERNEL_MODULES:
                    found.add(f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, target] if target else base)
            names = {alias.name for alias in node.names}
            if target in ("ctypes", "shutil", "tempfile") or target in KERNEL_MODULES:
                found.add(f"import {target}")
            elif target == "rootbound.confine":
                found |= {f"import {target}.{name}" for name in names if f"{target}.{name}" in KERNEL_MODULES}
            elif target == "os":
                found |= {f"from os import {n}" for n in names if n in PATH_CALLS or n.startswith("O_") or n == "path"}
            elif target == "os.path":
                found |= {f"from os.path import {n}" for n in names if n in OS_PATH_CALLS}
            elif target == "io" and "open" in names:
                found.add("from io import open")
        elif isinstance(node, ast.Attribute):
            name = _dotted(node)
            if name.startswith("os.O_"):
                found.add(name)
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name in ("open", "io.open") or name.startswith(("shutil.", "tempfile.")):
                found.add(name)
            elif name.startswith("os.path."):
                if name.removeprefix("os.path.") in OS_PATH_CALLS:
                    found.add(name)
            elif name.startswith("os.") and name.removeprefix("os.") in PATH_CALLS:
                found.add(name)
    return found


def outside_the_wall() -> dict[str, set[str]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in SKIPPED:
            continue
        module = ".".join(("rootbound", *relative.with_suffix("").parts)).removesuffix(".__init__")
        if reached := reaches(path.read_text(), module):
            found[str(relative)] = reached
    return found


def test_nothing_outside_confine_opens_a_path_or_calls_a_syscall_wrapper() -> None:
    offenders = sorted(
        f"src/rootbound/{module}: {what}"
        for module, reached in outside_the_wall().items()
        for what in sorted(reached)
        if (module, what) not in OUTSIDE_THE_ROOTS
    )
    assert offenders == []


def test_every_exemption_is_still_used_and_none_works_beneath_a_root() -> None:
    """A listed call no longer made is a stale entry; search's entries are only its index cache, never an fd-level
    operation beneath a root (those go through ``rootbound.confine.fd_access``)."""
    reached = outside_the_wall()
    stale = sorted(f"{module}: {what}" for module, what in OUTSIDE_THE_ROOTS if what not in reached.get(module, ()))
    assert stale == []
    search = {why for (module, _), why in OUTSIDE_THE_ROOTS.items() if module.startswith("search/")}
    assert search == {_INDEX_CACHE}


def test_the_wall_check_names_each_kind_of_reach() -> None:
    source = (
        "import ctypes\nimport os\nfrom rootbound.confine.resolvers import DIR_READ\nfrom os import O_PATH\n"
        "def f(fd):\n    os.open('x', os.O_RDONLY, dir_fd=fd)\n    open('y')\n    os.path.exists('z')\n"
        "    os.pread(fd, 1, 0)\n    os.fstat(fd)\n"
    )
    assert reaches(source, "rootbound.search.probe") == {
        "import ctypes",
        "import rootbound.confine.resolvers",
        "from os import O_PATH",
        "os.open",
        "os.O_RDONLY",
        "open",
        "os.path.exists",
    }


def test_security_md_states_the_size_of_the_wall() -> None:
    """``docs/security.md`` says how much code a reviewer of the wall reads; the numbers follow the folder."""
    stated = re.search(r"the code to review is these (\d+) files, ([\d,]+) lines", DOCS_SECURITY.read_text())
    assert stated is not None
    files = sorted((PACKAGE / "confine").rglob("*.py"))
    lines = sum(len(path.read_text().splitlines()) for path in files)
    assert (int(stated[1]), int(stated[2].replace(",", ""))) == (len(files), lines)
