"""Build rootbound's MCP Bundle (``.mcpb``, Claude Desktop's one-click install format) from a built wheel.

``make bundle`` runs it; tests/packaging/test_bundle.py builds, validates, unpacks and runs one. The bundle is of
type ``python`` and runs on every CPython from 3.10 to 3.14 (a desktop's ``python3`` is whatever its distribution
ships: Ubuntu 24.04 has 3.12, Debian 13 has 3.13): the wheel and its dependencies are installed once per minor
version (uv's pip, for that version and glibc 2.28 on this machine's CPU), then each top-level package or module
is kept once for every group of versions whose copies are the same byte for byte: ``server/lib/common`` for all
of them, ``server/lib/cp311.cp312...`` for some, ``server/lib/cp310`` for one (numpy, pydantic-core, google-re2:
compiled per version); ``server/main.py`` puts its version's folders on the path at start. The MCPB ``uv`` type
would let the host fetch dependencies instead, but it is experimental in the spec (manifest 0.4) and nothing here
can run it as a host would.

Usage: python scripts/build_bundle.py WHEEL OUTDIR [--mcpb PATH] [--uv PATH]  (prints the .mcpb it wrote)
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import json
import platform
import runpy
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "packaging" / "mcpb" / "manifest.json"
ENTRY = REPO / "packaging" / "mcpb" / "main.py"
DEFAULT_MCPB = REPO / ".deps" / "mcpb" / "node_modules" / ".bin" / "mcpb"
DEFAULT_UV = REPO / ".deps" / "installers" / "bin" / "uv"
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
"""The minor versions the bundle carries packages for (every one has wheels for each compiled dependency)."""
GLIBC = "2_28"
"""The oldest glibc the compiled packages may need: Debian 10, Ubuntu 20.04, RHEL 8 and newer."""

# Run by the bundled interpreter against server/lib: the tools the bundle offers, for the manifest's list.
_LIST_TOOLS = """
import json, sys
sys.path[:0] = sys.argv[1:]
from rootbound.workspace.tools import tool_specs
print(json.dumps([[s.name, s.description.split(". ")[0].rstrip(".") + ".", s.writes] for s in tool_specs(True)]))
"""


def wheel_version(wheel: Path) -> str:
    """The ``Version`` in the wheel's METADATA (not its file name, which a user may have renamed)."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.parser.Parser().parsestr(archive.read(name).decode("utf-8"))
    return str(metadata["Version"])


def manifest_for(version: str, tools: list[list[Any]]) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads(TEMPLATE.read_text())
    newest = int(PYTHONS[-1].split(".")[1])
    manifest["version"] = version
    manifest["compatibility"] = {"platforms": ["linux"], "runtimes": {"python": f">={PYTHONS[0]},<3.{newest + 1}"}}
    manifest["tools"] = [
        {"name": name, "description": f"{text} (only with Allow changes on)" if writes else text}
        for name, text, writes in tools
    ]
    return manifest


def tag(version: str) -> str:
    """The folder of a minor version's own packages: ``3.12`` -> ``cp312``."""
    return "cp" + version.replace(".", "")


def distributions(target: Path) -> dict[str, set[str]]:
    """The top-level entries of an install, grouped into units that must stay side by side: a distribution's
    packages, its ``.dist-info`` and its ``.libs`` (auditwheel's shared libraries, found through ``$ORIGIN``), per
    its ``RECORD``; distributions that share a folder (namespace packages) are one unit."""
    units: list[set[str]] = []
    for record in sorted(target.glob("*.dist-info/RECORD")):
        rows = record.read_text(encoding="utf-8").splitlines()
        unit = {record.parent.name} | {row.split("/", 1)[0].split(",", 1)[0] for row in rows if row}
        unit = {name for name in unit if (target / name).exists()}
        for other in [u for u in units if u & unit]:
            units.remove(other)
            unit |= other
        units.append(unit)
    claimed = set().union(*units) if units else set()
    units += [{entry.name} for entry in target.iterdir() if entry.name not in claimed]
    return {min(unit): unit for unit in units}


def digest(target: Path, names: set[str]) -> str:
    """What a unit holds: every file's path below ``target`` and its bytes."""
    total = hashlib.sha256()
    for name in sorted(names):
        entry = target / name
        for path in sorted(entry.rglob("*")) if entry.is_dir() else [entry]:
            if path.is_file():
                total.update(str(path.relative_to(target)).encode() + b"\0" + path.read_bytes() + b"\0")
    return total.hexdigest()


def split_shared(installs: dict[str, Path], lib: Path) -> None:
    """Each unit (:func:`distributions`) once for every group of versions whose copies are the same byte for byte:
    in ``lib/common`` when that is all of them, else in ``lib/cpXY.cpZW...`` (the group's tags)."""
    by_version = {version: distributions(target) for version, target in installs.items()}
    keys = sorted({key for units in by_version.values() for key in units})
    for key in keys:
        groups: dict[str, list[str]] = {}
        for version, units in by_version.items():
            if key in units:
                groups.setdefault(digest(installs[version], units[key]), []).append(version)
        for versions in groups.values():
            folder = lib / ("common" if versions == list(installs) else ".".join(tag(v) for v in versions))
            folder.mkdir(parents=True, exist_ok=True)
            for name in by_version[versions[0]][key]:
                shutil.move(installs[versions[0]] / name, folder / name)


def stage(wheel: Path, root: Path, uv: Path) -> dict[str, Any]:
    """The bundle's directory: manifest.json, LICENSE, server/main.py and server/lib with the wheel installed for
    every version in :data:`PYTHONS`."""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if here not in PYTHONS:
        raise SystemExit(f"build_bundle: run it with one of Python {', '.join(PYTHONS)} (this is {here})")
    lib = root / "server" / "lib"
    with tempfile.TemporaryDirectory(prefix="rootbound-lib-") as scratch:
        installs = {version: Path(scratch) / tag(version) for version in PYTHONS}
        target_platform = f"{platform.machine()}-manylinux_{GLIBC}"
        for version, target in installs.items():
            install = [str(uv), "pip", "install", "--quiet", "--python", sys.executable, "--only-binary", ":all:"]
            options = ["--python-version", version, "--python-platform", target_platform, "--target", str(target)]
            subprocess.run([*install, *options, str(wheel)], check=True)
            shutil.rmtree(target / "bin", ignore_errors=True)  # console scripts whose first line names a python
        split_shared(installs, lib)
    shutil.copyfile(ENTRY, root / "server" / "main.py")
    shutil.copyfile(REPO / "LICENSE", root / "LICENSE")
    paths = runpy.run_path(str(ENTRY))["lib_paths"](lib, sys.version_info[:2])  # the entry point's own choice
    listed = subprocess.run(
        [sys.executable, "-I", "-B", "-c", _LIST_TOOLS, *paths], check=True, capture_output=True, text=True
    )
    manifest = manifest_for(wheel_version(wheel), json.loads(listed.stdout))
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def build(wheel: Path, outdir: Path, mcpb: Path = DEFAULT_MCPB, uv: Path = DEFAULT_UV) -> Path:
    with tempfile.TemporaryDirectory(prefix="rootbound-bundle-") as scratch:
        root = Path(scratch) / "rootbound"
        root.mkdir()
        manifest = stage(wheel, root, uv)
        subprocess.run([str(mcpb), "validate", str(root / "manifest.json")], check=True, stdout=subprocess.DEVNULL)
        outdir.mkdir(parents=True, exist_ok=True)
        target = outdir / f"rootbound-{manifest['version']}.mcpb"
        subprocess.run([str(mcpb), "pack", str(root), str(target)], check=True, stdout=subprocess.DEVNULL)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description="Build rootbound's .mcpb from a built wheel.")
    parser.add_argument("wheel", type=Path)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--mcpb", type=Path, default=DEFAULT_MCPB, help="the mcpb CLI (default: .deps/mcpb)")
    parser.add_argument("--uv", type=Path, default=DEFAULT_UV, help="uv (default: .deps/installers)")
    args = parser.parse_args()
    for tool in (args.mcpb, args.uv):
        if not tool.exists():
            parser.error(f"no {tool.name} at {tool}: run bash scripts/setup-packaging-deps.sh")
    print(build(args.wheel.resolve(), args.outdir.resolve(), args.mcpb, args.uv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
