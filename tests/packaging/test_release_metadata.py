"""What a release publishes about itself (issue 38): ``server.json`` for the MCP Registry, valid against the registry's
published schema and saying what a host must run; the names and URLs it shares with ``pyproject.toml``, the
README's ``mcp-name`` line (the registry's proof of PyPI ownership) and the bundle manifest, in agreement; and the
built sdist and wheel passing ``twine check``."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rootbound import __version__
from rootbound.cli import build_parser
from tests.helpers.built_dist import INSTALLERS, Dist, installed

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the suite runs on 3.11+; tomli is the same parser
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((Path(__file__).parent / "data" / "server.schema.json").read_text())
SERVER_JSON = json.loads((REPO / "server.json").read_text())
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
MCP_NAME = re.compile(r"<!-- mcp-name: ([\w.-]+/[\w.-]+) -->")


def schema_errors(document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return sorted(f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(document))


def test_server_json_is_valid_against_the_registry_schema() -> None:
    assert SERVER_JSON["$schema"] == SCHEMA["$id"]
    assert schema_errors(SERVER_JSON) == []


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("name",), "rootbound"),  # no namespace
        (("description",), "x" * 101),  # over the registry's 100 characters
        (("packages", 0, "version"), "latest"),  # not a version
        (("packages", 0, "packageArguments", 3), {"type": "positional"}),  # no value, no valueHint
    ],
)
def test_the_schema_check_catches_a_broken_entry(where: tuple[str | int, ...], value: object) -> None:
    broken = copy.deepcopy(SERVER_JSON)
    target: Any = broken
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    assert schema_errors(broken) != []


def test_server_json_names_the_pypi_package_at_this_version() -> None:
    (package,) = SERVER_JSON["packages"]
    assert (package["registryType"], package["identifier"]) == ("pypi", PYPROJECT["project"]["name"])
    assert package["version"] == SERVER_JSON["version"] == __version__
    assert package["transport"] == {"type": "stdio"}
    assert package["runtimeHint"] == "uvx"
    assert SERVER_JSON["repository"]["url"] == PYPROJECT["project"]["urls"]["Source"]


def host_argv(arguments: list[dict[str, Any]], dirs: list[str], *, writable: bool) -> list[str]:
    """The command line a host builds from ``packageArguments`` (the registry's rules): a positional with a
    ``value`` verbatim, a repeated positional once per value the user gave, a named one without a value as the
    bare flag when the user turns it on."""
    argv: list[str] = []
    for argument in arguments:
        if argument["type"] == "positional" and "value" in argument:
            argv.append(argument["value"])
        elif argument["type"] == "positional":
            assert argument["isRepeated"] and argument["isRequired"]
            argv.extend(dirs)
        else:
            assert "value" not in argument and not argument["isRequired"]
            argv.extend([argument["name"]] if writable else [])
    return argv


@pytest.mark.parametrize("writable", [False, True])
def test_the_arguments_a_host_passes_are_rootbound_serve_with_dirs(writable: bool) -> None:
    (package,) = SERVER_JSON["packages"]
    dirs = ["/home/me/projects", "-odd-name"]  # a folder named like a flag stays a folder: "--" comes first
    argv = host_argv(package["packageArguments"], dirs, writable=writable)
    parsed, extra = build_parser().parse_known_args(argv)
    assert extra == []
    assert (parsed.command, [str(path) for path in parsed.dirs], parsed.writable) == ("serve", dirs, writable)


def test_the_readme_proves_pypi_ownership_with_the_same_name() -> None:
    """The registry reads ``mcp-name: NAME`` in the PyPI description (the README) to accept a pypi package."""
    assert MCP_NAME.findall((REPO / "README.md").read_text()) == [SERVER_JSON["name"]]
    owner = SERVER_JSON["name"].split("/")[0].removeprefix("io.github.")
    for url in PYPROJECT["project"]["urls"].values():
        assert url.startswith(f"https://github.com/{owner}/rootbound")


def test_the_bundle_manifest_names_the_same_project() -> None:
    manifest = json.loads((REPO / "packaging" / "mcpb" / "manifest.json").read_text())
    urls = PYPROJECT["project"]["urls"]
    assert manifest["name"] == PYPROJECT["project"]["name"]
    assert (manifest["repository"]["url"], manifest["homepage"]) == (urls["Source"], urls["Homepage"])
    assert (manifest["documentation"], manifest["support"]) == (urls["Documentation"], urls["Issues"])
    assert "version" not in manifest  # scripts/build_bundle.py writes the wheel's


@pytest.mark.timeout(300)  # may be the first user of the session's sdist and wheel
def test_twine_check_passes_on_the_sdist_and_wheel(dist: Dist) -> None:
    done = subprocess.run(
        [str(installed(INSTALLERS / "twine")), "check", "--strict", str(dist.sdist), str(dist.wheel)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2


@pytest.mark.timeout(300)
def test_the_sdist_carries_the_changelog(dist: Dist) -> None:
    with tarfile.open(dist.sdist) as archive:
        names = archive.getnames()
    assert f"rootbound-{__version__}/CHANGELOG.md" in names


@pytest.mark.timeout(300)
def test_the_wheel_carries_the_version_and_urls(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = archive.read(name).decode()
    assert f"\nVersion: {__version__}\n" in metadata
    for label, url in PYPROJECT["project"]["urls"].items():
        assert f"\nProject-URL: {label}, {url}\n" in metadata
    assert f"<!-- mcp-name: {SERVER_JSON['name']} -->" in metadata  # the README is the long description
