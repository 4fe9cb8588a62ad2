"""``rootbound audit --replay REPORT.json N``: rebuild the trap a report's finding needs and send its request again.

The trap is rebuilt at the report's own path from the report's seed (``trap.build_trap(seed=...)``: the same names,
tokens and mtimes), so the request's paths are valid again; a trap kept with ``--keep-trap`` is used as it is.
The server is started as in the finding's mode, the one ``tools/call`` is sent, and the answer is judged again:
exit 1 when the evidence is reproduced (a hang: the call blocked while the server held the FIFO), 0 when it is not,
2 when the call timed out without evidence (inconclusive), 64 for a bad report or finding number.

A report is data from elsewhere: the server command inside it is run only with ``--use-report-command`` (else it
is shown and ``-- CMD`` asked for), and an existing path it names as the trap is used only when it is a trap this
audit made from the report's seed (W's marker file holds the seed's token); anything else is refused.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from rootbound.audit.far_canaries import plant_far, remove_far
from rootbound.audit.filetypes import REGISTRY
from rootbound.audit.git_trap import build_git
from rootbound.audit.judge import judge, kernel_evidence, result_text
from rootbound.audit.kernel_watch import watch_trap
from rootbound.audit.sandbox import sandbox_support, status_line
from rootbound.audit.server_output import StderrSink
from rootbound.audit.session import Connect, CountingProvider, SandboxPlan, ServerSpec, StartFailed, open_peer
from rootbound.audit.shown import shown
from rootbound.audit.trap import Canary, Snapshot, Trap, build_trap, remove

__all__ = ["replay"]

EXIT_USAGE = 64


def _fail(message: str) -> int:
    print(f"rootbound audit --replay: {message}", file=sys.stderr)
    return EXIT_USAGE


def _rebased(trap: Trap, base: Path) -> Trap:
    """The same trap (tokens, names, mtimes) described at ``base``: for judging a kept trap."""

    def move(path: Path) -> Path:
        return base / path.relative_to(trap.base)

    canaries = {loc: dataclasses.replace(c, path=move(c.path)) for loc, c in trap.canaries.items()}
    hard = dataclasses.replace(trap.hardlink, path=move(trap.hardlink.path)) if trap.hardlink else None
    marker: Canary = dataclasses.replace(trap.marker, path=move(trap.marker.path))
    return dataclasses.replace(
        trap,
        base=base,
        workspace=move(trap.workspace),
        second=move(trap.second),
        home=move(trap.home),
        cwd=move(trap.cwd),
        marker=marker,
        canaries=canaries,
        hardlink=hard,
        typed={shape: {loc: move(p) for loc, p in files.items()} for shape, files in trap.typed.items()},
        fifo=move(trap.fifo) if trap.fifo is not None else None,
        scratch=move(trap.scratch) if trap.scratch is not None else None,
    )


_MARKER_BYTES = 4096  # W's marker is one short line: reading more proves nothing


def _made_by_us(trap: Trap) -> bool:
    """Whether the existing trap path holds the seed's trap: a real directory (not a link) whose W holds the
    marker file with the seed's token. Read without following links, bounded: the directory is not ours yet."""
    if not (os.path.isdir(trap.base) and not os.path.islink(trap.base)):
        return False
    try:
        fd = os.open(trap.marker.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        data = os.read(fd, _MARKER_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    return trap.marker.token.encode() in data


def replay(
    report_path: Path,
    which: str,
    command: list[str],
    *,
    timeout: float,
    use_report_command: bool = False,
    sandbox: bool = True,
) -> int:
    try:
        data = json.loads(report_path.read_text(encoding="utf-8"))
        index = int(which)
        finding = data["findings"][index - 1]
        seed, base = str(data["seed"]), Path(str(data["trap"]))
        request = finding["request"]
        name, arguments = request["params"]["name"], request["params"]["arguments"]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        return _fail(f"needs a --format json report and a finding number from 1 ({type(exc).__name__})")
    if index < 1:
        return _fail("finding numbers start at 1")
    named = data.get("command")
    theirs = tuple(str(a) for a in named) if isinstance(named, list) else ()
    if not command and not use_report_command:
        said = f"the report's server command is {shown(json.dumps(list(theirs)), 400)}; " if theirs else ""
        return _fail(f"{said}give the server command after -- (or pass --use-report-command to run the report's)")
    argv = tuple(command) or theirs
    if not argv or not seed or not base.is_absolute():
        return _fail("the report names no server command (give it after --) or no trap")
    kept = os.path.lexists(base)
    if kept:
        try:
            scratch = build_trap(seed=seed)
        except OSError as exc:
            return _fail(f"could not rebuild the trap to compare ({type(exc).__name__})")
        trap = _rebased(scratch, base)
        remove(scratch.base)
        if not _made_by_us(trap):
            return _fail(
                f"the report's trap {shown(str(base), 300)} exists and is not a trap this audit made from the "
                "report's seed (no marker file with its token in ws/): refusing to use it; remove it or move it "
                "away if it is a kept trap of another run, or check the report"
            )
    else:
        try:
            trap = build_trap(seed=seed, base=base)
        except OSError as exc:
            return _fail(f"could not rebuild the trap at {shown(str(base), 300)} ({type(exc).__name__})")
        if data.get("workspaceKind") == "git":
            build_git(trap)
    far = data.get("beyondTrap") if isinstance(data.get("beyondTrap"), dict) else {}
    notes = plant_far(
        trap,
        server_cwd=Path(far["cwd"]) if "cwd" in far else None,
        temp_dir=Path(far["tmp"]).parent if "tmp" in far else None,
        home=Path(far["userhome"]).parent if "userhome" in far else None,
    )
    for note in notes:
        print(f"note     {note}")
    if any(str(trap.extra_dirs.get(loc)) != where for loc, where in far.items()):
        print("note     the canaries beyond the trap could not be rebuilt where the report had them")
    for planted in _plant_asked(trap, arguments):
        print(f"note     planted {shown(planted)} again (a canary of a type the tool asked for)")
    try:
        hang = finding.get("kind") == "hang"
        mode = str(finding.get("mode", "args"))
        # a finding from a metadata-only tool (its answer named an outside canary as served) is judged so again
        named = "as resolved/served" in str(finding.get("evidence", ""))
        # sandboxed as the audit ran it (the trap and the canaries beyond it shown, your home not), unless refused
        off = "not requested (--no-sandbox)" if not sandbox else sandbox_support()
        print(f"note     {status_line(off)}")
        box = None if off else SandboxPlan(trap.base, tuple(trap.extra_dirs.values()))
        call = _Call(mode, name, arguments, timeout, hang, named, box)
        return anyio.run(_send, trap, ServerSpec(command=argv), call)
    finally:
        remove_far(trap)
        if not kept:
            remove(trap.base)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _plant_asked(trap: Trap, arguments: Any) -> list[str]:
    """Canaries the audit planted on demand (a type a tool asked for) are not part of the seed's trap: a file of a
    registered type that the request names, directly in W or an outside directory of the trap and absent now, is
    made again there with that location's token and mtime."""
    made: list[str] = []
    for text in _strings(arguments)[:16]:
        path = Path(text[7:] if text.startswith("file://") else text)
        kind = REGISTRY.get(path.suffix[1:])
        if kind is None or not path.is_absolute() or path.parent.parent != trap.base or os.path.lexists(path):
            continue
        loc = path.parent.name
        canary = trap.marker if loc == trap.workspace.name else trap.canaries.get(loc)
        if canary is None or not path.name.startswith("rbt-"):
            continue
        path.write_bytes(kind.make(canary.token))
        os.utime(path, (canary.mtime, canary.mtime))
        made.append(str(path))
    return made


@dataclasses.dataclass(frozen=True)
class _Call:
    """The one request a replay sends, and how: its mode, the per-call timeout, whether it is a hang finding or a
    metadata-only tool's, and the sandbox (None: unsandboxed)."""

    mode: str
    name: str
    arguments: Any
    per_call: float
    hang: bool
    named: bool
    sandbox: SandboxPlan | None


async def _send(trap: Trap, spec: ServerSpec, call: _Call) -> int:
    mode, name, arguments, per_call = call.mode, call.name, call.arguments, call.per_call
    hang, named = call.hang, call.named
    roots_mode = mode.startswith("roots")
    provider = CountingProvider([trap.workspace, trap.second]) if roots_mode else None
    allowed = frozenset({"ws", "second"} if roots_mode else {"ws"})
    before = Snapshot.take(trap.base, keep_data=True)
    log = StderrSink(os.devnull, keep=0)
    watch = watch_trap(trap, [])
    try:
        async with open_peer(
            spec,
            workspace=None if roots_mode else trap.workspace,
            cwd=trap.cwd,
            env={**os.environ, "PWD": str(trap.cwd), "TZ": "UTC"},
            connect=Connect(
                "legacy" if mode == "roots" else "auto", provider, per_call, log, mode, sandbox=call.sandbox
            ),
        ) as peer:
            if provider is not None and not peer.modern:
                with anyio.move_on_after(per_call):
                    await provider.asked.wait()
            if hang:
                peer.timeout = min(per_call, 2.0)
            if watch is not None:
                watch.begin()
            out = await peer.call(name, arguments if isinstance(arguments, dict) else {})
            events = watch.end() if watch is not None else []
            blocked = out.timed_out and hang and _reader_waiting(trap)
    except StartFailed as exc:
        print(f"the server did not start: {shown(str(exc).strip().splitlines()[-1:] or '', 300)}")
        return 2
    finally:
        log.close()
        if watch is not None:
            watch.close()
    print(f"request  {out.request}")
    print(f"answer   {shown(out.error or result_text(out.result), 600)}")
    evidence = [e.detail for e in judge(trap, out.request, out.result, out.is_error, allowed, names_paths=named)]
    evidence += [e.detail for e in kernel_evidence(trap, events, allowed)]
    for change in before.diff(Snapshot.take(trap.base)):
        rel = change.path.relative_to(trap.base)
        if (rel.parts[0] if rel.parts else "") not in allowed:
            evidence.append(f"{change.what} {shown(rel.as_posix())} outside the roots")
    if blocked:
        evidence.append(f"the call blocked for {out.seconds:.1f}s with the server holding the FIFO open for reading")
    for line in evidence:
        print(f"evidence {line}")
    if evidence:
        return 1
    if out.timed_out:
        print("inconclusive: the call timed out (no answer to judge)")
        return 2
    print("not reproduced: no evidence in this answer")
    return 0


def _reader_waiting(trap: Trap) -> bool:
    """A writer can open the trap's FIFO without blocking only while a reader holds it: the server's call. Opening
    it also releases that reader (EOF)."""
    if trap.fifo is None:
        return False
    try:
        fd = os.open(trap.fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return False
    os.close(fd)
    return True
