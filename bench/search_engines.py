"""Issue 36: the search index's engine, chosen by measurement. Ways to answer "which files hold every trigram of
these literals", built over the same files and asked the same literals, in one run, one table:

* ``numpy``: the index's own postings (``src/rootbound/search/index/postings.py``): per file its distinct
  trigrams (ASCII folded), segments of up to 65,535 files with ``uint16`` file numbers sorted by trigram, dense
  trigrams kept as a set; in memory (``numpy``), and written to a folder and memory-mapped as ``serve`` keeps them
  (``numpy-disk``); ``numpy-dense-*``: the same with trigrams dense past a quarter or half of a segment's files, or
  never (the index's own: past 90%);
* ``fts5``: SQLite's FTS5 with its ``trigram`` tokenizer (stdlib, no new dependency), a table that stores the text
  (it can delete a changed file's row: the disk holds the tree's text again), and a contentless one
  (``content=''``): before SQLite 3.43 (no ``contentless_delete``) a row leaves it only by the ``'delete'`` command,
  which must be given the text the row was indexed with, and a changed file no longer holds it; an external-content
  table is the same (its ``'delete'`` also needs the old text) unless the content table keeps a copy (the stored
  variant again). A quoted literal is matched as a phrase of trigrams (consecutive: a substring test), so it gives
  fewer candidates than trigram-AND; the bench also asks it the trigram-AND query (``"get" AND "eta" AND ...``) to
  check that its trigrams agree with numpy's;
* ``roaring``: a pyroaring ``BitMap`` of file numbers per trigram, built from the same sorted batches as numpy's
  segments (not a dependency of rootbound: run when the module can be imported, e.g. with a throwaway venv's
  site-packages on ``PYTHONPATH``; otherwise its row says it was skipped);
* ``dict``: a Python ``dict`` of ``set`` per trigram, the baseline (skipped by default past 512 MiB of text: it
  needs about 6 bytes of RAM per byte of text).

Run (``PYTHONPATH`` must reach ``src``; the second entry only for the roaring row)::

    /tmp/engines-venv/bin/pip install pyroaring   # a throwaway venv made with --system-site-packages
    PYTHONPATH=src:/tmp/engines-venv/lib/python3.11/site-packages .venv/bin/python bench/search_engines.py \\
        [--tree DIR] [--engines numpy,fts5,...]

``--tree``: default the interpreter's standard library. Files are those grep reads: at most 4 MiB, no NUL in the
first 8 KiB, symlinks not followed (the index also skips files with more than one link; the bench does not). The
parent reads every file once first (the page cache is warm for every engine alike, and it finds which files truly
hold each literal); each engine is then built in a process of its own (``--engine NAME``), so its memory is its own.

Columns:

* ``read s``: walking the tree and reading the files (the same work for every engine, from the page cache);
* ``extract s``: the distinct trigrams of each file (``file_grams``, shared by numpy, roaring and dict; FTS5 has its
  own tokenizer, counted in its insert);
* ``insert s``: everything else the build does (numpy: sorting into segments and writing them; FTS5: decoding to
  text and the INSERTs, tokenizing included; roaring and dict: sorting the batches and filling the maps);
* ``build s``: the three together, wall time of the build;
* ``peak RSS MiB``: the build process's peak RSS (VmHWM) minus its RSS before the build (after its imports);
* ``disk MiB``: the saved ``.npy`` arrays, the SQLite file, or the bitmaps serialized (plus 4 bytes a key); for
  numpy in memory the arrays' bytes are shown in brackets;
* one column per literal: the median of 7 queries in ms, and the candidate files; a literal's candidates must
  contain every file that holds it (ASCII case folded; checked against the files), and a trigram-AND engine's must
  equal numpy's (the ``vs numpy`` column; FTS5's trigram-AND query is the one compared; numpy's other dense
  thresholds must give a superset; the exit status is 1 otherwise). Numpy's dense trigrams (in over 90% of a
  segment's files) narrow nothing, so it equals plain trigram-AND only while no query needs one of them to narrow:
  ``numpy-no-dense`` is plain trigram-AND;
* ``replace one file``: the time to drop a file's old entry and add its new text (the median of 3): numpy's segments
  are immutable (a changed file is dirty, read directly until a rebuild); roaring and dict do not know the old
  trigrams of a changed file, so they discard its number from every map.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rootbound.search.index.literals import fold
from rootbound.search.index.postings import (
    MAX_SEGMENT_FILES,
    MAX_SEGMENT_POSTINGS,
    Segment,
    SegmentBuilder,
    file_grams,
)

LITERALS = ["getaddrinfo", "Error(", "class ", "def __init__(self", "zzqqxx"]
MAX_FILE = 4 << 20
SNIFF = 8192
ENGINES = [
    "numpy",
    "numpy-disk",
    "numpy-dense-quarter",
    "numpy-dense-half",
    "numpy-no-dense",
    "fts5",
    "fts5-contentless",
    "roaring",
    "dict",
]
DICT_MAX_TEXT = 512 << 20
"""Text bytes past which the ``dict`` engine is skipped unless named in ``--engines``."""
REPLACEMENT = b"class ReplacedError(Exception): getaddrinfo\n"

U32 = npt.NDArray[np.uint32]


def texts(tree: Path) -> Iterator[bytes]:
    """The text files grep would search, in a fixed order: at most 4 MiB, no NUL in the first 8 KiB; symlinks not
    followed. A file's number is its place in this order."""
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
            if data.find(b"\0", 0, SNIFF) < 0:
                yield data


@dataclass
class Spent:
    """Seconds of the build by phase."""

    read: float = 0.0
    extract: float = 0.0
    insert: float = 0.0
    postings: int = 0
    files: int = 0


def reading(tree: Path, spent: Spent) -> Iterator[bytes]:
    """:func:`texts`, the time spent in it (walk and reads) added to ``spent.read``."""
    walk = texts(tree)
    while True:
        began = time.perf_counter()
        data = next(walk, None)
        spent.read += time.perf_counter() - began
        if data is None:
            return
        spent.files += 1
        yield data


def extracting(tree: Path, spent: Spent) -> Iterator[U32]:
    """Each file's distinct trigrams, the time to compute them added to ``spent.extract``."""
    for data in reading(tree, spent):
        began = time.perf_counter()
        grams = file_grams(data)
        spent.extract += time.perf_counter() - began
        spent.postings += len(grams)
        yield grams


def status_kib(key: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key):
                return int(line.split()[1])
    return 0


def median_time(run: Callable[[], Any], times: int = 7) -> tuple[float, Any]:
    spent, result = [], None
    for _ in range(times):
        began = time.perf_counter()
        result = run()
        spent.append(time.perf_counter() - began)
    return statistics.median(spent), result


def literal_trigrams(literal: bytes) -> list[int]:
    return [int(gram) for gram in file_grams(fold(literal))]


@dataclass
class Built:
    """An engine after its build: ``query`` (candidate file numbers of a literal), ``query_and`` (FTS5: the
    trigram-AND query), ``replace(number, old, new)`` (``None``: not supported, with ``replace_note`` saying why),
    the bytes on disk, and for numpy in memory the arrays' bytes."""

    query: Callable[[bytes], set[int]]
    disk: Callable[[], int | None]
    replace: Callable[[int, bytes, bytes], None] | None = None
    replace_note: str = ""
    query_and: Callable[[bytes], set[int]] | None = None
    in_ram: int | None = None
    notes: list[str] = field(default_factory=list)


def build_numpy(tree: Path, folder: Path | None, spent: Spent) -> Built:
    builder = SegmentBuilder(folder)
    segments: list[Segment] = []
    for grams in extracting(tree, spent):
        began = time.perf_counter()
        builder.add(grams)
        if builder.full():
            segment = builder.flush()
            if segment is not None:
                segments.append(segment)
        spent.insert += time.perf_counter() - began
    began = time.perf_counter()
    last = builder.flush()
    if last is not None:
        segments.append(last)
    spent.insert += time.perf_counter() - began

    def query(literal: bytes) -> set[int]:
        grams = file_grams(fold(literal))
        found: set[int] = set()
        first = 0
        for segment in segments:
            local = segment.matching(grams)
            found.update(range(first, first + segment.count) if local is None else (local.astype(int) + first).tolist())
            first += segment.count
        return found

    def disk() -> int | None:
        return None if folder is None else sum(f.stat().st_size for f in folder.rglob("*.npy"))

    return Built(
        query,
        disk,
        replace_note="dirty list (immutable segments)",
        in_ram=None if folder is not None else sum(segment.nbytes() for segment in segments),
        notes=[f"{len(segments)} segments, {sum(len(s.dense) for s in segments):,} dense trigrams in all"],
    )


def fts5_phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def build_fts5(tree: Path, folder: Path, contentless: bool, spent: Spent) -> Built:
    db = sqlite3.connect(folder / "index.db")
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    content = ", content=''" if contentless else ""
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize='trigram'{content})")
    insert = "INSERT INTO t(rowid, body) VALUES (?, ?)"
    db.execute("BEGIN")
    for number, data in enumerate(reading(tree, spent)):
        began = time.perf_counter()
        db.execute(insert, (number, data.decode("utf-8", "replace")))
        spent.insert += time.perf_counter() - began
    began = time.perf_counter()
    db.commit()
    spent.insert += time.perf_counter() - began

    def query(literal: bytes) -> set[int]:
        return {row[0] for row in db.execute("SELECT rowid FROM t WHERE t MATCH ?", (fts5_phrase(literal.decode()),))}

    def query_and(literal: bytes) -> set[int]:
        text = literal.decode()
        grams = sorted({text[at : at + 3] for at in range(len(text) - 2)})
        match = " AND ".join(fts5_phrase(gram) for gram in grams)
        return {row[0] for row in db.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,))}

    def replace(number: int, old: bytes, new: bytes) -> None:
        if contentless:  # DELETE is refused; the 'delete' command needs the text the row was indexed with
            db.execute(
                "INSERT INTO t(t, rowid, body) VALUES ('delete', ?, ?)", (number, old.decode("utf-8", "replace"))
            )
        else:
            db.execute("DELETE FROM t WHERE rowid = ?", (number,))
        db.execute(insert, (number, new.decode("utf-8", "replace")))
        db.commit()

    def disk() -> int | None:
        return sum(f.stat().st_size for f in folder.iterdir() if f.is_file())

    note = "needs the old text (the changed file no longer has it)" if contentless else "DELETE + INSERT"
    return Built(query, disk, replace=replace, replace_note=note, query_and=query_and)


def sorted_batches(grams_of_files: Iterator[U32], spent: Spent) -> Iterator[tuple[list[int], list[int], U32]]:
    """Files' trigrams in batches of up to :data:`MAX_SEGMENT_POSTINGS` postings (the bound numpy's build keeps),
    each as ``(keys, bounds, owners)``: the batch's distinct trigrams, where each one's file numbers start in
    ``owners`` (one more than the keys), and the file numbers sorted by trigram. The time to sort is the caller's
    insert time (it is measured around ``next``)."""
    parts: list[U32] = []
    first = postings = 0
    for grams in grams_of_files:
        parts.append(grams)
        postings += len(grams)
        if postings >= MAX_SEGMENT_POSTINGS:
            yield _sorted(parts, first)
            first += len(parts)
            parts, postings = [], 0
    if parts:
        yield _sorted(parts, first)


def _sorted(parts: list[U32], first: int) -> tuple[list[int], list[int], U32]:
    lengths = np.fromiter((len(part) for part in parts), np.int64, len(parts))
    grams = np.concatenate(parts)
    owners = np.repeat(np.arange(first, first + len(parts), dtype=np.uint32), lengths)
    order = np.argsort(grams, kind="stable")  # file numbers stay ascending within a trigram
    grams, owners = grams[order], owners[order]
    keys, starts = np.unique(grams, return_index=True)
    return keys.tolist(), [*starts.tolist(), len(grams)], np.ascontiguousarray(owners)


def build_maps(tree: Path, spent: Spent, make: Callable[[U32], Any]) -> dict[int, Any]:
    """Trigram -> ``make(file numbers)``, merged with ``|=`` across batches (roaring bitmaps, or sets)."""
    maps: dict[int, Any] = {}
    batches = sorted_batches(extracting(tree, spent), spent)
    while True:
        # next() runs the reads and extraction of the batch's files (timed by them) and then the sort: only the sort
        # is insert time
        read, extract, began = spent.read, spent.extract, time.perf_counter()
        batch = next(batches, None)
        spent.insert += time.perf_counter() - began - (spent.read - read) - (spent.extract - extract)
        if batch is None:
            return maps
        began = time.perf_counter()
        keys, bounds, owners = batch
        for at, key in enumerate(keys):
            made = make(owners[bounds[at] : bounds[at + 1]])
            held = maps.get(key)
            if held is None:
                maps[key] = made
            else:
                held |= made
        spent.insert += time.perf_counter() - began


def intersect_query(maps: dict[int, Any], literal: bytes) -> set[int]:
    found: Any = None
    for gram in sorted(literal_trigrams(literal), key=lambda gram: len(maps.get(gram, ()))):
        held = maps.get(gram)
        if held is None:
            return set()
        found = held.copy() if found is None else found & held
        if not found:
            return set()
    return set() if found is None else set(found)


def scan_replace(maps: dict[int, Any], make_one: Callable[[], Any]) -> Callable[[int, bytes, bytes], None]:
    def replace(number: int, old: bytes, new: bytes) -> None:
        for held in maps.values():  # the old trigrams are unknown once the file changed: every map is asked
            held.discard(number)
        for gram in file_grams(new).tolist():
            held = maps.get(gram)
            if held is None:
                maps[gram] = held = make_one()
            held.add(number)

    return replace


def build_roaring(tree: Path, spent: Spent) -> Built:
    from pyroaring import BitMap  # type: ignore[import-not-found,unused-ignore]

    def bitmap(numbers: U32) -> Any:
        return BitMap(array("I", numbers.tobytes()))  # the buffer path: no Python int per number

    maps = build_maps(tree, spent, bitmap)
    began = time.perf_counter()
    for held in maps.values():
        held.run_optimize()
    spent.insert += time.perf_counter() - began

    def disk() -> int | None:
        return sum(len(held.serialize()) for held in maps.values()) + 4 * len(maps)

    return Built(
        lambda literal: intersect_query(maps, literal),
        disk,
        replace=scan_replace(maps, BitMap),
        replace_note=f"discard from all {len(maps):,} bitmaps",
    )


def build_dict(tree: Path, spent: Spent) -> Built:
    maps = build_maps(tree, spent, lambda numbers: set(numbers.tolist()))
    return Built(
        lambda literal: intersect_query(maps, literal),
        lambda: None,
        replace=scan_replace(maps, set),
        replace_note=f"discard from all {len(maps):,} sets",
    )


def one_engine(engine: str, tree: Path) -> dict[str, Any]:
    """Build ``engine`` in this process and measure it."""
    if engine == "roaring":
        import pyroaring  # type: ignore[import-not-found,unused-ignore]  # noqa: F401 - imported before the RSS base
    from rootbound.search.index import postings

    parts = {"numpy-dense-quarter": 0.25, "numpy-dense-half": 0.5, "numpy-no-dense": 1.0}
    postings.DENSE_PART = parts.get(engine, postings.DENSE_PART)  # type: ignore[misc]
    with tempfile.TemporaryDirectory(prefix="rootbound-engines-") as scratch:
        folder = Path(scratch)
        spent = Spent()
        before, began = status_kib("VmRSS:"), time.perf_counter()
        if engine.startswith("numpy"):
            built = build_numpy(tree, None if engine == "numpy" else folder, spent)
        elif engine.startswith("fts5"):
            built = build_fts5(tree, folder, engine == "fts5-contentless", spent)
        elif engine == "roaring":
            built = build_roaring(tree, spent)
        else:
            built = build_dict(tree, spent)
        build = time.perf_counter() - began
        peak = (status_kib("VmHWM:") - before) / 1024
        disk = built.disk()
        queries: dict[str, Any] = {}
        for literal in LITERALS:
            needle = literal.encode()
            seconds, found = median_time(lambda: built.query(needle))  # noqa: B023 - called before the loop moves on
            by_and = sorted(built.query_and(needle)) if built.query_and is not None else None
            queries[literal] = {"ms": seconds * 1000, "found": sorted(found), "and": by_and}
        replace: float | None = None
        if built.replace is not None:
            old = next(texts(tree))
            spent_replacing = []
            for new, was in ((REPLACEMENT, old), (old, REPLACEMENT), (REPLACEMENT, old)):
                began = time.perf_counter()
                built.replace(0, was, new)
                spent_replacing.append(time.perf_counter() - began)
            replace = statistics.median(spent_replacing) * 1000
    return {
        "read": spent.read,
        "extract": spent.extract,
        "insert": spent.insert,
        "build": build,
        "files": spent.files,
        "postings": spent.postings,
        "peak": peak,
        "disk": disk,
        "in_ram": built.in_ram,
        "queries": queries,
        "replace": replace,
        "replace_note": built.replace_note,
        "notes": built.notes,
    }


def versus(engine: str, got: dict[str, Any], reference: dict[str, list[int]] | None) -> tuple[str, bool]:
    """The ``vs numpy`` cell, and whether the engine's trigram-AND candidates differ from numpy's (numpy's other
    dense thresholds must give a superset: a dense trigram narrows nothing)."""
    if reference is None:
        return "no numpy row", False
    if engine.startswith("numpy-dense"):
        extra = 0
        for literal in LITERALS:
            mine, theirs = set(got["queries"][literal]["found"]), set(reference[literal])
            if not mine >= theirs:
                return f"NOT A SUPERSET: `{literal}` -{len(theirs - mine)}", True
            extra += len(mine - theirs)
        return f"superset: {extra:,} more candidates in all (dense trigrams narrow nothing)", False
    phrase = got["queries"][LITERALS[0]]["and"] is not None
    differ = []
    fewer = 0
    for literal in LITERALS:
        answer = got["queries"][literal]
        mine = set(answer["and"] if phrase else answer["found"])
        theirs = set(reference[literal])
        if mine != theirs:
            differ.append(f"`{literal}` +{len(mine - theirs)}/-{len(theirs - mine)}")
        if phrase:
            fewer += len(theirs) - len(set(answer["found"]) & theirs)
    if differ:
        return ("AND query " if phrase else "") + "DIFFERS: " + ", ".join(differ), True
    if phrase:
        return f"AND query: same; phrase: {fewer:,} fewer candidates in all", False
    return "same", False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--engines", help="comma-separated, of: " + ", ".join(ENGINES))
    parser.add_argument("--engine", choices=ENGINES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    tree = args.tree.resolve()
    if args.engine:
        print(json.dumps(one_engine(args.engine, tree)))
        return 0
    chosen = ENGINES if not args.engines else args.engines.split(",")
    for engine in chosen:
        if engine not in ENGINES:
            parser.error(f"unknown engine {engine!r}")
    # One read of every file: warms the page cache for every engine alike, and finds the files that hold each literal.
    truth: dict[str, set[int]] = {literal: set() for literal in LITERALS}
    needles = {literal: fold(literal.encode()) for literal in LITERALS}
    files = size = 0
    for number, data in enumerate(texts(tree)):
        folded = fold(data)
        for literal, needle in needles.items():
            if needle in folded:
                truth[literal].add(number)
        files, size = number + 1, size + len(data)
    print(f"tree {tree}: {files:,} text files, {size / 2**20:,.0f} MiB; load {os.getloadavg()[0]:.2f}")
    print(f"segments of up to {MAX_SEGMENT_FILES:,} files; SQLite {sqlite3.sqlite_version}; numpy {np.__version__}")
    print("files holding each literal (ASCII case folded):", {lit: len(found) for lit, found in truth.items()})
    print()
    head = " | ".join(f"`{lit}` ms (cand.)" for lit in LITERALS)
    print(
        f"| engine | read s | extract s | insert s | build s | peak RSS MiB | disk MiB | {head} | replace one file "
        "| vs numpy |"
    )
    print("|" + "---|" * (9 + len(LITERALS)))
    reference: dict[str, list[int]] | None = None
    failed = False
    notes: list[str] = []
    postings = ""
    for engine in chosen:
        skip = ""
        if engine == "roaring" and importlib.util.find_spec("pyroaring") is None:
            skip = f"skipped: pyroaring cannot be imported by {sys.executable} (not a dependency: see the docstring)"
        if engine == "dict" and not args.engines and size > DICT_MAX_TEXT:
            skip = f"skipped: {size / 2**20:,.0f} MiB of text (past {DICT_MAX_TEXT >> 20} MiB; name it in --engines)"
        if skip:
            print(f"| {engine} | {skip} |", flush=True)
            notes.append(f"{engine}: {skip}")
            continue
        done = subprocess.run(
            [sys.executable, __file__, "--tree", str(tree), "--engine", engine], capture_output=True, text=True
        )
        if done.returncode != 0:
            reason = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
            print(f"| {engine} | failed: {reason} |", flush=True)
            notes.append(f"{engine}: failed: {reason}")
            failed = True
            continue
        got = json.loads(done.stdout)
        if engine == "numpy":
            reference = {literal: got["queries"][literal]["found"] for literal in LITERALS}
        cells = []
        for literal in LITERALS:
            answer = got["queries"][literal]
            missing = truth[literal] - set(answer["found"])
            failed |= bool(missing)
            miss = f", MISSES {len(missing)}" if missing else ""
            cells.append(f"{answer['ms']:.2f} ({len(answer['found']):,}{miss})")
        vs, differs = versus(engine, got, None if engine == "numpy" else reference)
        failed |= differs
        if engine == "numpy":
            vs = "(the reference)"
        replace = got["replace_note"] if got["replace"] is None else f"{got['replace']:.2f} ms, {got['replace_note']}"
        disk = "—" if got["disk"] is None else f"{got['disk'] / 2**20:.1f}"
        if got["in_ram"] is not None:
            disk += f" ({got['in_ram'] / 2**20:.1f} in RAM)"
        extract = f"{got['extract']:.1f}" if got["postings"] else "— (in insert)"
        print(
            f"| {engine} | {got['read']:.1f} | {extract} | {got['insert']:.1f} | {got['build']:.1f} "
            f"| {got['peak']:.0f} | {disk} | " + " | ".join(cells) + f" | {replace} | {vs} |",
            flush=True,
        )
        notes += [f"{engine}: {note}" for note in got["notes"]]
        if got["postings"] and not postings:
            postings = f"{got['files']:,} files, {got['postings']:,} postings (distinct trigrams of a file, summed)"
    print()
    if postings:
        print(f"- {postings}")
    for note in notes:
        print(f"- {note}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
