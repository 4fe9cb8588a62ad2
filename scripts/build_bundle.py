"""Build rootbound's MCP Bundle (``.mcpb``, Claude Desktop's one-click install format) from a built wheel.

``make bundle`` runs it; tests/packaging/test_bundle.py builds, validates, unpacks and runs one. The bundle is of
type ``python``: the wheel and every dependency are installed into ``server/lib`` for this interpreter (by uv's
pip, eight times quicker than pip here), so the host needs only a ``python3`` of the same minor version, on Linux
(pydantic-core, google-re2 and cryptography are compiled for it; ``compatibility`` in the manifest says which).
The MCPB ``uv`` type would let the host fetch dependencies for its own platform instead, but it is experimental in
the spec (manifest 0.4) and nothing here can run it as a host would.

Usage: python scripts/build_bundle.py WHEEL OUTDIR [--mcpb PATH] [--uv PATH]  (prints the .mcpb it wrote)
"""

from __future__ import annotations

import argparse
import email.parser
import json
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

# Run by the bundled interpreter against server/lib: the tools the bundle offers, for the manifest's list.
_LIST_TOOLS = """
import json, sys
sys.path.insert(0, sys.argv[1])
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
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    manifest["version"] = version
    manifest["compatibility"] = {
        "platforms": ["linux"],
        "runtimes": {"python": f">={minor},<{sys.version_info.major}.{sys.version_info.minor + 1}"},
    }
    manifest["tools"] = [
        {"name": name, "description": f"{text} (only with Allow changes on)" if writes else text}
        for name, text, writes in tools
    ]
    return manifest


def stage(wheel: Path, root: Path, uv: Path) -> dict[str, Any]:
    """The bundle's directory: manifest.json, LICENSE, server/main.py and server/lib with the wheel installed."""
    lib = root / "server" / "lib"
    install = [str(uv), "pip", "install", "--quiet", "--python", sys.executable, "--only-binary", ":all:"]
    subprocess.run([*install, "--target", str(lib), str(wheel)], check=True)
    shutil.rmtree(lib / "bin", ignore_errors=True)  # console scripts whose first line names this build's python
    shutil.copyfile(ENTRY, root / "server" / "main.py")
    shutil.copyfile(REPO / "LICENSE", root / "LICENSE")
    listed = subprocess.run(
        [sys.executable, "-I", "-B", "-c", _LIST_TOOLS, str(lib)], check=True, capture_output=True, text=True
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
