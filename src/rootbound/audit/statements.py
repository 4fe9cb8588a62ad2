"""Paths that live inside an SQL statement or a command line: a tool that runs SQL (``query``, ``sql``) or a command
(``command``, ``cmd``) is probed at the path its statement or command names.

Each parameter gets *statement families*, one call shape each (``query (sql=read)``), chosen from what the server
shows: a family is a template with one path in it and the shape of path it needs (an existing file to read, a
directory to list, a new file to write), and the probe catalogue of that shape is rendered into it:

- SQL, DuckDB (or any engine the words do not name): ``SELECT * FROM read_text('P')`` (read),
  ``SELECT * FROM glob('P/*')`` (list), ``COPY (SELECT 'C' AS rbt) TO 'P' (FORMAT csv)`` (write);
- SQL, SQLite (or any engine the words do not name): ``SELECT readfile('P')`` (read: the CLI's fileio function,
  which a server may register), ``VACUUM INTO 'P'`` and ``ATTACH DATABASE 'P' AS rbt_probe`` (write). SQLite lists
  no directory by a statement of its own: for a SQLite tool, list is a gap with that reason (a server without
  ``readfile`` refuses the read family's control: a gap with the server's own words);
- a command line: ``cat P`` (read) and ``ls P`` (list), with the first reader and lister the tool's description
  (or a refusal: "Available commands: ls, cat, pwd") allows. The audit sends only read-only commands from its own
  list (:data:`READERS`, :data:`LISTERS`), never a shell operator; a command tool whose description lists the
  commands it allows is probed without ``--allow-tool`` (a restricted runner: that list is what it claims), any
  other only when ``--allow-tool`` names it. A writer command is never sent (writes through a command line are a
  gap).

A path is quoted the way the text wants (SQL doubles ``'``; a command line is ``shlex``-quoted). The judging is the
audit's own: the differential control (the same statement with W's path) and the probe's window.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

__all__ = [
    "LISTERS",
    "READERS",
    "Family",
    "command_words",
    "family_shape",
    "learn_command",
    "render_text",
    "sql_dialect",
    "sql_families",
    "text_kind",
    "writes",
]

Family = str  # "sql:read", "sql:glob", "sql:copy", "sql:vacuum", "sql:attach", "cmd:<word>"

SQL_NAMES = frozenset({"query", "sql", "statement", "statements", "sql_query", "sqlquery", "sql_statement"})
CMD_NAMES = frozenset({"command", "cmd", "command_line", "commandline", "cmdline"})
_SQL_SAID = re.compile(r"\bsql\b|\bselect\b|duckdb|sqlite|postgres|mysql|\bdatabase\b", re.IGNORECASE)
# read-only commands the audit may send, in the order it prefers them: what it reads, what it lists
READERS = ("cat", "head", "tail", "more", "less", "nl")
LISTERS = ("ls", "dir")
_TEMPLATES = {
    "sql:read": ("file", "SELECT * FROM read_text({p})"),
    "sql:readfile": ("file", "SELECT readfile({p})"),
    "sql:glob": ("dir", "SELECT * FROM glob({d})"),
    "sql:copy": ("new", "COPY (SELECT {c} AS rbt) TO {p} (FORMAT csv)"),
    "sql:vacuum": ("new", "VACUUM INTO {p}"),
    "sql:attach": ("new", "ATTACH DATABASE {p} AS rbt_probe"),
}
SQLITE_GAP = (
    "SQLite lists no directory by a statement of its own (fsdir() is the CLI's extension, a table-valued function):"
    " not probed"
)
# "Available commands: ls, cat, pwd", "allowed commands are [ls, cat]", "Allowed: ls cat"
_LISTED = re.compile(
    r"(?:allowed|available|permitted|supported|whitelisted)\s+(?:commands?|programs?)\s*(?:are|is)?\s*:?\s*"
    r"\[?([A-Za-z0-9_., '\"-]{1,300})",
    re.IGNORECASE,
)


def text_kind(name: str, schema: Any, tool: dict[str, Any]) -> str:
    """``"sql"``, ``"cmd"`` or ``""``: a string parameter that takes an SQL statement (its name says query, sql or
    statement, and its or the tool's words say SQL or a database) or a command line (named command or cmd)."""
    if not isinstance(schema, dict) or schema.get("type") not in ("string", ["string"]) or schema.get("enum"):
        return ""
    low = name.lower()
    if low in CMD_NAMES:
        return "cmd"
    if low in SQL_NAMES:
        words = f"{str(schema.get('description', ''))[:300]}\n{str(tool.get('description', ''))[:600]}"
        if _SQL_SAID.search(words) or _SQL_SAID.search(str(tool.get("name", ""))):
            return "sql"
    return ""


def sql_dialect(tool: dict[str, Any], description: str) -> str:
    """``"duckdb"``, ``"sqlite"`` or ``""`` (not named): from the tool's and the parameter's words."""
    words = f"{tool.get('name', '')}\n{str(tool.get('description', ''))[:2000]}\n{description[:400]}".lower()
    duck, lite = "duckdb" in words, "sqlite" in words
    return "duckdb" if duck and not lite else "sqlite" if lite and not duck else ""


def sql_families(dialect: str) -> tuple[list[Family], str]:
    """The families sent for a dialect, and the gap of the kinds it cannot probe (``""`` when none)."""
    if dialect == "duckdb":
        return ["sql:read", "sql:glob", "sql:copy"], ""
    if dialect == "sqlite":
        return ["sql:readfile", "sql:vacuum", "sql:attach"], SQLITE_GAP
    return ["sql:read", "sql:readfile", "sql:glob", "sql:copy", "sql:vacuum", "sql:attach"], ""


def command_words(text: str) -> tuple[str, str]:
    """(reader, lister) among the audit's read-only commands that ``text`` (a description or a refusal) lists as
    allowed; ``("", "")`` when it lists none. A list that names no reader (or no lister) gives ``"-"`` for it."""
    match = _LISTED.search(text[:4000])
    if match is None:
        return "", ""
    named = re.findall(r"[A-Za-z0-9_.-]+", match.group(1).split("\n")[0])
    reader = next((w for w in named if w in READERS), "-")
    lister = next((w for w in named if w in LISTERS), "-")
    return reader, lister


def cmd_families(tool: dict[str, Any], description: str) -> tuple[list[Family], str]:
    """``cmd:<reader>`` and ``cmd:<lister>`` for a command line (``cat``, ``ls`` unless the words list others)."""
    reader, lister = command_words(f"{str(tool.get('description', ''))[:4000]}\n{description[:400]}")
    reader, lister = reader or READERS[0], lister or LISTERS[0]
    fams = [f"cmd:{w}" for w in (reader, lister) if w != "-"]
    gap = "" if fams else "the commands it allows include no reader or lister the audit sends: not probed"
    return fams, gap


def learn_command(family: Family, errors: list[str]) -> Family | None:
    """A refusal that lists the allowed commands: the reader (or lister) of this family's kind it names."""
    if not family.startswith("cmd:"):
        return None
    reading = family[4:] in READERS
    for error in errors:
        reader, lister = command_words(error)
        word = reader if reading else lister
        if word and word != "-" and f"cmd:{word}" != family:
            return f"cmd:{word}"
    return None


def family_shape(family: Family) -> str:
    """The shape of path a family needs: ``file`` (read), ``dir`` (list) or ``new`` (write)."""
    if family.startswith("cmd:"):
        return "file" if family[4:] in READERS else "dir"
    return _TEMPLATES[family][0]


def writes(family: Family) -> bool:
    return family_shape(family) == "new"


def _sql(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def render_text(family: Family, path: Any, content: str) -> str:
    """The statement or command of ``family`` naming ``path`` (a spelling of any class); ``content``'s first line
    is what a write writes."""
    where = str(path)
    if family.startswith("cmd:"):
        return f"{family[4:]} {shlex.quote(where)}"
    line = (content.splitlines() or ["rbt-written"])[0][:200] or "rbt-written"
    directory = where.rstrip("/") or "/"
    glob = f"{directory}/*" if directory != "/" else "/*"
    return _TEMPLATES[family][1].format(p=_sql(where), d=_sql(glob), c=_sql(line))
