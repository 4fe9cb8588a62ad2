"""File types the audit can make a canary in, on demand, when a tool asks for one (its description, its schema or
its refusal names it: "must point to an Excel file", ``"pattern": "\\.ipynb$"``, "e.g. 'report.xlsx'").

Each type is a small generator with no dependency beyond the standard library: bytes that a reader of that type
opens, carrying a location's token where the reader shows it (a cell, a slide's text, a notebook cell, a row, an
archive member, a table row, a comment). :data:`REGISTRY` maps an extension to its :class:`FileType`;
:func:`register` adds one (the words that name it, and its maker). The types a trap holds from the start (PNG,
PDF, ``.docx``, Markdown, JSON: :mod:`rootbound.audit.canary_files`) are in it too.

Every maker is pure: the same text gives the same bytes (``--replay`` rebuilds them).
"""

from __future__ import annotations

import io
import json
import os
import re
import sqlite3
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

from rootbound.audit import canary_files

__all__ = ["REGISTRY", "FileType", "named_type", "register"]

_DATE = (2001, 1, 1, 0, 0, 0)


def _x(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _zip(parts: list[tuple[str, str | bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:  # stored: a base64 answer shows the token
        for name, data in parts:
            archive.writestr(zipfile.ZipInfo(name, date_time=_DATE), data)
    return out.getvalue()


_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
_PKG = "http://schemas.openxmlformats.org/package/2006/"
_DOC = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_SML = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_PML = "http://schemas.openxmlformats.org/presentationml/2006/main"
_DML = "http://schemas.openxmlformats.org/drawingml/2006/main"
_OFFICE = "application/vnd.openxmlformats-officedocument."


def _rels(*targets: tuple[str, str, str]) -> str:
    items = "".join(f'<Relationship Id="{i}" Type="{_DOC}/{kind}" Target="{t}"/>' for i, kind, t in targets)
    return f'{_XML}<Relationships xmlns="{_PKG}relationships">{items}</Relationships>'


def _types(*overrides: tuple[str, str]) -> str:
    items = "".join(f'<Override PartName="{p}" ContentType="{_OFFICE}{c}"/>' for p, c in overrides)
    return (
        f'{_XML}<Types xmlns="{_PKG}content-types">'
        f'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        f'<Default Extension="xml" ContentType="application/xml"/>{items}</Types>'
    )


# the least stylesheet readers accept (excelize crashes styling cells of a workbook without one; openpyxl refuses a
# bare ``<fill/>``: "expected Fill"): one font, the two fills every workbook has (``none`` and ``gray125``), one
# border with its sides, one cell style (Normal) and one cell format, in the schema's order
_STYLES = (
    f'{_XML}<styleSheet xmlns="{_SML}">'
    '<fonts count="1"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>'
    '<fills count="2"><fill><patternFill patternType="none"/></fill>'
    '<fill><patternFill patternType="gray125"/></fill></fills>'
    '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    '<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs>'
    '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
    "</styleSheet>"
)


def xlsx(text: str) -> bytes:
    """A one-sheet workbook: cell A1 holds ``text`` (a shared string), B1 the number 1. The sheet is named ``rbt``,
    the audit's string filler, so a tool that must name a sheet of the workbook (``sheetName``) names one that
    exists; its ``dimension``, a workbook view for its sheet view and a complete stylesheet are there, as real writers
    make them (excelize refuses to update a sheet without the one and crashes styling cells without the other;
    openpyxl refuses the whole workbook if a fill has no pattern)."""
    return _zip(
        [
            (
                "[Content_Types].xml",
                _types(
                    ("/xl/workbook.xml", "spreadsheetml.sheet.main+xml"),
                    ("/xl/worksheets/sheet1.xml", "spreadsheetml.worksheet+xml"),
                    ("/xl/sharedStrings.xml", "spreadsheetml.sharedStrings+xml"),
                    ("/xl/styles.xml", "spreadsheetml.styles+xml"),
                ),
            ),
            ("_rels/.rels", _rels(("rId1", "officeDocument", "xl/workbook.xml"))),
            (
                "xl/workbook.xml",
                f'{_XML}<workbook xmlns="{_SML}" xmlns:r="{_DOC}"><bookViews><workbookView/></bookViews><sheets>'
                '<sheet name="rbt" sheetId="1" r:id="rId1"/></sheets></workbook>',
            ),
            (
                "xl/_rels/workbook.xml.rels",
                _rels(
                    ("rId1", "worksheet", "worksheets/sheet1.xml"),
                    ("rId2", "sharedStrings", "sharedStrings.xml"),
                    ("rId3", "styles", "styles.xml"),
                ),
            ),
            (
                "xl/worksheets/sheet1.xml",
                f'{_XML}<worksheet xmlns="{_SML}"><dimension ref="A1:B1"/>'
                '<sheetViews><sheetView workbookViewId="0"/></sheetViews><sheetData><row r="1">'
                '<c r="A1" t="s"><v>0</v></c><c r="B1"><v>1</v></c></row></sheetData></worksheet>',
            ),
            (
                "xl/sharedStrings.xml",
                f'{_XML}<sst xmlns="{_SML}" count="1" uniqueCount="1"><si><t>{_x(text)}</t></si></sst>',
            ),
            ("xl/styles.xml", _STYLES),
        ]
    )


_NS_P = f'xmlns:a="{_DML}" xmlns:r="{_DOC}" xmlns:p="{_PML}"'
_TREE = '<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>'
_COLOURS = (
    ("dk1", "000000"), ("lt1", "FFFFFF"), ("dk2", "44546A"), ("lt2", "E7E6E6"), ("accent1", "4472C4"),
    ("accent2", "ED7D31"), ("accent3", "A5A5A5"), ("accent4", "FFC000"), ("accent5", "5B9BD5"),
    ("accent6", "70AD47"), ("hlink", "0563C1"), ("folHlink", "954F72"),
)  # fmt: skip
_FONT = '<a:latin typeface="Calibri"/><a:ea typeface=""/><a:cs typeface=""/>'
_FILL = '<a:solidFill><a:schemeClr val="phClr"/></a:solidFill>'
# a theme with every part the schema requires (a slide master without one is refused by PowerPoint)
_THEME = (
    f'{_XML}<a:theme xmlns:a="{_DML}" name="rbt"><a:themeElements><a:clrScheme name="rbt">'
    + "".join(f'<a:{n}><a:srgbClr val="{v}"/></a:{n}>' for n, v in _COLOURS)
    + f'</a:clrScheme><a:fontScheme name="rbt"><a:majorFont>{_FONT}</a:majorFont><a:minorFont>{_FONT}'
    f'</a:minorFont></a:fontScheme><a:fmtScheme name="rbt"><a:fillStyleLst>{_FILL * 3}</a:fillStyleLst>'
    f"<a:lnStyleLst>{f'<a:ln>{_FILL}</a:ln>' * 3}</a:lnStyleLst>"
    f"<a:effectStyleLst>{'<a:effectStyle><a:effectLst/></a:effectStyle>' * 3}</a:effectStyleLst>"
    f"<a:bgFillStyleLst>{_FILL * 3}</a:bgFillStyleLst></a:fmtScheme></a:themeElements></a:theme>"
)
_MASTER = (
    f"{_XML}<p:sldMaster {_NS_P}><p:cSld><p:spTree>{_TREE}</p:spTree></p:cSld><p:clrMap "
    + " ".join(f'{k}="{v}"' for k, v in (("bg1", "lt1"), ("tx1", "dk1"), ("bg2", "lt2"), ("tx2", "dk2")))
    + "".join(f' {n}="{n}"' for n, _ in _COLOURS[4:])
    + '/><p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/></p:sldLayoutIdLst></p:sldMaster>'
)
_LAYOUT = (
    f'{_XML}<p:sldLayout {_NS_P} type="blank" preserve="1"><p:cSld name="Blank"><p:spTree>{_TREE}</p:spTree>'
    "</p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>"
)


def pptx(text: str) -> bytes:
    """A one-slide presentation whose text box holds ``text``, with what a presentation needs besides its slide
    (a slide master, a layout, a theme, the slide and notes sizes): a library that lists slides with their layout,
    names shapes or adds a slide (python-pptx's ``add_slide(prs.slide_layouts[0])``) works on it."""
    slide = (
        f"{_XML}<p:sld {_NS_P}><p:cSld><p:spTree>{_TREE}<p:sp><p:nvSpPr>"
        '<p:cNvPr id="2" name="rbt"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr><p:spPr><a:xfrm>'
        '<a:off x="457200" y="457200"/><a:ext cx="8229600" cy="914400"/></a:xfrm><a:prstGeom prst="rect">'
        "<a:avLst/></a:prstGeom></p:spPr><p:txBody><a:bodyPr/><a:lstStyle/>"
        f'<a:p><a:r><a:rPr lang="en-US"/><a:t>{_x(text)}</a:t></a:r></a:p></p:txBody></p:sp></p:spTree>'
        "</p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>"
    )
    layout = ("rId1", "slideLayout", "../slideLayouts/slideLayout1.xml")
    return _zip(
        [
            (
                "[Content_Types].xml",
                _types(
                    ("/ppt/presentation.xml", "presentationml.presentation.main+xml"),
                    ("/ppt/slides/slide1.xml", "presentationml.slide+xml"),
                    ("/ppt/slideMasters/slideMaster1.xml", "presentationml.slideMaster+xml"),
                    ("/ppt/slideLayouts/slideLayout1.xml", "presentationml.slideLayout+xml"),
                    ("/ppt/theme/theme1.xml", "theme+xml"),
                ),
            ),
            ("_rels/.rels", _rels(("rId1", "officeDocument", "ppt/presentation.xml"))),
            (
                "ppt/presentation.xml",
                f"{_XML}<p:presentation {_NS_P}>"
                '<p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/></p:sldMasterIdLst>'
                '<p:sldIdLst><p:sldId id="256" r:id="rId2"/></p:sldIdLst>'
                '<p:sldSz cx="9144000" cy="6858000"/><p:notesSz cx="6858000" cy="9144000"/></p:presentation>',
            ),
            (
                "ppt/_rels/presentation.xml.rels",
                _rels(
                    ("rId1", "slideMaster", "slideMasters/slideMaster1.xml"),
                    ("rId2", "slide", "slides/slide1.xml"),
                    ("rId3", "theme", "theme/theme1.xml"),
                ),
            ),
            ("ppt/slides/slide1.xml", slide),
            ("ppt/slides/_rels/slide1.xml.rels", _rels(layout)),
            ("ppt/slideMasters/slideMaster1.xml", _MASTER),
            (
                "ppt/slideMasters/_rels/slideMaster1.xml.rels",
                _rels(layout, ("rId2", "theme", "../theme/theme1.xml")),
            ),
            ("ppt/slideLayouts/slideLayout1.xml", _LAYOUT),
            (
                "ppt/slideLayouts/_rels/slideLayout1.xml.rels",
                _rels(("rId1", "slideMaster", "../slideMasters/slideMaster1.xml")),
            ),
            ("ppt/theme/theme1.xml", _THEME),
        ]
    )


def ipynb(text: str) -> bytes:
    """A notebook (nbformat 4.5) with one markdown cell and one code cell holding ``text``; each cell has the ``id``
    4.5 requires (nbformat's validator warns without one, and will refuse)."""
    cell = {"id": "rbt-note", "cell_type": "markdown", "metadata": {}, "source": [text]}
    code: dict[str, object] = {
        "id": "rbt-code",
        "cell_type": "code",
        "metadata": {},
        "source": [f"# {text}"],
        "outputs": [],
        "execution_count": None,
    }
    doc = {"cells": [cell, code], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(doc, indent=1) + "\n").encode()


def csv(text: str) -> bytes:
    return f"name,value\nrbt,{text}\n".encode()


def _member(text: str) -> str:
    """The archive member's name: the token itself where it is a plain name (a listing of the archive, which
    shows only names, then shows the token), else a fixed one."""
    return f"{text}.txt" if re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", text) else "rbt-note.txt"


def zip_archive(text: str) -> bytes:
    return _zip([(_member(text), f"{text}\n")])


def tar_archive(text: str) -> bytes:
    out = io.BytesIO()
    data = f"{text}\n".encode()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        info = tarfile.TarInfo(_member(text))
        info.size, info.mtime = len(data), 978307200
        archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def sqlite(text: str) -> bytes:
    """A SQLite database with one table ``rbt(note)`` holding ``text``."""
    fd, path = tempfile.mkstemp(suffix=".sqlite")
    os.close(fd)
    try:
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE rbt (note TEXT)")
            db.execute("INSERT INTO rbt VALUES (?)", (text,))
        db.close()
        with open(path, "rb") as fh:
            return fh.read()
    finally:
        os.unlink(path)


def _source(comment: str) -> Callable[[str], bytes]:
    def make(text: str) -> bytes:
        return f"{comment} {text}\n".encode()

    return make


@dataclass(frozen=True)
class FileType:
    ext: str  # without the dot
    make: Callable[[str], bytes]
    words: tuple[str, ...] = ()  # words (lower case, whole) that name the type in a description or refusal


REGISTRY: dict[str, FileType] = {}


def register(ext: str, make: Callable[[str], bytes], *words: str) -> None:
    """Add a type (or replace one): its extension, its maker, the words that name it."""
    REGISTRY[ext] = FileType(ext, make, tuple(w.lower() for w in words))


register("xlsx", xlsx, "excel", "workbook", "spreadsheet", "xlsx")
register("pptx", pptx, "powerpoint", "presentation", "slides", "slide deck", "pptx")
register("docx", canary_files.docx, "word document", "docx")
register("ipynb", ipynb, "notebook", "jupyter", "ipynb")
register("csv", csv, "csv")
register("zip", zip_archive, "zip archive", "zip file", "zip", "archive")
register("tar", tar_archive, "tarball", "tar archive", "tar")
register("sqlite", sqlite, "sqlite", "sqlite3")
register("pdf", canary_files.pdf, "pdf")
register("png", canary_files.png, "png")
for _ext, _comment in (("py", "#"), ("js", "//"), ("ts", "//"), ("go", "//"), ("rs", "//"), ("sh", "#")):
    register(_ext, _source(_comment))

_EXT = re.compile(r"\.([A-Za-z0-9]{2,6})\b")


def named_type(text: str) -> str | None:
    """The registered type a text names: an extension it quotes (``.xlsx``, ``'report.xlsx'``, ``\\.ipynb$``),
    else the words of one type (``Excel``, ``notebook``). None if it names none or several different extensions;
    of several types named in words ("supports ZIP, 7Z, TAR"), the one named first (a tool that lists the formats
    it takes takes each of them)."""
    lowered = text[:4000].lower()
    exts = {m.group(1) for m in _EXT.finditer(lowered) if m.group(1) in REGISTRY}
    if len(exts) == 1:
        return exts.pop()
    if exts:
        return None
    first: dict[str, int] = {}
    for t in REGISTRY.values():
        for w in t.words:
            found = re.search(rf"(?<![a-z]){re.escape(w)}(?![a-z])", lowered)
            if found is not None:
                first[t.ext] = min(first.get(t.ext, found.start()), found.start())
    return min(first, key=lambda ext: first[ext]) if first else None
