"""CPU of one costly ``edit_file`` match (issue 48 #5): a 200 KB old text against a 2 MB file, side by side.

Run: ``.venv/bin/python bench/edit_cost.py [--baseline REV]``.

Each case runs :func:`rootbound.text.edit.apply_edits` in a child process (``resource.getrusage`` of the child:
CPU seconds, user + system), on this tree and, with ``--baseline``, on a temporary ``git worktree`` of that
revision. The cases are the shapes that cost the tree before issue 48 the file's lines times the old text's
length: hits that are not line starts, overlapping tolerant candidates (trailing whitespace, indentation), and
overlapping exact occurrences. The answer wanted within 2 s of CPU: found, not found, or "too large to match".
A child is stopped after ``--limit`` s of CPU (its answer then reads "over the limit").
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import sys
from rootbound.text.edit import Edit, EditError, apply_edits
case = sys.argv[1]
if case == "not line starts":
    text, old = "xa\n" * 700_000, "a\n" + "xa\n" * 66_000 + "zz"
elif case == "trailing whitespace":
    text, old = "a\n" * 1_000_000, "a \n" * 100_000
elif case == "indentation":
    text, old = "    x\n" * 350_000, "  x\n" * 50_000
elif case == "exact overlapping":
    text, old = "a" * 2_000_000, "a" * 200_000
else:  # found once, tolerantly, at the end
    body = "".join(f"line {n:07d}\n" for n in range(150_000))
    old = "".join(f"line {n:07d}  \n" for n in range(135_000, 150_000))
    text = body
try:
    apply_edits(text, [Edit(old, "Q")])
    print("found")
except EditError as error:
    print(str(error).split(";")[0].split(": ", 1)[1][:40])
"""
CASES = ("found tolerantly", "not line starts", "trailing whitespace", "indentation", "exact overlapping")


def run(src: Path, case: str, limit: int) -> tuple[float, str]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, case],
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        preexec_fn=cap,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    answer = done.stdout.strip() or "over the limit"
    return cpu, answer


@contextlib.contextmanager
def checkout(rev: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp) / "tree"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), rev], check=True, capture_output=True
        )
        try:
            yield where / "src"
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)], check=False, capture_output=True
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a git revision to run side by side (e.g. c00cb92)")
    parser.add_argument("--limit", type=int, default=60, help="CPU seconds a child may use")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(checkout(args.baseline)) if args.baseline else None
        print(f"| case | this tree: CPU s | answer | {args.baseline or '-'}: CPU s | answer |")
        print("|---|---|---|---|---|")
        for case in CASES:
            cpu, answer = run(REPO / "src", case, args.limit)
            old_cpu, old_answer = run(base, case, args.limit) if base else (float("nan"), "-")
            print(f"| {case} | {cpu:.2f} | {answer} | {old_cpu:.2f} | {old_answer} |", flush=True)


if __name__ == "__main__":
    main()
