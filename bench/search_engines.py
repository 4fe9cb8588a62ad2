"""Issue 36: the search index's engine, chosen by measurement. Three ways to answer "which files hold every trigram
of these literals", built over the same files and asked the same literals, in one run:

* ``numpy``: the index's own postings (``src/rootbound/confine/search/index/postings.py``): per file its distinct
  trigrams (ASCII folded), segments of up to 65,535 files with ``uint16`` file numbers sorted by trigram, dense
  trigrams kept as a set; in memory, and written to a folder and memory-mapped (as ``serve`` keeps them);
* ``fts5``: SQLite's FTS5 with its ``trigram`` tokenizer (no new dependency): a table that stores the text (it can
  delete a changed file's row) and a contentless one (``content=''``: with SQLite < 3.43 it cannot delete a row at
  all, so a changed file could never leave it); a quoted literal is matched as a phrase of trigrams;
* ``roaring``: a pyroaring ``BitMap`` of file numbers per trigram (not a dependency of rootbound: the bench runs
  it when the module can be imported, e.g. from a throwaway venv made with ``--system-site-packages``).

Run: ``python bench/search_engines.py [--tree DIR]`` (default: the interpreter's standard library). Each engine
is built in a process of its own (``--engine NAME``), so its memory is its own: the columns are the build's wall
time (reading the files included, the same reads for every engine), the peak RSS of that process beyond what it
held before the build, the size on disk, the median time of each query over 7 runs with the candidates it gave, and
the time to replace one file's entry (what freshness costs: the numpy index never replaces, it marks the file
dirty and reads it directly until a rebuild). Every engine's candidates must contain the files that hold the
literal (checked against the files themselves).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from rootbound.confine.search.index.literals import fold
from rootbound.confine.search.index.postings import MAX_SEGMENT_FILES, Segment, SegmentBuilder, file_grams

LITERALS = ["getaddrinfo", "Error(", "class ", "def __init__(self", "zzqqxx"]
MAX_FILE = 4 << 20
ENGINES = [
    "numpy",
    "numpy-disk",
    "numpy-dense-quarter",
    "numpy-dense-half",
    "numpy-no-dense",
    "fts5",
    "fts5-contentless",
    "roaring",
]
"""``numpy-dense-*``: the numpy postings with trigrams dense past a quarter or half of a segment's files, or never
(the index's own: past 90%)."""


def texts(tree: Path) -> Iterator[tuple[str, bytes]]:
    """The text files grep would search: at most 4 MiB, no NUL in the first 8 KiB; symlinks not followed."""
    for top, dirs, files in os.walk(tree):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(top, name)
            try:
                if os.path.islink(path) or os.path.getsize(path) > MAX_FILE:
                    continue
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if b"\0" not in data[:8192]:
                yield path, data


def status_kib(field: str) -> int:
    """A memory figure of this process in KiB (``VmHWM``: its peak RSS, ``VmRSS``: its RSS now)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def timed(run: Callable[[], Any], times: int = 7) -> tuple[float, Any]:
    spent, result = [], None
    for _ in range(times):
        began = time.perf_counter()
        result = run()
        spent.append(time.perf_counter() - began)
    return statistics.median(spent), result


def build_numpy(tree: Path, folder: Path | None) -> tuple[Callable[[bytes], set[int]], Callable[[int, bytes], None]]:
    builder = SegmentBuilder(folder)
    segments: list[Segment] = []
    for _, data in texts(tree):
        builder.add(file_grams(data))
        if builder.full():
            segment = builder.flush()
            if segment is not None:
                segments.append(segment)
    last = builder.flush()
    if last is not None:
        segments.append(last)

    def query(literal: bytes) -> set[int]:
        grams = file_grams(fold(literal))
        found: set[int] = set()
        first = 0
        for segment in segments:
            local = segment.matching(grams)
            found.update(range(first, first + segment.count) if local is None else (local.astype(int) + first).tolist())
            first += segment.count
        return found

    def replace(number: int, data: bytes) -> None:
        raise NotImplementedError  # segments are immutable: the file is dirty until a rebuild

    return query, replace


def build_fts5(tree: Path, folder: Path, contentless: bool) -> tuple[Callable[[bytes], set[int]], Callable[..., None]]:
    db = sqlite3.connect(folder / "index.db")
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    content = ", content=''" if contentless else ""
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize='trigram'{content})")
    rows = ((number, data.decode("utf-8", "replace")) for number, (_, data) in enumerate(texts(tree)))
    db.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", rows)
    db.commit()

    def query(literal: bytes) -> set[int]:
        phrase = '"' + literal.decode().replace('"', '""') + '"'
        return {row[0] for row in db.execute("SELECT rowid FROM t WHERE t MATCH ?", (phrase,))}

    def replace(number: int, data: bytes) -> None:
        db.execute("DELETE FROM t WHERE rowid = ?", (number,))  # a contentless table refuses (SQLite < 3.43)
        db.execute("INSERT INTO t(rowid, body) VALUES (?, ?)", (number, data.decode("utf-8", "replace")))
        db.commit()

    return query, replace


def build_roaring(
    tree: Path,
) -> tuple[Callable[[bytes], set[int]], Callable[[int, bytes], None], Callable[[], int]]:
    """The bitmaps, and the size they serialize to (what a cache file of them would take)."""
    from pyroaring import BitMap  # type: ignore[import-not-found,unused-ignore]

    postings: dict[int, list[int]] = {}
    kept: list[np.ndarray[Any, Any]] = []
    for number, (_, data) in enumerate(texts(tree)):
        grams = file_grams(data)
        kept.append(grams)
        for gram in grams.tolist():
            postings.setdefault(gram, []).append(number)
    maps = {gram: BitMap(numbers) for gram, numbers in postings.items()}
    del postings

    def query(literal: bytes) -> set[int]:
        grams = file_grams(fold(literal)).tolist()
        found = None
        for gram in sorted(grams, key=lambda g: len(maps.get(g, ()))):
            bitmap = maps.get(gram)
            if bitmap is None:
                return set()
            found = bitmap.copy() if found is None else found & bitmap
        return set() if found is None else set(found)

    def replace(number: int, data: bytes) -> None:
        for gram in kept[number].tolist():
            maps[gram].discard(number)
        kept[number] = file_grams(data)
        for gram in kept[number].tolist():
            maps.setdefault(gram, BitMap()).add(number)

    return query, replace, lambda: sum(len(bitmap.serialize()) for bitmap in maps.values())


def one_engine(engine: str, tree: Path) -> dict[str, Any]:
    """Build ``engine`` in this process and measure it."""
    with tempfile.TemporaryDirectory(prefix="rootbound-engines-") as scratch:
        folder = Path(scratch)
        before, began = status_kib("VmRSS"), time.perf_counter()
        if engine.startswith("numpy"):
            from rootbound.confine.search.index import postings

            parts = {"numpy-dense-quarter": 0.25, "numpy-dense-half": 0.5, "numpy-no-dense": 1.0}
            postings.DENSE_PART = parts.get(engine, postings.DENSE_PART)  # type: ignore[misc]
            query, replace = build_numpy(tree, folder if engine != "numpy" else None)
        elif engine.startswith("fts5"):
            query, replace = build_fts5(tree, folder, contentless=engine == "fts5-contentless")
        else:
            query, replace, serialized = build_roaring(tree)
        build = time.perf_counter() - began
        peak = (status_kib("VmHWM") - before) / 1024
        disk = serialized() if engine == "roaring" else sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        queries = {}
        for literal in LITERALS:
            needle = literal.encode()
            seconds, found = timed(lambda: query(needle))  # noqa: B023 - called before the loop moves on
            queries[literal] = (seconds, sorted(found))
        try:
            replacing: float | str = timed(lambda: replace(0, b"class ReplacedError(Exception): getaddrinfo\n"), 3)[0]
        except (NotImplementedError, sqlite3.Error) as error:
            replacing = "cannot" if isinstance(error, sqlite3.Error) else "dirty list"
    return {"build": build, "peak": peak, "disk": disk, "queries": queries, "replace": replacing}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--engine", choices=ENGINES)
    args = parser.parse_args()
    tree = args.tree.resolve()
    if args.engine:
        print(json.dumps(one_engine(args.engine, tree)))
        return 0
    files = list(texts(tree))  # also warms the page cache for every engine alike
    truth = {lit: {n for n, (_, data) in enumerate(files) if fold(lit.encode()) in fold(data)} for lit in LITERALS}
    size = sum(len(data) for _, data in files)
    print(f"tree {tree}: {len(files):,} text files, {size / 2**20:,.0f} MiB; load {os.getloadavg()[0]:.2f}")
    print(f"segments of up to {MAX_SEGMENT_FILES:,} files; SQLite {sqlite3.sqlite_version}\n")
    head = " | ".join(f"`{lit}` ms (candidates)" for lit in LITERALS)
    print(f"| engine | build s | peak RSS MiB | disk MiB | {head} | replace one file |")
    print("|" + "---|" * (5 + len(LITERALS)))
    for engine in ENGINES:
        done = subprocess.run(
            [sys.executable, __file__, "--tree", str(tree), "--engine", engine], capture_output=True, text=True
        )
        if done.returncode != 0:
            reason = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
            print(f"| {engine} | not run: {reason} |")
            continue
        got = json.loads(done.stdout)
        cells = []
        for literal in LITERALS:
            seconds, found = got["queries"][literal]
            missing = truth[literal] - set(found)
            cells.append(f"{seconds * 1000:.2f} ({len(found):,}{', MISSES ' + str(len(missing)) if missing else ''})")
        replace = got["replace"]
        replace_cell = f"{replace * 1000:.2f} ms" if isinstance(replace, float) else replace
        print(
            f"| {engine} | {got['build']:.1f} | {got['peak']:.0f} | {got['disk'] / 2**20:.1f} | "
            + " | ".join(cells)
            + f" | {replace_cell} |",
            flush=True,
        )
    print("\nfiles holding the literal (ASCII case folded):", {lit: len(found) for lit, found in truth.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
