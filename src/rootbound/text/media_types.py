"""What a file's first bytes say it is: image and audio MIME types for MCP content, and names for other binaries.

Why: an extension is a claim made by whoever named the file; the magic bytes are what a decoder will see. A model
host given ``image/png`` for a JPEG (or for an executable renamed ``.png``) either fails or guesses, so the type
sent is the sniffed one, and a file that sniffs as nothing known is not sent as media at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["SNIFF_BYTES", "Sniffed", "sniff"]

SNIFF_BYTES: Final = 512
"""How many leading bytes :func:`sniff` looks at."""

MediaKind = Literal["image", "audio", "binary", "text"]


@dataclass(frozen=True)
class Sniffed:
    """``kind`` is ``image``/``audio`` (sendable as MCP media), ``binary`` (known or not) or ``text``."""

    kind: MediaKind
    mime: str
    label: str


def _image(mime: str, label: str) -> Sniffed:
    return Sniffed("image", mime, label)


def _audio(mime: str, label: str) -> Sniffed:
    return Sniffed("audio", mime, label)


def _binary(mime: str, label: str) -> Sniffed:
    return Sniffed("binary", mime, label)


# (offset, magic, result): checked in order; the first match wins.
_MAGIC: Final[tuple[tuple[int, bytes, Sniffed], ...]] = (
    (0, b"\x89PNG\r\n\x1a\n", _image("image/png", "PNG image")),
    (0, b"\xff\xd8\xff", _image("image/jpeg", "JPEG image")),
    (0, b"GIF87a", _image("image/gif", "GIF image")),
    (0, b"GIF89a", _image("image/gif", "GIF image")),
    (0, b"II*\x00", _image("image/tiff", "TIFF image")),
    (0, b"MM\x00*", _image("image/tiff", "TIFF image")),
    (0, b"\x00\x00\x01\x00", _image("image/x-icon", "ICO image")),
    (0, b"ID3", _audio("audio/mpeg", "MP3 audio")),
    (0, b"OggS", _audio("audio/ogg", "Ogg audio")),
    (0, b"fLaC", _audio("audio/flac", "FLAC audio")),
    (0, b"#!AMR", _audio("audio/amr", "AMR audio")),
    (0, b"MThd", _audio("audio/midi", "MIDI audio")),
    (0, b"%PDF-", _binary("application/pdf", "PDF document")),
    (0, b"PK\x03\x04", _binary("application/zip", "ZIP archive (also docx, xlsx, jar, wheel)")),
    (0, b"\x1f\x8b", _binary("application/gzip", "gzip data")),
    (0, b"BZh", _binary("application/x-bzip2", "bzip2 data")),
    (0, b"\xfd7zXZ\x00", _binary("application/x-xz", "xz data")),
    (0, b"(\xb5/\xfd", _binary("application/zstd", "zstd data")),
    (0, b"7z\xbc\xaf'\x1c", _binary("application/x-7z-compressed", "7-Zip archive")),
    (0, b"\x7fELF", _binary("application/x-executable", "ELF executable or library")),
    (0, b"\xca\xfe\xba\xbe", _binary("application/java-vm", "Java class or Mach-O universal binary")),
    (0, b"SQLite format 3\x00", _binary("application/vnd.sqlite3", "SQLite database")),
    (0, b"\x00asm", _binary("application/wasm", "WebAssembly module")),
    (0, b"\x1aE\xdf\xa3", _binary("video/webm", "Matroska/WebM media")),
    (257, b"ustar", _binary("application/x-tar", "tar archive")),
)


def _riff(head: bytes) -> Sniffed | None:
    if head[:4] != b"RIFF" or len(head) < 12:
        return None
    form = head[8:12]
    if form == b"WEBP":
        return _image("image/webp", "WebP image")
    if form == b"WAVE":
        return _audio("audio/wav", "WAV audio")
    if form == b"AVI ":
        return _binary("video/x-msvideo", "AVI video")
    return None


def _iso_media(head: bytes) -> Sniffed | None:
    """ISO base media (``ftyp`` box): AVIF/HEIC images, M4A audio, MP4/QuickTime video."""
    if head[4:8] != b"ftyp" or len(head) < 12:
        return None
    brand = head[8:12]
    if brand in (b"avif", b"avis"):
        return _image("image/avif", "AVIF image")
    if brand in (b"heic", b"heix", b"mif1", b"msf1"):
        return _image("image/heic", "HEIC image")
    if brand in (b"M4A ", b"M4B "):
        return _audio("audio/mp4", "MPEG-4 audio")
    if brand == b"qt  ":
        return _binary("video/quicktime", "QuickTime video")
    return _binary("video/mp4", "MPEG-4 video")


def _short_magic(head: bytes) -> Sniffed | None:
    """Two-byte magics that text can start with: confirmed by the zero bytes their headers carry."""
    if head[:2] == b"BM" and head[6:10] == b"\x00\x00\x00\x00":
        return _image("image/bmp", "BMP image")
    if head[:2] == b"MZ" and b"\x00" in head[2:SNIFF_BYTES]:
        return _binary("application/vnd.microsoft.portable-executable", "Windows executable")
    return None


def _form(head: bytes) -> Sniffed | None:
    if head[:4] == b"FORM" and head[8:12] in (b"AIFF", b"AIFC"):
        return _audio("audio/aiff", "AIFF audio")
    return None


def _mpeg_frame(head: bytes) -> Sniffed | None:
    """An MPEG audio frame header (MP3 without ID3) or an ADTS AAC header: 11 set sync bits."""
    if len(head) < 2 or head[0] != 0xFF or head[1] & 0xE0 != 0xE0:
        return None
    layer = (head[1] >> 1) & 0x3
    if layer == 0:
        return _audio("audio/aac", "AAC audio") if head[1] & 0xF6 == 0xF0 else None
    return _audio("audio/mpeg", "MP3 audio")


def _svg(head: bytes) -> Sniffed | None:
    """SVG is XML text: sent as an image only when the document says so in its first bytes."""
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if start.startswith(b"<svg") or (start.startswith(b"<?xml") and b"<svg" in head):
        return _image("image/svg+xml", "SVG image")
    return None


def sniff(head: bytes) -> Sniffed:
    """The type of a file from its first bytes (:data:`SNIFF_BYTES` are enough; SVG looks at what is given)."""
    for offset, magic, result in _MAGIC:
        if head[offset : offset + len(magic)] == magic:
            return result
    for check in (_riff, _iso_media, _short_magic, _form, _mpeg_frame, _svg):
        found = check(head)
        if found is not None:
            return found
    if b"\x00" in head:
        return _binary("application/octet-stream", "binary data")
    return Sniffed("text", "text/plain", "text")
