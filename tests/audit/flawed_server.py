"""A deliberately flawed MCP filesystem server: one confinement bug per tool, for ``rootbound audit``'s tests.

Raw JSON-RPC over stdio, handshake era only (``server/discover`` gets -32601, so clients fall back to
``initialize``). Roots: the directories on the command line, else the client's roots (asked after
``initialized`` and again on every ``notifications/roots/list_changed``, unless ``--stale``). With
``--ignore-roots`` it never asks and serves everything; with ``--empty-means-all`` an empty roots answer lifts
every restriction. Every tool but ``read_safe``, ``read_echo`` and
``read_sloppy`` has exactly one bug; ``read_echo``'s errors repeat the request and name symlink targets, and must
produce no finding. ``--hang`` makes every call block and ignore SIGTERM. ``exec_command`` must never be called
(it records a call in ``$FLAWED_EXEC_LOG``); ``$FLAWED_CALL_LOG`` records every tool call by name.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import unicodedata
from typing import Any
from urllib.parse import unquote, urlsplit

STALE = "--stale" in sys.argv
IGNORE_ROOTS = "--ignore-roots" in sys.argv
EMPTY_MEANS_ALL = "--empty-means-all" in sys.argv  # an empty roots answer lifts every restriction
BROKEN_LIST = "--broken-list" in sys.argv  # tools/list answers an error
HANG = "--hang" in sys.argv  # every tools/call blocks forever, and SIGTERM is ignored: only SIGKILL ends it
DIRS = [os.path.realpath(a) for a in sys.argv[1:] if not a.startswith("--")]

roots: list[str] = list(DIRS)
roots_pending = False
client_has_roots = False
queued: list[dict[str, Any]] = []
next_id = 0


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def ask_roots() -> None:
    global roots_pending, next_id
    next_id += 1
    roots_pending = True
    send({"jsonrpc": "2.0", "id": f"roots-{next_id}", "method": "roots/list"})


class Denied(Exception):
    pass


def inside(real: str) -> bool:
    if IGNORE_ROOTS or (EMPTY_MEANS_ALL and not roots):
        return True
    return any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)


def absolute(value: str) -> str:
    """Relative paths name the first root (the correct rule; ``read_cwd`` breaks it)."""
    if os.path.isabs(value) or not roots:
        return value
    return os.path.join(roots[0], value)


def safe_path(value: str) -> str:
    """The correct check: strip a file: URI, join to the root, realpath, compare by components."""
    if value.startswith("file://"):
        value = unquote(urlsplit(value).path)
    if "\x00" in value:
        raise Denied("NUL")
    real = os.path.realpath(absolute(value))
    if not inside(real):
        raise Denied("outside")
    return real


def read(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(65536).decode("utf-8", "replace")


# -- one bug each ---------------------------------------------------------------------------------------------


def read_nocheck(v: str) -> str:
    return read(absolute(v))  # no containment check at all


def read_prefix(v: str) -> str:
    real = os.path.realpath(absolute(v))
    if not any(real.startswith(r) for r in roots):  # string prefix, no separator
        raise Denied("outside")
    return read(real)


def read_lexical(v: str) -> str:
    norm = os.path.normpath(absolute(v))  # lexical: never resolves symlinks
    if not inside(norm):
        raise Denied("outside")
    return read(norm)


def read_dotdot(v: str) -> str:
    if ".." not in v:
        return read(safe_path(v))
    if not any(absolute(v).startswith(r + "/") for r in roots):  # raw string: `..` never collapsed
        raise Denied("outside")
    return read(absolute(v))


def read_percent(v: str) -> str:
    safe_path(v)  # checked encoded ...
    return read(absolute(unquote(unquote(v))))  # ... opened decoded


def read_uri(v: str) -> str:
    if not v.startswith("file:"):
        return read(safe_path(v))
    rest = "/" + v[5:].lstrip("/")
    if not any(rest.startswith(r + "/") for r in roots):  # raw prefix on the URI's text
        raise Denied("outside")
    return read(os.path.normpath(unquote(rest)))


def _fold(path: str) -> str:
    parts = [unicodedata.normalize("NFKC", p).casefold().rstrip(". ") for p in path.split("/")]
    return "/".join(parts)


def read_lookalike(v: str) -> str:
    if not inside(os.path.realpath(_fold(absolute(v)))):  # checks the folded name ...
        raise Denied("outside")
    return read(absolute(v))  # ... opens the raw one


def read_backslash(v: str) -> str:
    safe_path(v)  # a backslash is an ordinary character here ...
    return read(absolute(v.replace("\\", "/")))  # ... and a separator here


def read_nul(v: str) -> str:
    if not inside(os.path.realpath(os.path.normpath(absolute(v.replace("\x00", ""))))):
        raise Denied("outside")
    return read(absolute(v.split("\x00")[0]))  # what a C open() sees


def read_tilde(v: str) -> str:
    safe_path(v)  # `~/x` checked as a name inside the root ...
    return read(safe_expand(v))  # ... and expanded afterwards


def safe_expand(v: str) -> str:
    return os.path.expanduser(v) if v.startswith("~") else safe_path(v)


def read_cwd(v: str) -> str:
    safe_path(v)  # checked against the root ...
    return read(v if os.path.isabs(v) else os.path.abspath(v))  # ... resolved against the working directory


def list_lexical(v: str) -> str:
    norm = os.path.normpath(absolute(v))  # lexical check, then listing follows the link
    if not inside(norm):
        raise Denied("outside")
    return "\n".join(sorted(os.listdir(norm)))


def stat_lexical(v: str) -> str:
    norm = os.path.normpath(absolute(v))
    if not inside(norm):
        raise Denied("outside")
    st = os.stat(norm)
    return json.dumps({"size": st.st_size, "mtime": int(st.st_mtime)})


def write_dangling(v: str, content: str) -> str:
    target = absolute(v)
    try:
        real = os.path.realpath(target, strict=True)
        if not inside(real):
            raise Denied("outside")
    except OSError:
        # "not created yet": check the parent and write the unresolved path (follows a dangling link out)
        if not inside(os.path.realpath(os.path.dirname(target))):
            raise Denied("outside") from None
        real = target
    with open(real, "w", encoding="utf-8") as fh:
        fh.write(content)
    return "written"


def read_safe(v: str) -> str:
    return read(safe_path(v))


def read_echo(v: str) -> str:
    full = absolute(v)
    try:
        real = safe_path(v)
    except Denied:
        hint = f" (a link to {os.readlink(full)})" if os.path.islink(full) else ""
        raise Denied(f"access denied: {v!r} resolves outside the roots{hint}; request was {json.dumps(v)}") from None
    return read(real)


READERS = {
    "read_nocheck": read_nocheck,
    "read_prefix": read_prefix,
    "read_lexical": read_lexical,
    "read_dotdot": read_dotdot,
    "read_percent": read_percent,
    "read_uri": read_uri,
    "read_lookalike": read_lookalike,
    "read_backslash": read_backslash,
    "read_nul": read_nul,
    "read_tilde": read_tilde,
    "read_cwd": read_cwd,
    "list_lexical": list_lexical,
    "stat_lexical": stat_lexical,
    "read_safe": read_safe,
    "read_echo": read_echo,
    "read_sloppy": read_safe,
}

PATH_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
TOOLS: list[dict[str, Any]] = [{"name": n, "inputSchema": PATH_SCHEMA} for n in READERS if n != "read_sloppy"]
TOOLS.append({"name": "read_sloppy", "inputSchema": {}})  # learn the parameter from the error
TOOLS.append(
    {
        "name": "write_dangling",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    }
)
TOOLS.append({"name": "exec_command", "inputSchema": PATH_SCHEMA})


def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    calls = os.environ.get("FLAWED_CALL_LOG")
    if calls:
        with open(calls, "a", encoding="utf-8") as fh:
            fh.write(name + "\n")
    if name == "exec_command":
        log = os.environ.get("FLAWED_EXEC_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write("called\n")
        return {"content": [{"type": "text", "text": "no"}], "isError": True}
    value = args.get("path")
    if not isinstance(value, str):
        raise ValueError('missing required parameter "path"')
    if not roots and not IGNORE_ROOTS and not EMPTY_MEANS_ALL:
        return {"content": [{"type": "text", "text": "no roots"}], "isError": True}
    try:
        content = str(args.get("content", ""))
        text = write_dangling(value, content) if name == "write_dangling" else READERS[name](value)
        return {"content": [{"type": "text", "text": text}]}
    except Denied as exc:
        message = str(exc) if name == "read_echo" else "access denied"
        return {"content": [{"type": "text", "text": message}], "isError": True}
    except OSError as exc:
        return {"content": [{"type": "text", "text": f"error {exc.errno}"}], "isError": True}
    except ValueError:
        return {"content": [{"type": "text", "text": "bad path"}], "isError": True}


def handle(msg: dict[str, Any]) -> None:
    global roots, roots_pending, client_has_roots
    method = msg.get("method")
    mid = msg.get("id")
    if method is None and isinstance(mid, str) and mid.startswith("roots-"):
        roots_pending = False
        listed = msg.get("result", {}).get("roots", []) if "result" in msg else []
        if not DIRS:
            roots = [os.path.realpath(unquote(urlsplit(r["uri"]).path)) for r in listed]
        while queued:
            handle(queued.pop(0))
        return
    if method == "initialize":
        client_has_roots = "roots" in (msg.get("params", {}).get("capabilities") or {})
        result = {
            "protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "flawed", "version": "0"},
        }
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    elif method == "notifications/initialized":
        if client_has_roots and not IGNORE_ROOTS:
            ask_roots()
    elif method == "notifications/roots/list_changed":
        if not STALE and not IGNORE_ROOTS:
            ask_roots()
    elif method == "tools/list" and BROKEN_LIST:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32603, "message": "tools are on holiday"}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        if HANG:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(3600)
        if roots_pending:
            queued.append(msg)
            return
        params = msg.get("params") or {}
        try:
            result = call(str(params.get("name")), params.get("arguments") or {})
        except ValueError as exc:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": str(exc)}})
            return
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})


def main() -> None:
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict):
            handle(msg)


if __name__ == "__main__":
    main()
