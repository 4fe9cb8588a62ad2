"""The audit's typed canaries, opened by the libraries real servers use: a canary a server's library refuses turns a
read or write probe into an error before the server touches the content, so an escape is under-rated or missed.

rootbound's own environment has none of these libraries (they are not its dependencies), so each check runs in a
venv of its own with openpyxl and nbformat at the versions the published servers install, and excelize through the
Go server that ships it (``@negokaz/excel-mcp-server``): ``scripts/setup-test-deps.sh`` installs both (``make test``
runs it), pinned by ``tests/audit/canary-readers/``. A missing install fails the test with how to make it: it never
skips.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import textwrap
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp import Client
from rootbound.audit import canary_files
from rootbound.audit.filetypes import REGISTRY
from tests.helpers.processes import DEPS

READERS = DEPS / "canary-readers"
READERS_NPM = DEPS / "canary-readers-npm"
TOKEN = "rbt-token-0123456789abcdef01234567"
INSTALL = "run scripts/setup-test-deps.sh (make test runs it): it installs them, pinned by tests/audit/canary-readers/"


def installed(found: Path, what: str) -> Path:
    """A file of the readers' install; fail (never skip) when it is not there."""
    if not found.exists():
        pytest.fail(f"{what} not found at {found}: {INSTALL}", pytrace=False)
    return found


def run_in(python: Path, script: str, *args: str) -> str:
    """Run ``script`` in another interpreter; its stdout, or fail with its stderr's last lines."""
    done = subprocess.run(
        [str(python), "-c", textwrap.dedent(script), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_xlsx_canary_is_read_and_written_by_openpyxl(tmp_path: Path) -> None:
    """excel-mcp-server (openpyxl) refused the canary before ("could not be opened as an Excel workbook (expected
    <class 'openpyxl.styles.fills.Fill'>)": its stylesheet had a bare ``<fill/>``): every probe that reached an
    outside workbook was an error, whatever the path check."""
    book = tmp_path / "canary.xlsx"
    book.write_bytes(REGISTRY["xlsx"].make(TOKEN))
    python = installed(READERS / "bin/python", "openpyxl's venv")
    out = run_in(
        python,
        """
        import json, sys
        import openpyxl
        from openpyxl.styles import Font
        path, saved = sys.argv[1], sys.argv[2]
        seen = {}
        for stream in (False, True):
            book = openpyxl.load_workbook(path, read_only=stream)
            seen[str(stream)] = [book.sheetnames, [[c.value for c in row] for row in book["rbt"].iter_rows()]]
            book.close()
        book = openpyxl.load_workbook(path)
        book["rbt"]["C1"] = "WRITTEN"
        book["rbt"]["A1"].font = Font(bold=True)
        book.save(saved)
        again = openpyxl.load_workbook(saved)["rbt"]
        seen["saved"] = [again["A1"].value, again["C1"].value, again["A1"].font.b]
        print(json.dumps(seen))
        """,
        str(book),
        str(tmp_path / "saved.xlsx"),
    )
    seen = json.loads(out)
    assert seen["False"] == seen["True"] == [["rbt"], [[TOKEN, 1]]]
    assert seen["saved"] == [TOKEN, "WRITTEN", True]


def test_xlsx_canary_is_read_and_written_by_excelize(tmp_path: Path) -> None:
    """The Go library (excelize, through negokaz's server) reads the token and writes and styles the workbook: the
    stylesheet openpyxl needs must not cost what excelize needed (a dimension, a sheet view, cell formats)."""
    launcher = installed(
        READERS_NPM / "node_modules/negokaz-excel/dist/launcher.js", "@negokaz/excel-mcp-server (excelize)"
    )
    read, written = tmp_path / "read.xlsx", tmp_path / "written.xlsx"
    read.write_bytes(REGISTRY["xlsx"].make(TOKEN))
    written.write_bytes(REGISTRY["xlsx"].make(TOKEN))
    calls: list[tuple[str, dict[str, Any]]] = [
        ("excel_read_sheet", {"fileAbsolutePath": str(read), "sheetName": "rbt"}),
        ("excel_write_to_sheet", {"fileAbsolutePath": str(written), "sheetName": "rbt", "newSheet": False,
                                  "range": "C1:C1", "values": [["WRITTEN"]]}),
        ("excel_format_range", {"fileAbsolutePath": str(written), "sheetName": "rbt", "range": "A1:A1",
                                "styles": [[{"font": {"bold": True}}]]}),
    ]  # fmt: skip

    async def session() -> list[tuple[bool, str]]:
        params = StdioServerParameters(command="node", args=[str(launcher)], cwd=str(tmp_path))
        answers = []
        with (tmp_path / "server.log").open("w") as log:
            async with Client(stdio_client(params, errlog=log), mode="legacy") as client:
                for name, arguments in calls:
                    result = await client.call_tool(name, arguments)
                    text = " ".join(getattr(part, "text", "") for part in result.content)
                    answers.append((result.is_error, text))
        return answers

    answers = anyio.run(session)
    assert [error for error, _ in answers] == [False, False, False], answers
    assert TOKEN in answers[0][1]
    with zipfile.ZipFile(written) as book:
        assert "WRITTEN" in book.read("xl/sharedStrings.xml").decode()
        assert re.search(r"<font>(?:(?!</font>).)*<b[ />]", book.read("xl/styles.xml").decode())  # a bold font added


def test_ipynb_canary_is_a_valid_notebook(tmp_path: Path) -> None:
    """nbformat's validator warned on the canary before (``MissingIDFieldWarning``: nbformat 4.5 cells need an
    ``id``; "this will become a hard error"): here warnings are errors, so a future nbformat's refusal shows now."""
    notebook = tmp_path / "canary.ipynb"
    notebook.write_bytes(REGISTRY["ipynb"].make(TOKEN))
    python = installed(READERS / "bin/python", "nbformat's venv")
    out = run_in(
        python,
        """
        import json, sys, warnings
        import nbformat
        warnings.simplefilter("error")
        with open(sys.argv[1], encoding="utf-8") as fh:
            raw = json.load(fh)
        nbformat.validate(raw)
        book = nbformat.reads(json.dumps(raw), as_version=4)
        nbformat.validate(book)
        print(json.dumps([cell.source for cell in book.cells]))
        """,
        str(notebook),
    )
    assert json.loads(out) == [TOKEN, f"# {TOKEN}"]


def _package(data: bytes) -> dict[str, str]:
    """An Open XML package's parts (name -> text), checked as a reader walks it: every relationship's target is a
    part of the package, and every part has a content type."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        parts = {name: archive.read(name).decode() for name in archive.namelist()}
    types = parts["[Content_Types].xml"]
    for name in parts:
        extension = name.rsplit(".", 1)[-1]
        assert f'PartName="/{name}"' in types or f'Extension="{extension}"' in types, name
    for name, text in parts.items():
        if not name.endswith(".rels"):
            continue
        source = PurePosixPath(name).parent.parent
        for target in re.findall(r'Target="([^"]+)"', text):
            resolved = os.path.normpath(source / target).lstrip("/")
            assert resolved in parts, f"{name} names {target}, not in the package"
    return parts


def _related(parts: dict[str, str], part: str, kind: str) -> list[str]:
    rels = parts[str(PurePosixPath(part).parent / "_rels" / f"{PurePosixPath(part).name}.rels")]
    return re.findall(rf'Type="[^"]*/{kind}" Target="([^"]+)"', rels)


def test_office_canaries_are_whole_packages() -> None:
    """No library for .pptx or .docx is installed on this machine (python-pptx, python-docx), so the packages are
    checked as their readers walk them. The .pptx had a slide and nothing else before: no layout, master or theme
    (python-pptx's ``slide.slide_layout`` and ``add_slide(prs.slide_layouts[0])`` fail on that, PowerPoint refuses
    it), no ``notesSz`` (required by the schema), and a shape without the ``nvSpPr`` that names it."""
    for make in (REGISTRY["xlsx"].make, REGISTRY["pptx"].make, canary_files.docx):
        _package(make(TOKEN))
    deck = _package(REGISTRY["pptx"].make(TOKEN))
    presentation = deck["ppt/presentation.xml"]
    assert "<p:sldMasterIdLst>" in presentation and "<p:notesSz " in presentation
    assert _related(deck, "ppt/slides/slide1.xml", "slideLayout") == ["../slideLayouts/slideLayout1.xml"]
    assert _related(deck, "ppt/slideLayouts/slideLayout1.xml", "slideMaster") == ["../slideMasters/slideMaster1.xml"]
    assert _related(deck, "ppt/slideMasters/slideMaster1.xml", "theme") == ["../theme/theme1.xml"]
    slide = deck["ppt/slides/slide1.xml"]
    assert '<p:cNvPr id="2" name="rbt"/>' in slide and TOKEN in slide
