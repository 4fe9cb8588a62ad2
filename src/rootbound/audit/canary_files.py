"""Canaries of the types servers filter for: a real (minimal, valid) PDF, a ``.docx``, Markdown, JSON and a PNG,
each carrying a location's token where a reader of that type puts it in its answer (the PDF's page text, the
document's paragraph, the PNG's ``tEXt`` chunk). A tool that takes only PDFs then passes its type check and opens
the outside file, so the open is seen (by the kernel) and, when the tool extracts text, the token too.

Every function is pure: bytes in, bytes out, the same bytes for the same text (``--replay`` rebuilds them).
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib

__all__ = ["TYPED", "docx", "json_doc", "markdown", "pdf", "png"]


def png(text: str) -> bytes:
    """A valid 1x1 PNG whose ``tEXt`` chunk holds ``text`` (image tools return it base64-encoded; the judge
    decodes base64)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"tEXt", b"Comment\x00" + text.encode())
        + chunk(b"IDAT", pixels)
        + chunk(b"IEND", b"")
    )


def pdf(text: str) -> bytes:
    """A one-page PDF 1.4 whose page shows ``text`` (ASCII: tokens are hex), with a correct cross-reference
    table, so that strict parsers (pdf.js, pypdf, poppler) open it and extract the text."""
    safe = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    stream = f"BT /F1 12 Tf 72 720 Td ({safe}) Tj ET".encode("ascii", "replace")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    "</Types>"
)
_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="word/document.xml"/></Relationships>'
)


def docx(text: str) -> bytes:
    """A minimal Word document (the three parts a reader needs) with one paragraph holding ``text``."""
    body = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    document = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        f"<w:body><w:p><w:r><w:t>{body}</w:t></w:r></w:p></w:body></w:document>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:  # stored: a base64 answer shows the token
        for name, data in (
            ("[Content_Types].xml", _CONTENT_TYPES),
            ("_rels/.rels", _RELS),
            ("word/document.xml", document),
        ):
            archive.writestr(zipfile.ZipInfo(name, date_time=(2001, 1, 1, 0, 0, 0)), data)
    return out.getvalue()


def markdown(text: str) -> bytes:
    return f"# rbt note\n\n{text}\n".encode()


def json_doc(text: str) -> bytes:
    return (json.dumps({"rbt": text}) + "\n").encode()


# shape -> (file extension, maker): the typed canaries every outside directory (and W) holds
TYPED = {
    "image": ("png", png),
    "pdf": ("pdf", pdf),
    "docx": ("docx", docx),
    "md": ("md", markdown),
    "json": ("json", json_doc),
}
