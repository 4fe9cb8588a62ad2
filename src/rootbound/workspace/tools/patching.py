"""What ``apply_patch`` answers: one line per file, what was tolerated, and with ``dry_run`` the unified diff.

Why its own module: the answer is what the model reads to decide whether the patch did what it meant, so it says
every fact (replaced files, created directories, tolerant matches) in the text, bounded like every answer, and
the structured result carries the same facts as fields.
"""

from __future__ import annotations

from typing import Any

from rootbound.confine.patch_ops import PatchFile, PatchOutcome
from rootbound.text.line_match import TOLERANCE_ORDER
from rootbound.text.unified_diff import unified_diff
from rootbound.workspace.tools.calls import Limits, ToolOutput
from rootbound.workspace.tools.render import bounded, escape, fitting

__all__ = ["render_patch"]


def _line(file: PatchFile) -> str:
    shown = escape(str(file.path))
    if file.action == "moved" and file.destination is not None:
        shown += f" -> {escape(str(file.destination))}"
    counts = " ".join(
        part for part in (f"+{file.added}" if file.added else "", f"-{file.removed}" if file.removed else "") if part
    )
    notes = [counts or "no lines changed"]
    if file.replaced:
        notes.append("replaced the existing file")
    if file.created:
        notes.append("created " + ", ".join(escape(str(path)) for path in file.created))
    if file.tolerances:
        notes.append(f"matched tolerantly: {', '.join(file.tolerances)}")
    return f"{file.action} {shown} ({'; '.join(notes)})"


def _diff(file: PatchFile) -> str:
    if file.action == "moved" and file.destination is not None:
        diff = unified_diff(file.before, file.after, str(file.destination))
        return diff or f"(moved unchanged to {escape(str(file.destination))})\n"
    return unified_diff(file.before, file.after, str(file.path))


def render_patch(outcome: PatchOutcome, limits: Limits) -> ToolOutput:
    count = len(outcome.files)
    files = "file" if count == 1 else "files"
    if outcome.dry_run:
        head = f"dry run: the patch would change {count} {files} as below (nothing written)"
    else:
        head = f"applied the patch: {count} {files} changed"
    lines = [head, *(_line(file) for file in outcome.files)]
    used = {t for file in outcome.files for t in file.tolerances}
    if used:
        lines.append(f"matched tolerantly ({', '.join(t for t in TOLERANCE_ORDER if t in used)}): check the diff")
    structured: dict[str, Any] = {
        "written": outcome.written,
        "dry_run": outcome.dry_run,
        "files": [_structured(file) for file in outcome.files],
    }
    text = "\n".join(lines)
    if outcome.dry_run:
        full = "".join(_diff(file) for file in outcome.files)
        diff_lines = full.split("\n")[:-1]
        room = limits.max_output - len(text) - 200
        truncated = fitting(diff_lines, room) < len(diff_lines)
        diff = bounded(diff_lines, room) if diff_lines else "(no changes)"
        text = f"{text}\n{diff}"
        structured["diff"] = diff if truncated else full
        structured["diff_truncated"] = truncated
    return ToolOutput(text, structured)


def _structured(file: PatchFile) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "action": file.action,
        "path": str(file.path),
        "added": file.added,
        "removed": file.removed,
        "replaced": file.replaced,
        "tolerances": list(file.tolerances),
    }
    if file.destination is not None:
        entry["destination"] = str(file.destination)
    return entry
