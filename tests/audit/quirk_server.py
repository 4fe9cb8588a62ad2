"""Small stdio MCP servers that reproduce what issue 34 saw in published servers, one ``--case`` each.

Raw JSON-RPC, handshake era, the workspace from the command line (the directories after the flags). Each case is
the smallest server that showed one defect of the audit: a refusal that quotes a tool name, a second path
parameter that must be a directory, parameter names that look like paths and are not (or the reverse), ``$ref``'d
enums and arrays of objects, an editor that only edits existing files, a listing that fails on W's own links, a
read-only tool that runs a shell, a read that blocks on a FIFO, a server that fails to start with several error
lines, a tool that widens the server's own bounds, a reader that answers only metadata, a converter that makes a
``file:`` URI's path under its cwd (``uri-tree``; ``--foreign``: and a file of its own in that tree).
``$QUIRK_CALL_LOG`` records every tool called by name; ``$QUIRK_ENV_LOG``, at each start, how the audit asked the
server's framework to draw its error log (``$FASTMCP_ENABLE_RICH_TRACEBACKS``). With ``--fixed`` the case's escape
is closed (a clean server must get exit 0).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

CASE = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--case=")), "")
FIXED = "--fixed" in sys.argv
ROOTS = [os.path.realpath(a) for a in sys.argv[1:] if not a.startswith("--")]
_S = {"type": "string"}


class Refused(Exception):
    pass


def inside(path: str) -> bool:
    real = os.path.realpath(path)
    return any(real == r or real.startswith(r + "/") for r in ROOTS)


def checked(path: str) -> str:
    """The correct check: realpath, compared by components."""
    full = path if os.path.isabs(path) else os.path.join(ROOTS[0], path)
    if not inside(full):
        raise Refused("access denied: outside the allowed directories")
    return os.path.realpath(full)


def read(path: str, *, block: bool = False) -> str:
    fd = os.open(path, os.O_RDONLY if block else os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(65536).decode("utf-8", "replace")


def tool(name: str, props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "required": list(props) if required is None else required,
    }
    return {"name": name, "inputSchema": schema, **extra}


TOOLS: list[dict[str, Any]] = []
_DOCS: list[str] = []  # doc-ids: the paths open_doc checked, by id
if CASE == "refuse-hint":  # issue 34 item 1: the refusal quotes a name that looks like a parameter
    TOOLS = [tool("read_file", {"path": _S})]
elif CASE == "sibling":  # item 2: path plus a working directory that must be a directory inside the roots
    TOOLS = [tool("read_in", {"path": _S, "workingDirectory": _S})]
elif CASE == "repo-file":  # item 2 again: a repository directory named plain ``path`` beside ``filePath``
    TOOLS = [
        tool(
            "blame",
            {
                "path": {"type": "string", "description": "The repository (default: the session's directory)."},
                "filePath": {"type": "string", "description": "The file, relative to the repository."},
            },
            ["filePath"],
        )
    ]
elif CASE == "read-touches":  # a reader by name and by its control that rewrites what it reads outside the roots
    TOOLS = [tool("read_doc", {"path": _S})]
elif CASE == "allow-flag":  # a reader with a boolean named allow*: not a tool that widens the server's bounds
    TOOLS = [tool("read_file", {"path": _S, "allowEmpty": {"type": "boolean"}}, ["path"])]
elif CASE == "names":  # item 7: dst is a path; fileType, file_hash, task_id_to_resume and an enum location are not
    TOOLS = [
        tool("move_item", {"src": _S, "dst": _S}),
        tool(
            "read_typed",
            {
                "path": _S,
                "fileType": _S,
                "file_hash": _S,
                "task_id_to_resume": _S,
                "location": {"type": "string", "enum": ["local", "remote"]},
            },
        ),
        tool("get_time", {}),  # no parameter at all: not a path tool (and it fails when called)
        tool("clear_cache", {}),  # a writer by name without parameters: not a gap either
    ]
elif CASE == "ref-enum":  # item 8: a $ref'd enum and a required array of $ref'd objects
    TOOLS = [
        {
            "name": "read_mode",
            "inputSchema": {
                "type": "object",
                "$defs": {
                    "Mode": {"type": "string", "enum": ["text", "binary"]},
                    "Opt": {"type": "object", "properties": {"name": _S}, "required": ["name"]},
                },
                "properties": {
                    "path": _S,
                    "mode": {"$ref": "#/$defs/Mode"},
                    "options": {"type": "array", "items": {"$ref": "#/$defs/Opt"}, "minItems": 1},
                },
                "required": ["path", "mode", "options"],
            },
        }
    ]
elif CASE == "edit-existing":  # item 8: an editor that edits existing files unchecked, creates new ones checked
    TOOLS = [tool("edit_note", {"path": _S, "old_text": _S, "new_text": _S})]
elif CASE == "dangling-list":  # item 5: a listing that fails on a dangling link and refuses outward links
    TOOLS = [tool("list_tree", {"path": _S})]
elif CASE == "readonly-shell":  # item 8: read-only by annotation, runs a shell; git tools that reach the network
    TOOLS = [
        tool(
            "inspect",
            {"command": _S, "path": _S},
            description="Runs a shell command in the given directory (read-only commands only).",
            annotations={"readOnlyHint": True},
        ),
        tool("git_clone", {"repo_path": _S, "source": _S}),
        tool("git_pull", {"repo_path": _S}),
        tool("git_remote_add", {"repo_path": _S, "name": _S, "address": _S}),
        tool("read_file", {"path": _S}),
    ]
elif CASE == "uri-tree":  # no bounds; pathlib takes file:///a/b for <cwd>/file:/a/b and makes its parents there
    TOOLS = [tool("convert", {"save_path": {"type": "string", "description": "Where to save the Markdown."}})]
elif CASE == "doc-ids":  # open_doc(path) checks the path and answers an opaque id; read_doc(doc_id) reads it
    TOOLS = [
        tool("open_doc", {"path": {"type": "string", "description": "The document to open."}}),
        tool("read_doc", {"doc_id": {"type": "string", "description": "An id that open_doc returned."}}),
    ]
elif CASE == "fifo":  # a correct reader that opens without O_NONBLOCK: a FIFO blocks it
    TOOLS = [tool("read_file", {"path": _S})]
elif CASE == "grants":  # item 3: the roots plus directories it always allows ($QUIRK_GRANTS, colon-separated)
    ROOTS += [os.path.realpath(d) for d in os.environ.get("QUIRK_GRANTS", "").split(":") if d]
    TOOLS = [tool("read_file", {"path": _S})]
elif CASE == "pdf-info":  # item 4: PDFs only, answers metadata no canary carries; a lexical check (follows links)
    TOOLS = [tool("pdf_info", {"path": _S})]
elif CASE == "widen":  # item 6: a tool that sets the server's own allowed directories, unchecked
    TOOLS = [
        tool("configure", {"allowed_roots": {"type": "array", "items": _S}}),
        tool("set_working_dir", {"path": _S}),
        tool("read_file", {"path": _S}),
    ]
elif CASE == "hidden-param":  # item 4: a path behind a name that says otherwise; answers only a word count
    TOOLS = [tool("get_summary", {"source_text": _S, "style": {"type": "string", "enum": ["short", "long"]}})]
elif CASE == "pathless":  # no tool takes a path (a clock, a writer by name without parameters)
    TOOLS = [tool("get_time", {"timezone": _S}), tool("clear_cache", {})]
elif CASE == "path-check":  # metadata only: names where an optional path resolves; a lexical check
    TOOLS = [tool("check_path", {"path": {"anyOf": [_S, {"type": "null"}], "description": "A path to check."}}, [])]
elif CASE == "edit-optional":  # an editor whose edits are optional (nullable), with old/new strings instead
    _EDIT = {"type": "object", "properties": {"old_text": {"anyOf": [_S, {"type": "null"}]}, "new_text": _S}}
    TOOLS = [
        tool(
            "edit_text",
            {
                "path": _S,
                "edits": {"anyOf": [{"type": "array", "items": _EDIT, "minItems": 1}, {"type": "null"}]},
                "old_string": {"anyOf": [_S, {"type": "null"}]},
                "new_string": {"anyOf": [_S, {"type": "null"}]},
            },
            ["path"],
        )
    ]
elif CASE == "start-errors":  # item 8: several error lines on stderr, the last one says why
    sys.stderr.write("Error: a first, unimportant warning\nloading...\nRuntimeError: the real reason it stopped\n")
    sys.exit(1)


def call(name: str, args: dict[str, Any]) -> str:
    log = os.environ.get("QUIRK_CALL_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(name + "\n")
    if CASE == "refuse-hint":
        raise Refused("Error: not a file. Call 'set_working_dir' first.")
    if name == "read_in":
        wd = str(args["workingDirectory"])
        if not os.path.isdir(wd) or not inside(wd):
            raise Refused("workingDirectory must be a directory inside the allowed directories")
        target = os.path.join(wd, str(args["path"]))
        return read(checked(target) if FIXED else target)  # the bug: the joined path is not checked
    if name == "blame":
        if not args.get("path"):
            raise Refused("No session working directory set. Please specify a 'path'.")
        repo = str(args["path"])
        if not os.path.isdir(repo):
            raise Refused(f"Working directory is not a directory: {repo}")
        repo = checked(repo)
        target = os.path.join(repo, str(args["filePath"]))
        target = checked(target) if FIXED else target  # the bug: the file is not checked, only the repository
        if not os.path.isfile(target):
            raise Refused(f"not a file: {args['filePath']}")
        return read(target)
    if name == "read_file" and CASE == "allow-flag":
        path = checked(str(args["path"])) if FIXED else str(args["path"])  # the bug: no check at all
        text = read(path)
        if not text and not args.get("allowEmpty"):
            raise Refused("the file is empty (set allowEmpty)")
        return text
    if name == "read_doc":
        path = checked(str(args["path"])) if FIXED else str(args["path"])  # the bug: no check at all
        text = read(path)
        if not inside(path):
            with open(path, "w", encoding="utf-8") as fh:  # "refreshes its index entry": a write outside
                fh.write(text)
        return text
    if name == "open_doc":
        path = checked(str(args["path"]))
        read(path)  # parsed once at open, as a document server does
        _DOCS.append(path)
        return f"doc-{len(_DOCS)}"
    if name == "read_doc":
        doc = str(args["doc_id"])
        if not doc.startswith("doc-") or not doc[4:].isdigit() or not 0 < int(doc[4:]) <= len(_DOCS):
            raise Refused("unknown document id (open_doc returns one)")
        return read(_DOCS[int(doc[4:]) - 1])
    if name == "convert":  # as pymupdf4llm-mcp's save_path: Path(p).expanduser().resolve(), parents made
        out = Path(str(args["save_path"])).expanduser().resolve()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("converted\n", encoding="utf-8")
        if "--foreign" in sys.argv and str(args["save_path"]).startswith("file:"):  # its own file in that tree
            (Path.cwd() / "file:" / "server-notes.txt").write_text("kept\n", encoding="utf-8")
        return f"saved {out.name}"
    if name == "move_item":
        src, dst = checked(str(args["src"])), str(args["dst"])
        if FIXED:
            dst = checked(os.path.join(os.path.dirname(dst), "")) + "/" + os.path.basename(dst)
        os.rename(src, dst)  # the bug: the destination is not checked
        return "moved"
    if name == "read_typed":
        for key in ("fileType", "file_hash", "task_id_to_resume"):
            if "/" in str(args.get(key, "/")):
                raise Refused(f"{key} is not a path")
        if args.get("location") not in ("local", "remote"):
            raise Refused("location must be local or remote")
        return read(checked(str(args["path"])))
    if name == "get_time":
        if CASE == "pathless":
            return "2001-01-01T00:00:00Z"
        raise Refused("no clock configured")
    if name == "clear_cache":
        return "cleared"
    if name == "read_mode":
        opts = args.get("options")
        if args.get("mode") not in ("text", "binary"):
            raise Refused("mode must be text or binary")
        if not isinstance(opts, list) or not opts or not isinstance(opts[0], dict) or "name" not in opts[0]:
            raise Refused("options needs at least one {name}")
        path = str(args["path"])
        return read(checked(path) if FIXED else path)
    if name == "edit_note":
        path = str(args["path"])
        existing = os.path.lexists(path) and not os.path.islink(path)
        real = path if existing and not FIXED else checked(path)  # the bug: an existing file is not checked
        if os.path.exists(real):
            text = read(real).replace(str(args["old_text"]), str(args["new_text"]), 1)
        else:
            text = str(args["new_text"])
        with open(real, "w", encoding="utf-8") as fh:
            fh.write(text)
        return "edited"
    if name == "check_path":
        given = args.get("path")
        if not given:
            return f"roots: {' '.join(ROOTS)}"
        full = os.path.normpath(str(given) if os.path.isabs(str(given)) else os.path.join(ROOTS[0], str(given)))
        if FIXED:
            full = checked(full)
        elif not any(full == r or full.startswith(r + "/") for r in ROOTS):
            return "path: not served (outside the roots)"  # lexical: a link inside the root is resolved below
        return f"path: {os.path.realpath(full)} is served"
    if name == "edit_text":
        edits = args.get("edits")
        if isinstance(edits, list) and edits and isinstance(edits[0], dict) and edits[0].get("old_text"):
            old, new = str(edits[0]["old_text"]), str(edits[0].get("new_text", ""))
        elif args.get("old_string"):
            old, new = str(args["old_string"]), str(args.get("new_string") or "")
        else:
            raise Refused("argument 'edits' must be a list of edits, or send old_string and new_string")
        path = str(args["path"])
        real = checked(path) if FIXED else path  # the bug: the path is not checked at all
        text = read(real)
        if old not in text:
            raise Refused("old text not found")
        with open(real, "w", encoding="utf-8") as fh:
            fh.write(text.replace(old, new, 1))
        return "edited"
    if name == "list_tree":
        top = str(args["path"])
        top = checked(top) if FIXED else top  # the bug: no check on the directory listed
        names: list[str] = []
        for here, dirs, files in os.walk(top):
            for entry in dirs + files:
                full = os.path.join(here, entry)
                if os.path.islink(full):
                    if not os.path.exists(full):
                        raise Refused(f"broken link: {entry}")
                    if not inside(os.path.realpath(full)) and inside(top):
                        raise Refused("refusing a directory with links that leave it")
                names.append(os.path.relpath(full, top))
        return "\n".join(sorted(names))
    if name == "get_summary":
        source = str(args["source_text"])
        if os.path.isabs(source) and os.path.exists(source):  # the bug: a path, read unchecked
            with open(checked(source) if FIXED else source, encoding="utf-8", errors="replace") as fh:
                return f"{len(fh.read().split())} word(s)"
        return f"{len(source.split())} word(s)"
    if name == "configure":
        ROOTS[:] = [os.path.realpath(str(d)) for d in args.get("allowed_roots") or []][:1] if not FIXED else ROOTS
        return "configured"
    if name == "set_working_dir":
        if FIXED:
            checked(str(args["path"]))
        else:
            ROOTS.append(os.path.realpath(str(args["path"])))
        return "ok"
    if name == "pdf_info":
        path = str(args["path"])
        if not path.endswith(".pdf"):
            raise Refused("only PDF files are supported")
        full = os.path.normpath(path if os.path.isabs(path) else os.path.join(ROOTS[0], path))
        if not FIXED and not any(full == r or full.startswith(r + "/") for r in ROOTS):
            raise Refused("access denied")  # lexical: a link inside the root is followed by the open below
        with open(checked(full) if FIXED else full, "rb") as fh:
            data = fh.read()
        return f"PDF {data[:8].decode('latin-1')!r}, {data.count(b'/Type /Page ')} page(s)"
    if name in ("read_file", "inspect", "git_clone", "git_pull", "git_remote_add"):
        return read(checked(str(args.get("path") or args.get("repo_path"))), block=CASE == "fifo")
    raise Refused(f"unknown tool {name}")


def respond(msg: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to one JSON-RPC message (None for notifications and responses)."""
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        result = {
            "protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": f"quirk-{CASE}", "version": "0"},
        }
        return {"jsonrpc": "2.0", "id": mid, "result": result}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}}
    if method == "tools/call":
        params = msg.get("params") or {}
        try:
            if not ROOTS and "--any-root" not in sys.argv:
                raise Refused("no directory given")
            text, error = call(str(params.get("name")), params.get("arguments") or {}), False
        except (Refused, OSError, KeyError, TypeError, ValueError) as exc:
            text, error = f"{type(exc).__name__}: {exc}" if not isinstance(exc, Refused) else str(exc), True
        return {"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}], "isError": error}}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": mid, "result": {}}
    if mid is not None and method is not None:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}}
    return None


def serve_http(port: int) -> None:
    """Streamable HTTP with plain JSON answers; ``server/discover`` (2026-07-28) gets an HTTP 500, as some
    servers answer a method they do not know."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                msg = json.loads(body)
            except ValueError:
                msg = None
            if not isinstance(msg, dict) or msg.get("method") == "server/discover":
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            answer = respond(msg)
            if answer is None:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_DELETE(self) -> None:
            self.do_GET()

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main() -> None:
    env_log = os.environ.get("QUIRK_ENV_LOG")
    if env_log:
        with open(env_log, "a", encoding="utf-8") as fh:
            fh.write(os.environ.get("FASTMCP_ENABLE_RICH_TRACEBACKS", "unset") + "\n")
    port = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--http=")), None)
    if port is not None:
        serve_http(int(port))
        return
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict):
            answer = respond(msg)
            if answer is not None:
                sys.stdout.write(json.dumps(answer) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
