"""Build the hand-check trap: DIR/ws (the workspace given to the server) and DIR/outside (canaries of each type the
published servers want: .txt .csv .xlsx .ipynb .zip .sqlite, and .pdf when PyMuPDF is importable). Each canary
holds the token TOKEN (prints nothing else); the workbook also in a second sheet's name, "t-TOKEN". openpyxl/fitz
are imported from the Python that runs this."""

from __future__ import annotations

import importlib
import json
import sqlite3
import sys
import zipfile
from pathlib import Path
from typing import Any


def _sheet_name(token: str) -> str:
    """A second sheet named after the token, so a tool that answers only with sheet names (a "meta" answer) shows
    the token if it read the workbook. Excel's rule: at most 31 characters, none of []:*?/\\."""
    name = f"t-{token}"
    if len(name) > 31 or any(c in token for c in "[]:*?/\\"):
        raise SystemExit("TOKEN must fit a sheet name: at most 29 characters, none of []:*?/\\")
    return name


def main() -> int:
    base, token = Path(sys.argv[1]), sys.argv[2]
    ws, out = base / "ws", base / "outside"
    for d in (ws, out):
        d.mkdir(parents=True, exist_ok=True)
    (ws / "inside.txt").write_text("inside file\n")
    (ws / "src").mkdir(exist_ok=True)
    (ws / "src" / "inside.py").write_text("def inside():\n    return 1\n")
    (out / "canary.txt").write_text(f"{token}\n")
    (out / "canary.py").write_text(f"def canary():\n    return '{token}'\n")
    (out / "canary.csv").write_text(f"name,value\n{token},1\n")
    nb = {
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": [token]}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (out / "canary.ipynb").write_text(json.dumps(nb))
    with zipfile.ZipFile(out / "canary.zip", "w") as zf:
        zf.writestr(f"{token}.txt", token)
    (out / "canary.sqlite").unlink(missing_ok=True)
    db = sqlite3.connect(out / "canary.sqlite")
    db.execute("create table t (v text)")
    db.execute("insert into t values (?)", (token,))
    db.commit()
    db.close()
    try:
        openpyxl: Any = importlib.import_module("openpyxl")
    except ImportError:
        pass
    else:
        wb = openpyxl.Workbook()
        wb.active["A1"] = token
        wb.create_sheet(_sheet_name(token))
        wb.save(out / "canary.xlsx")
        wb2 = openpyxl.Workbook()
        wb2.active["A1"] = "inside"
        wb2.save(ws / "inside.xlsx")
    try:
        fitz: Any = importlib.import_module("fitz")
    except ImportError:
        pass
    else:
        doc = fitz.open()
        page = doc.new_page()
        page.insert_text((72, 72), token)
        doc.save(out / "canary.pdf")
        doc2 = fitz.open()
        doc2.new_page().insert_text((72, 72), "inside")
        doc2.save(ws / "inside.pdf")
    return 0


if __name__ == "__main__":
    sys.exit(main())
