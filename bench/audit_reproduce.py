"""Reproduce every finding of a ``rootbound audit --format json`` report by hand: one direct ``tools/call``.

    python bench/audit_reproduce.py REPORT.json [REPORT.json ...] [--timeout S] [--only N] [-v]

For each finding the trap is rebuilt from the report's seed at the report's path (the same names, tokens and
mtimes; the canaries beyond the trap too), the report's server is started as in the finding's mode (args: with
the workspace; roots: without it, with W and the second root as client roots), and the finding's request is sent
through the plain ``mcp`` SDK client. The evidence is then checked here, with none of the audit's judging code:

- answer:    an outside canary's token, an outside listing-only name, or an outside canary's mtime in the result
             (text, structured content, resources, base64 blobs decoded);
- kernel:    this script's own inotify watch on every outside directory saw an open, read, listing or change
             during the call;
- snapshot:  this script's own walk of everything outside the roots (type, link target, size, content hash)
             differs after the call;
- behaviour: (ignores-roots) the server never sent ``roots/list`` and the call reached outside (any of the above);
- hang:      the call timed out while the server held the trap's FIFO open for reading.

A finding is "reproduced" when the witness of its own kind says so. Exit 0 when every finding of every report is
reproduced, 1 when one is not, 64 for a bad report. Counts and classes are printed, never a third party's data.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import ctypes
import ctypes.util
import dataclasses
import hashlib
import json
import logging
import os
import re
import select
import struct
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client
from pydantic import ValidationError

from mcp import Client, MCPDeprecationWarning
from rootbound.audit._sdk import raw_request  # the transport only: nothing of the audit's judging
from rootbound.audit.far_canaries import plant_far, remove_far
from rootbound.audit.filetypes import REGISTRY
from rootbound.audit.git_trap import build_git
from rootbound.audit.session import ServerSpec, substitute
from rootbound.audit.trap import WS, Trap, build_trap, remove

EXIT_USAGE = 64
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
ROOTS_MODES = ("roots", "roots-2026")

# --- an inotify watch of our own (not the audit's kernel_watch) ---------------------------------------------------
_IN_ACCESS, _IN_MODIFY, _IN_OPEN = 0x1, 0x2, 0x20
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_ISDIR, _IN_NONBLOCK = 0x40000000, 0o4000
_MASK = _IN_ACCESS | _IN_MODIFY | _IN_OPEN | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE


class Inotify:
    def __init__(self, directories: list[Path]) -> None:
        self.libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fd = self.libc.inotify_init1(_IN_NONBLOCK)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.dirs: dict[int, Path] = {}
        for d in directories:
            wd = self.libc.inotify_add_watch(self.fd, os.fsencode(d), _MASK)
            if wd >= 0:
                self.dirs[wd] = d

    def drain(self) -> list[tuple[Path, str, int]]:
        events: list[tuple[Path, str, int]] = []
        while select.select([self.fd], [], [], 0)[0]:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            at = 0
            while at + 16 <= len(buf):
                wd, mask, _cookie, size = struct.unpack_from("iIII", buf, at)
                name = buf[at + 16 : at + 16 + size].split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
                at += 16 + size
                if wd in self.dirs:
                    events.append((self.dirs[wd], name, mask))
        return events

    def close(self) -> None:
        os.close(self.fd)


# --- a snapshot of our own ----------------------------------------------------------------------------------------
def walk(roots: list[Path], skip: list[Path]) -> dict[str, tuple[Any, ...]]:
    """Everything under ``roots`` but ``skip``, links never followed: type, link target, size and content hash."""
    out: dict[str, tuple[Any, ...]] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            here = Path(dirpath)
            dirnames[:] = [d for d in dirnames if here / d not in skip]
            for name in [*dirnames, *filenames]:
                p = here / name
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                if os.path.islink(p):
                    out[str(p)] = ("l", os.readlink(p))
                elif os.path.isfile(p) and not p.is_fifo():
                    with open(p, "rb") as fh:
                        out[str(p)] = ("f", st.st_size, hashlib.sha256(fh.read(1 << 20)).hexdigest(), st.st_mode)
                else:
                    out[str(p)] = ("d" if os.path.isdir(p) else "o", st.st_mode)
    return out


# --- what the answer holds ----------------------------------------------------------------------------------------
def answer_text(result: Any) -> str:
    """All the text a result carries, base64 blobs decoded."""
    parts: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "blob" and isinstance(value, str):
                    with contextlib.suppress(ValueError):
                        parts.append(base64.b64decode(value, validate=False).decode("latin-1"))
                visit(value)
        elif isinstance(node, list):
            for item in node:
                visit(item)
        elif isinstance(node, str):
            parts.append(node)
            packed = "".join(node.split())
            if len(packed) >= 16 and len(packed) % 4 == 0 and _BASE64.fullmatch(packed):
                with contextlib.suppress(ValueError):
                    parts.append(base64.b64decode(packed, validate=True).decode("latin-1"))
        elif node is not None:
            parts.append(str(node))

    visit(result)
    return "\n".join(parts)


@dataclasses.dataclass
class Witness:
    answer: list[str] = dataclasses.field(default_factory=list)
    kernel: list[str] = dataclasses.field(default_factory=list)
    snapshot: list[str] = dataclasses.field(default_factory=list)
    roots_requests: int = 0
    hang: bool = False
    timed_out: bool = False
    is_error: bool = False

    def outside(self) -> bool:
        return bool(self.answer or self.kernel or self.snapshot or self.hang)


def _allowed_dirs(trap: Trap, mode: str) -> list[Path]:
    return [trap.workspace, trap.second] if mode in ROOTS_MODES else [trap.workspace]


def _outside_dirs(trap: Trap, allowed: list[Path]) -> list[Path]:
    """Every directory outside the roots the trap planted: the base and its subdirectories, and beyond the trap."""
    dirs: list[Path] = []
    for root in [trap.base, *trap.extra_dirs.values()]:
        for dirpath, dirnames, _ in os.walk(root, followlinks=False):
            here = Path(dirpath)
            dirnames[:] = [d for d in dirnames if here / d not in allowed]
            if here not in allowed:
                dirs.append(here)
    return dirs


def check_answer(trap: Trap, allowed: list[Path], result: Any, is_error: bool, request: str) -> list[str]:
    text = answer_text(result)
    seen: list[str] = []
    inside = {str(p) for p in allowed}
    for canary in trap.canaries.values():
        if any(str(canary.path).startswith(d + os.sep) for d in inside) or canary.location == "hardlink":
            continue
        if canary.token in text and canary.token not in request:
            seen.append(f"token of {canary.location} canary")
        if not is_error:
            for spelling in canary.mtime_spellings():
                if spelling in text and spelling not in request:
                    seen.append(f"mtime of {canary.location} canary")
                    break
    if not any(d == trap.workspace for d in allowed) and not is_error:
        if trap.marker.token in text:
            seen.append("token of W's marker (W no longer a root)")
        if trap.marker.name in text and trap.marker.name not in request:
            seen.append("W's marker listed (W no longer a root)")
    linked = trap.hardlink  # W's hard link shares the inode of an outside file: its token, its mtime
    if linked is not None and linked.token in text and linked.token not in request:
        seen.append("token of the hard-linked inode")
    if linked is not None and not is_error and any(m in text and m not in request for m in linked.mtime_spellings()):
        seen.append("mtime of the hard-linked inode")
    if not is_error:
        for loc, name in trap.entries.items():
            if loc in ("ws", "second") and any(d.name == loc for d in allowed):
                continue
            if name in text and name not in request:
                seen.append(f"listing-only name of {loc}")
    return seen


def _fifo_reader_waiting(trap: Trap) -> bool:
    if trap.fifo is None:
        return False
    try:
        fd = os.open(trap.fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return False
    os.close(fd)
    return True


async def call_once(
    trap: Trap,
    argv: list[str],
    mode: str,
    name: str,
    arguments: dict[str, Any],
    per_call: float,
    errlog: Any,
    withdraw: str = "",
) -> Witness:
    """One server, one call. ``withdraw`` (roots modes): before the call, the client's roots change from W and the
    second root to none (``all``: empty-roots) or to W alone (``second``: stale-roots), announced with
    ``notifications/roots/list_changed`` in the handshake era, as the audit does."""
    allowed = _allowed_dirs(trap, mode)
    witness = Witness()
    asked = anyio.Event()

    async def list_roots(_context: Any) -> Any:
        from mcp_types import ListRootsResult, Root

        witness.roots_requests += 1
        asked.set()
        return ListRootsResult(roots=[Root.model_validate({"uri": d.as_uri(), "name": d.name}) for d in allowed])

    kwargs: dict[str, Any] = {"list_roots_callback": list_roots} if mode in ROOTS_MODES else {}
    env = {**os.environ, "PWD": str(trap.cwd), "TZ": "UTC"}
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(trap.cwd))
    skip = allowed
    outside_roots = [trap.base, *trap.extra_dirs.values()]
    async with Client(
        stdio_client(params, errlog=errlog),
        mode="legacy" if mode == "roots" else "auto",
        read_timeout_seconds=30,
        **kwargs,
    ) as client:
        if mode == "roots":  # a roots-aware server asks right after the handshake: let it
            with anyio.move_on_after(min(per_call, 3.0)):
                await asked.wait()
        with contextlib.suppress(Exception):  # a tools/list the SDK cannot validate is an answer all the same
            await client.list_tools()  # the server has read the roots answer by the time it answers this
        await anyio.sleep(0.2)  # ... and applied it (an async roots handler may still be running)
        if withdraw:
            allowed[:] = [] if withdraw == "all" else [trap.workspace]
            if mode == "roots":
                asked = anyio.Event()
                await client.send_roots_list_changed()
                with anyio.move_on_after(2.0):
                    await asked.wait()
            with contextlib.suppress(Exception):
                await client.list_tools()
            await anyio.sleep(0.2)
        before = walk(outside_roots, skip)
        watch = Inotify(_outside_dirs(trap, allowed))
        started = time.monotonic()
        result: Any = None
        request = json.dumps(arguments)
        try:
            with anyio.fail_after(per_call + 1):
                try:
                    out = await client.call_tool(name, arguments, read_timeout_seconds=per_call)
                    result = out.model_dump(mode="json", by_alias=True)
                except ValidationError:  # the SDK rejects the server's tools/list or result: send it raw
                    call = {"name": name, "arguments": arguments}
                    result = await raw_request(client.session, "tools/call", call, per_call)
            witness.is_error = bool(result.get("isError")) if isinstance(result, dict) else False
        except TimeoutError:
            witness.timed_out = True
        except Exception as exc:  # an error answer is data too (the SDK raises on JSON-RPC errors)
            result = {"error": str(exc)}
            witness.is_error = True
            witness.timed_out = "timed out" in str(exc).lower() or time.monotonic() - started >= per_call
        events = watch.drain()
        watch.close()
        if witness.timed_out:
            witness.hang = _fifo_reader_waiting(trap)
        after = walk(outside_roots, skip)
    witness.kernel = sorted({f"{_what(mask)} {d.name}/{n}" for d, n, mask in events})
    witness.snapshot = sorted(
        f"{'created' if p not in before else 'deleted' if p not in after else 'modified'} {p}"
        for p in set(before) | set(after)
        if before.get(p) != after.get(p)
    )
    witness.answer = check_answer(trap, allowed, result, witness.is_error, request)
    return witness


def _what(mask: int) -> str:
    if mask & (_IN_CREATE | _IN_DELETE | _IN_MODIFY | _IN_MOVED_FROM | _IN_MOVED_TO):
        return "changed"
    if mask & _IN_ACCESS:
        return "listed" if mask & _IN_ISDIR else "read"
    return "opened"


def verdict(finding: dict[str, Any], w: Witness) -> tuple[bool, str]:
    """Whether this script's own witness of the finding's kind agrees."""
    source, kind = str(finding.get("source", "")), str(finding.get("kind", ""))
    if kind == "hang":
        return w.hang, "call blocked with the FIFO held open" if w.hang else "no block on the FIFO"
    if finding.get("class_id") in ("empty-roots", "stale-roots"):
        return bool(w.answer), f"after the withdrawal, answer: {', '.join(w.answer[:2]) or 'nothing'}"
    if source == "behaviour" or finding.get("class_id") == "ignores-roots":
        ok = w.roots_requests == 0 and w.outside()
        return ok, f"roots/list sent {w.roots_requests} time(s); outside: {_said(w)}"
    if source == "kernel":
        return bool(w.kernel), f"inotify: {', '.join(w.kernel[:3]) or 'nothing'}"
    if source == "snapshot" or kind == "write":
        return bool(
            w.snapshot
        ), f"outside changes: {len(w.snapshot)} ({', '.join(c.split()[0] for c in w.snapshot[:3])})"
    linked = [a for a in w.answer if "hard-linked" in a]
    if finding.get("class_id") == "hardlink":
        return bool(linked), f"answer: {', '.join(linked[:2]) or 'nothing'}"
    said = [a for a in w.answer if a not in linked]
    return bool(said), f"answer: {', '.join(said[:3]) or 'nothing'}"


def _said(w: Witness) -> str:
    bits = w.answer[:2] + [f"inotify {k}" for k in w.kernel[:1]] + w.snapshot[:1]
    return ", ".join(bits) or "nothing"


def plant_typed(trap: Trap, base: Path, typed: Any) -> None:
    """The canaries of the types the server's tools asked for (``typedCanaries``: shape -> location -> path), made
    again at their paths with that location's token and mtime: a finding made on a workbook needs the workbook.
    Those the seeded trap has already, and any path not under the trap's base, are left alone."""
    if not isinstance(typed, dict):
        return
    for files in typed.values():
        for loc, where in (files if isinstance(files, dict) else {}).items():
            path = Path(str(where))
            kind = REGISTRY.get(path.suffix.lstrip("."))
            canary = trap.marker if loc == WS else trap.canaries.get(str(loc))
            if kind is None or canary is None or path.exists() or not path.is_relative_to(base):
                continue
            path.write_bytes(kind.make(canary.token))
            os.utime(path, (canary.mtime, canary.mtime))


def reproduce(report_path: Path, timeout: float, only: set[int], verbose: bool = False) -> tuple[int, int]:
    data = json.loads(report_path.read_text(encoding="utf-8"))
    seed, base, command = str(data["seed"]), Path(str(data["trap"])), [str(a) for a in data["command"]]
    findings: list[dict[str, Any]] = list(data.get("findings") or [])
    far = data.get("beyondTrap") if isinstance(data.get("beyondTrap"), dict) else {}
    done = ok = 0
    errlog = open(os.devnull, "w")  # noqa: SIM115 - closed below
    try:
        for number, finding in enumerate(findings, 1):
            if only and number not in only:
                continue
            if os.path.lexists(base):
                raise SystemExit(f"{base} exists: remove it (a kept trap of another run?) and run again")
            trap = build_trap(seed=seed, base=base)
            try:
                if data.get("workspaceKind") == "git":
                    build_git(trap)
                plant_far(
                    trap,
                    server_cwd=Path(far["cwd"]) if "cwd" in far else None,
                    temp_dir=Path(far["tmp"]).parent if "tmp" in far else None,
                    home=Path(far["userhome"]).parent if "userhome" in far else None,
                )
                plant_typed(trap, base, data.get("typedCanaries"))
                mode = str(finding.get("mode", "args"))
                roots = mode in ROOTS_MODES
                argv = substitute(ServerSpec(command=tuple(command)).argv(None if roots else trap.workspace),
                                  None if roots else trap.workspace, None)  # fmt: skip
                params = finding["request"]["params"]
                withdraw = {"empty-roots": "all", "stale-roots": "second"}.get(str(finding.get("class_id")), "")
                w = anyio.run(
                    call_once, trap, argv, mode, params["name"], dict(params["arguments"]), timeout, errlog, withdraw
                )
            finally:
                remove_far(trap)
                remove(trap.base)
            good, why = verdict(finding, w)
            if verbose:
                print(f"    {w}")
            done += 1
            ok += good
            print(
                f"{report_path.stem} #{number:<3} {finding['severity']:<8} {mode:<10} {finding['class_id']:<22} "
                f"{finding['kind']:<6} {finding.get('source', ''):<9} {'REPRODUCED' if good else 'NOT REPRODUCED'}"
                f"  {why}",
                flush=True,
            )
    finally:
        errlog.close()
    return done, ok


def main() -> int:
    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # servers that print banners on stdout: not our concern
    warnings.simplefilter("ignore", MCPDeprecationWarning)  # roots are deprecated in 2026-07-28: tested all the same
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--timeout", type=float, default=10.0, help="per call (the audit's default is 5)")
    parser.add_argument("--only", type=int, action="append", default=[], metavar="N", help="finding number")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every witness")
    args = parser.parse_args()
    total = good = 0
    for path in args.reports:
        try:
            done, ok = reproduce(path, args.timeout, set(args.only), args.verbose)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"{path}: not a --format json audit report ({type(exc).__name__}: {exc})", file=sys.stderr)
            return EXIT_USAGE
        total += done
        good += ok
    print(f"{good} of {total} findings reproduced by a direct tools/call")
    return 0 if good == total else 1


if __name__ == "__main__":
    sys.exit(main())
