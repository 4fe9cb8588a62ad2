"""A deliberately flawed MCP filesystem server: one confinement bug per tool, for ``rootbound audit``'s tests.

Raw JSON-RPC over stdio, handshake era only (``server/discover`` gets -32601, so clients fall back to
``initialize``). Roots: the directories on the command line, else the client's roots (asked after
``initialized`` and again on every ``notifications/roots/list_changed``, unless ``--stale``). With
``--ignore-roots`` it never asks and serves everything; with ``--empty-means-all`` an empty roots answer lifts
every restriction; with ``--slow-roots`` it asks 1.5 s late. Every tool but ``read_safe``, ``read_echo``,
``read_sloppy``, ``search_glob`` and ``extract_text`` has exactly one bug; ``read_echo``'s errors repeat the request
and name symlink targets, and must produce no finding. Tools beyond one ``path``: ``read_nested`` (``params.path``),
``read_batch`` (``files[].path``), ``read_either`` (``path`` or ``paths``, never both), ``copy_file`` (source and
destination), ``edit_text`` (old and new text), ``write_trimmed`` (server-filesystem 2026.8.31's trailing-character
write); ``--only-git`` lists just ``repo_log``, a repository tool. ``--root-dir`` without a value exits (a dangling
flag). ``--hang`` makes every call block and ignore SIGTERM; ``--tools=a,b`` lists only those tools.
``exec_command`` must never be called (it records a call in ``$FLAWED_EXEC_LOG``); ``$FLAWED_CALL_LOG`` records
every tool call by name.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import unicodedata
from typing import Any
from urllib.parse import unquote, urlsplit

STALE = "--stale" in sys.argv
IGNORE_ROOTS = "--ignore-roots" in sys.argv
EMPTY_MEANS_ALL = "--empty-means-all" in sys.argv  # an empty roots answer lifts every restriction
BROKEN_LIST = "--broken-list" in sys.argv  # tools/list answers an error
HANG = "--hang" in sys.argv  # every tools/call blocks forever, and SIGTERM is ignored: only SIGKILL ends it
SLOW_ROOTS = "--slow-roots" in sys.argv  # asks for roots 1.5 s after `initialized`; calls before then fail
ONLY_GIT = "--only-git" in sys.argv  # list only repo_log (a repository tool with a prefix check)
if sys.argv[-1] == "--root-dir":
    sys.exit("flawed: --root-dir needs a value")  # what a dangling `--root-dir {workspace}` does to a real server
DIRS = [os.path.realpath(a) for a in sys.argv[1:] if not a.startswith("--")]

roots: list[str] = list(DIRS)
roots_pending = False
client_has_roots = False
queued: list[dict[str, Any]] = []
next_id = 0


_SEND = threading.Lock()


def send(message: dict[str, Any]) -> None:
    with _SEND:
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


def read_nested(v: str) -> str:
    return read(absolute(v))  # params.path: no check at all


def read_batch(v: str) -> str:
    return read_prefix(v)  # files[].path: a string-prefix check


def write_trimmed(v: str, content: str) -> str:
    if not inside(os.path.realpath(absolute(v.strip().strip("\"'")))):  # checks the trimmed name ...
        raise Denied("outside")
    with open(absolute(v), "w", encoding="utf-8") as fh:  # ... creates the raw one (server-filesystem 2026.8.31)
        fh.write(content)
    return "written"


def copy_file(source: str, destination: str) -> str:
    data = read(safe_path(source))  # the source is checked ...
    with open(absolute(destination), "w", encoding="utf-8") as fh:  # ... the destination is not
        fh.write(data)
    return "copied"


def edit_text(path: str, old: str, new: str) -> str:
    norm = os.path.normpath(absolute(path))  # lexical check: a leaf link is followed by the write
    if not inside(norm):
        raise Denied("outside")
    if old == new:
        raise ValueError("old_text and new_text are the same: nothing to edit")
    text = read(norm)
    if old not in text:
        raise ValueError("old_text not found")
    with open(norm, "w", encoding="utf-8") as fh:
        fh.write(text.replace(old, new, 1))
    return "edited"


def search_glob(path: str, pattern: str) -> str:
    if "/" in pattern or (not any(ch in pattern for ch in "*?[") and pattern != "rbt"):
        raise ValueError("file_pattern must be a glob like *.txt, not a path")
    import fnmatch

    base = safe_path(path)
    return "\n".join(n for n in sorted(os.listdir(base)) if fnmatch.fnmatch(n, pattern) or pattern in n)


def repo_log(v: str) -> str:
    import subprocess

    real = os.path.realpath(absolute(v))
    if not any(real.startswith(r) for r in roots):  # a string-prefix check: W-evil is "inside"
        raise Denied("outside")
    done = subprocess.run(["git", "-C", real, "log", "--format=%s"], capture_output=True, text=True, timeout=10)
    if done.returncode:
        raise Denied("not a repository")
    return done.stdout


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
_S = {"type": "string"}
TOOLS += [
    {
        "name": "read_nested",
        "inputSchema": {
            "type": "object",
            "properties": {"params": {"type": "object", "properties": {"path": _S}, "required": ["path"]}},
            "required": ["params"],
        },
    },
    {
        "name": "read_batch",
        "inputSchema": {
            "type": "object",
            "properties": {
                "files": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"path": _S, "encoding": {"enum": ["utf-8"]}},
                        "required": ["path", "encoding"],
                    },
                }
            },
            "required": ["files"],
        },
    },
    {
        "name": "read_either",  # path or paths, never both (the server says so); the paths branch is unchecked
        "inputSchema": {"type": "object", "properties": {"path": _S, "paths": {"type": "array", "items": _S}}},
    },
    {
        "name": "write_trimmed",
        "inputSchema": {"type": "object", "properties": {"path": _S, "content": _S}, "required": ["path", "content"]},
    },
    {
        "name": "copy_file",
        "inputSchema": {
            "type": "object",
            "properties": {"source": _S, "destination": _S},
            "required": ["source", "destination"],
        },
    },
    {
        "name": "edit_text",
        "inputSchema": {
            "type": "object",
            "properties": {"path": _S, "old_text": _S, "new_text": _S},
            "required": ["path", "old_text", "new_text"],
        },
    },
    {
        "name": "search_glob",  # correct; file_pattern is a glob, and a path there is refused
        "inputSchema": {
            "type": "object",
            "properties": {"path": _S, "file_pattern": _S},
            "required": ["path", "file_pattern"],
        },
    },
    {
        "name": "extract_text",  # a reader whose name has a write verb: classified by what it does
        "inputSchema": PATH_SCHEMA,
    },
]
REPO_TOOL = {
    "name": "repo_log",
    "inputSchema": {"type": "object", "properties": {"repo_path": _S}, "required": ["repo_path"]},
}
if ONLY_GIT:
    TOOLS = [REPO_TOOL]
ONLY = next((a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--tools=")), None)
if ONLY:  # --tools=a,b: list only these (a small server keeps a test quick)
    TOOLS = [t for t in TOOLS if t["name"] in ONLY]


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
    if not roots and not IGNORE_ROOTS and not EMPTY_MEANS_ALL:
        return {"content": [{"type": "text", "text": "no roots"}], "isError": True}
    try:
        special = _special(name, args)
        if special is not None:
            return {"content": [{"type": "text", "text": special}]}
    except Denied:
        return {"content": [{"type": "text", "text": "access denied"}], "isError": True}
    except OSError as exc:
        return {"content": [{"type": "text", "text": f"error {exc.errno}"}], "isError": True}
    except ValueError as exc:
        return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
    value = args.get("path")
    if not isinstance(value, str):
        raise ValueError('missing required parameter "path"')
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


def _special(name: str, args: dict[str, Any]) -> str | None:
    """The tools whose arguments are not one ``path`` (None for the others)."""
    if name == "read_nested":
        return read_nested(str((args.get("params") or {}).get("path", "")))
    if name == "read_batch":
        files = args.get("files") or []
        if not files or files[0].get("encoding") != "utf-8":
            raise ValueError("files[].encoding must be utf-8")
        return "\n".join(read_batch(str(f.get("path", ""))) for f in files)
    if name == "read_either":
        if ("path" in args) == ("paths" in args):
            raise ValueError("give exactly one of path and paths: they are mutually exclusive")
        if "path" in args:
            return read_safe(str(args["path"]))
        return "\n".join(read(absolute(str(p))) for p in args["paths"])  # no check on this branch
    if name == "write_trimmed":
        return write_trimmed(str(args.get("path", "")), str(args.get("content", "")))
    if name == "copy_file":
        return copy_file(str(args.get("source", "")), str(args.get("destination", "")))
    if name == "edit_text":
        return edit_text(str(args.get("path", "")), str(args.get("old_text", "")), str(args.get("new_text", "")))
    if name == "search_glob":
        return search_glob(str(args.get("path", "")), str(args.get("file_pattern", "")))
    if name == "extract_text":
        return read_safe(str(args.get("path", "")))
    if name == "repo_log":
        return repo_log(str(args.get("repo_path", "")))
    return None


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
            if SLOW_ROOTS:
                threading.Timer(1.5, ask_roots).start()  # calls that come before then find no roots
            else:
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
