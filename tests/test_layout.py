"""The package's shape, checked: folders are layers, lower layers never import higher ones, no import cycles, the
public names stay where users import them, and every repository path the docs name exists.

Layers, lowest first (``docs/architecture.md``): ``core`` (pure protocol) < ``text`` (pure text: windows, media
types, edit, diff) < ``confine`` (the wall: the one entry point into a held root and the file operations over it)
< ``search`` (walks, globs, grep, the scan helper, the index, on the wall's public API) < ``mcp`` (adapters on the
SDK) < apps (``workspace``, ``audit``, ``demo``, ``cli``). The package facade (``rootbound/__init__.py`` and the
public module paths beside it) re-exports the lower layers for users; only apps may import it.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import rootbound

PACKAGE = Path(rootbound.__file__).parent
REPO = PACKAGE.parent.parent

LAYERS = {"core": 0, "text": 1, "confine": 2, "search": 3, "mcp": 4, "workspace": 5, "audit": 5, "demo": 5}
APPS = 5
PUBLIC_MODULES = {"uri": "core.uri", "roots": "core.roots", "errors": "core.errors", "mrtr": "core.mrtr"}
PUBLIC_MODULES |= {"edit": "text.edit", "boundary": "confine.boundary", "fs": "search.rooted_fs"}
TOP_LEVEL = {"__init__.py", "__main__.py", "cli.py", "py.typed"} | {f"{name}.py" for name in PUBLIC_MODULES}
SDK = {"mcp", "mcp_types", "starlette", "uvicorn", "httpx", "anyio", "sse_starlette"}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def rank(module: str) -> int:
    """The layer of a rootbound module; the facade counts as an app (only apps may import it)."""
    parts = module.split(".")
    return LAYERS.get(parts[1], APPS) if len(parts) > 1 else APPS


def imports_of(path: Path, modules: dict[str, Path], root: Path = PACKAGE) -> Iterator[tuple[int, str]]:
    """(line, module) for every import in the file, wherever it stands (function bodies and TYPE_CHECKING too);
    ``from package import name`` counts as importing the submodule when ``name`` is one."""
    this = module_name(path, root)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            submodules = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in modules]
            if len(submodules) < len(node.names):
                yield node.lineno, target
            for submodule in submodules:
                yield node.lineno, submodule


def layering_violations(modules: dict[str, Path], root: Path = PACKAGE) -> list[str]:
    found = []
    for name, path in sorted(modules.items()):
        mine = rank(name)
        if mine == APPS:
            continue
        for line, target in imports_of(path, modules, root):
            where = f"{path.relative_to(root.parent)}:{line}"
            if mine <= LAYERS["search"] and target.split(".")[0] in SDK:
                found.append(
                    f"{where} imports {target}: layer {name.split('.')[1]} must not import the SDK or I/O stack"
                )
            elif target.split(".")[0] == "rootbound" and rank(target) > mine:
                found.append(f"{where} imports {target}, a higher layer than {name.split('.')[1]}")
    return found


def test_lower_layers_never_import_higher_ones() -> None:
    assert layering_violations(all_modules()) == []


def test_the_layering_check_names_an_offending_import(tmp_path: Path) -> None:
    """The check itself can fail: a core module importing the confinement layer, and one importing the SDK."""
    source = (PACKAGE / "core" / "uri.py").read_text()
    probe = tmp_path / "rootbound" / "core" / "uri.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(source + "\nfrom rootbound.confine.boundary import Boundary\nimport mcp_types\n")
    found = layering_violations({"rootbound.core.uri": probe}, tmp_path / "rootbound")
    assert any(
        "rootbound/core/uri.py" in f and "imports rootbound.confine.boundary, a higher layer than core" in f
        for f in found
    )
    assert any("imports mcp_types" in f for f in found)


def import_cycles(modules: dict[str, Path], root: Path = PACKAGE) -> list[list[str]]:
    """Strongly connected components of more than one module (or a module importing itself): Tarjan's algorithm."""
    graph = {
        name: sorted({t for _, t in imports_of(path, modules, root) if t in modules} - {name})
        for name, path in modules.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph[node]:
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return cycles


def test_no_import_cycles() -> None:
    """Every import counts, also those inside functions or under TYPE_CHECKING: a cycle is broken by moving what
    both sides need into the lower module, not by hiding an import."""
    assert import_cycles(all_modules()) == []


def test_the_cycle_check_finds_a_cycle(tmp_path: Path) -> None:
    a, b = tmp_path / "rootbound" / "a.py", tmp_path / "rootbound" / "b.py"
    a.parent.mkdir()
    a.write_text("from rootbound import b\n")
    b.write_text("def f():\n    from rootbound.a import x\n")
    assert import_cycles({"rootbound.a": a, "rootbound.b": b}, tmp_path / "rootbound") == [
        ["rootbound.a", "rootbound.b"]
    ]


def test_the_top_of_the_package_holds_only_public_modules_and_layer_folders() -> None:
    files = {p.name for p in PACKAGE.iterdir() if p.is_file()}
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert files == TOP_LEVEL
    assert folders == set(LAYERS)


@pytest.mark.parametrize("public", sorted(PUBLIC_MODULES))
def test_public_module_paths_re_export_their_layer_module(public: str) -> None:
    """``rootbound.errors`` and the other documented paths keep working: the same objects as the layer module."""
    shim = importlib.import_module(f"rootbound.{public}")
    home = importlib.import_module(f"rootbound.{PUBLIC_MODULES[public]}")
    assert sorted(shim.__all__) == sorted(home.__all__)
    for name in home.__all__:
        assert getattr(shim, name) is getattr(home, name), name


EXPORTS = {
    "rootbound": [
        "AccessDenied", "Boundary", "CrossesMount", "DanglingSymlink", "Dropped", "Edit", "EditAmbiguous",
        "EditError", "EditNotFound", "EditOutcome", "EffectiveRoot", "Entry", "Era", "FileChanged",
        "FileOperationFailed", "GrepMatch", "GrepResult", "HardLinked", "InvalidEdit", "InvalidPath",
        "InvalidPattern", "InvalidRootURI", "InvalidRootsAnswer", "InvalidRootsRequest", "IsADirectory",
        "LimitExceeded", "MISSING", "MissingCapability", "NotADirectory", "NotAFile", "NotText", "OutsideRoots",
        "PathExists", "PathNotFound", "PatternTooSlow", "ROOTS_KEY", "ReadOnly", "Root", "RootChanged", "RootLike",
        "RootLimits", "RootSet", "RootedFS", "RootsChange", "RootsError", "RootsUnavailable", "SearchResult",
        "SymlinkEscape", "SymlinkLoop", "TooLarge", "__version__", "canonical_uri", "path_to_uri", "uri_to_path",
    ],
    "rootbound.mcp": [
        "ChangeCallback", "ClientKwargs", "InputRequired", "RequiresMcp2", "RootsProvider", "RootsService",
        "mcp_error", "tool_errors",
    ],
    "rootbound.audit": [
        "AuditOptions", "CLASSES", "EscapeClass", "Evidence", "Finding", "ModeRun", "Probe", "Report",
        "ServerSpec", "Trap", "build_trap", "catalogue", "judge", "run_audit",
    ],
    "rootbound.workspace": [
        "Limits", "PROJECT_MARKERS", "TOOLS", "ToolError", "WorkspaceConfig", "build_workspace_server", "run_tool",
    ],
}  # fmt: skip


@pytest.mark.parametrize("package", sorted(EXPORTS))
def test_exported_names_are_pinned(package: str) -> None:
    """Removing or renaming a public name is a decision, not a side effect: this list changes with it. (Each
    name's resolution is checked in a fresh interpreter by ``tests/core/test_lazy.py``.)"""
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(EXPORTS[package])
    for name in module.__all__:
        assert getattr(module, name) is not None


# A repository path as the docs name it: a top-level folder or file, then path characters.
DOC_PATH = re.compile(
    r"(?<![\w./-])((?:src|tests|bench|docs|examples|scripts|\.ci)/[\w./*{},-]*[\w*}]|Makefile|pyproject\.toml)"
)
EXAMPLES = {"src/**/*.ts"}  # search_files' example pattern in the README's tool table
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def named_paths(doc: Path) -> Iterator[str]:
    text = doc.read_text()
    for match in DOC_PATH.finditer(text):
        yield match.group(1)
    for match in LINK.finditer(text):
        target = match.group(1)
        if "://" not in target and not target.startswith("mailto:"):
            yield str((doc.parent / target).resolve().relative_to(REPO))


def missing_paths(docs: list[Path]) -> list[str]:
    missing = []
    for doc in docs:
        for named in named_paths(doc):
            if "{" in named or named in EXAMPLES:
                continue  # a template (tests/{core,confine}) or an example argument, not a path in this repository
            exists = any(REPO.glob(named)) if "*" in named else (REPO / named).exists()
            if not exists:
                missing.append(f"{doc.relative_to(REPO)}: {named}")
    return sorted(set(missing))


def test_every_repository_path_the_docs_name_exists() -> None:
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    assert missing_paths(docs) == []


def test_the_doc_path_check_finds_a_stale_path() -> None:
    doc = REPO / "docs" / "__probe_for_test__.md"
    try:
        doc.write_text("See `tests/test_reliability_faults.py`, [writing](writing.md) and [gone](gone.md).\n")
        assert missing_paths([doc]) == [
            "docs/__probe_for_test__.md: docs/gone.md",
            "docs/__probe_for_test__.md: tests/test_reliability_faults.py",
        ]
    finally:
        doc.unlink()


MAX_PARAMETERS = 8
"""A call's arguments travel as one frozen request object (``GrepQuery``, ``GrepSettings``, ``HttpListen``, ...),
not as a dozen loose parameters threaded through every function on the way down."""


def parameters_over(limit: int, package: Path = PACKAGE) -> list[str]:
    """Every function of ``src`` taking more than ``limit`` parameters, ``self``/``cls`` not counted, ``*args`` and
    ``**kwargs`` counted once each."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = node.args
                names = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
                names += [a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None]
                if names[:1] in (["self"], ["cls"]):
                    names = names[1:]
                if len(names) > limit:
                    found.append(f"{module_name(path, package)}.{node.name} ({len(names)})")
    return found


def test_no_function_takes_more_than_eight_parameters() -> None:
    assert parameters_over(MAX_PARAMETERS) == []


def test_the_parameter_check_names_an_offender(tmp_path: Path) -> None:
    probe = tmp_path / "rootbound" / "core" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("class C:\n    def m(self, a, b, c, d, e, f, g, h, *, i): ...\n    def ok(self, *a, **k): ...\n")
    assert parameters_over(MAX_PARAMETERS, tmp_path / "rootbound") == ["rootbound.core.probe.m (9)"]


MAX_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    long = [
        f"{path.relative_to(PACKAGE.parent)} ({count})"
        for path in sorted(PACKAGE.rglob("*.py"))
        if (count := len(path.read_text().splitlines())) > MAX_LINES
    ]
    assert long == []


def test_workspace_keeps_at_most_twelve_modules_at_its_top() -> None:
    top = sorted(path.name for path in (PACKAGE / "workspace").glob("*.py"))
    assert len(top) <= 12, top
