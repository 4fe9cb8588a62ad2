"""The MIME type a resource listing gives a file, from its name alone (nothing is read to list it).

Why a table and not :mod:`mimetypes`: the standard module reads the system's ``mime.types`` files on first use,
which the kernel sandbox refuses (and which differ between machines); a listing must not depend on either.
"""

from __future__ import annotations

from typing import Final

__all__ = ["mime_of_name"]

_BY_SUFFIX: Final = {
    "md": "text/markdown",
    "markdown": "text/markdown",
    "txt": "text/plain",
    "rst": "text/x-rst",
    "py": "text/x-python",
    "pyi": "text/x-python",
    "js": "text/javascript",
    "mjs": "text/javascript",
    "cjs": "text/javascript",
    "ts": "text/x-typescript",
    "tsx": "text/x-typescript",
    "jsx": "text/javascript",
    "json": "application/json",
    "yaml": "application/yaml",
    "yml": "application/yaml",
    "toml": "application/toml",
    "xml": "application/xml",
    "html": "text/html",
    "htm": "text/html",
    "css": "text/css",
    "csv": "text/csv",
    "sh": "text/x-shellscript",
    "c": "text/x-c",
    "h": "text/x-c",
    "cc": "text/x-c++",
    "cpp": "text/x-c++",
    "hpp": "text/x-c++",
    "rs": "text/x-rust",
    "go": "text/x-go",
    "java": "text/x-java",
    "rb": "text/x-ruby",
    "sql": "application/sql",
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "svg": "image/svg+xml",
    "pdf": "application/pdf",
    "zip": "application/zip",
    "gz": "application/gzip",
    "wasm": "application/wasm",
}


def mime_of_name(name: str) -> str | None:
    """The MIME type of a file named ``name`` by its suffix, or ``None`` when the name says nothing."""
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem:
        return None
    return _BY_SUFFIX.get(suffix.lower())
