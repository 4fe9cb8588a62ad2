"""The checks a saved index's take up runs in C instead of per file in Python (issue 51: a new server's first query
waits for them): each gives exactly what the per-file rule it replaced gives, and refuses what it refused."""

from __future__ import annotations

import json
import os
import struct
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rootbound.search.index import saved as saved_format
from rootbound.search.index.kept_files import known_of, load_known, vouched_rows, vouches
from rootbound.search.index.saved import KINDS, RACY_NS, Snapshot, decode
from tests.search.test_index_saved import _saved_bytes, _with_body, tree  # noqa: F401  the fixture

_PART = st.sampled_from(["", ".", "..", "...", "a", ".a", "a.", "é", "\udcff", "/"])
_NAME = st.lists(_PART, max_size=4).map("/".join) | st.text(alphabet=st.sampled_from(["a", ".", "/", "é"]), max_size=8)


@settings(max_examples=400, deadline=None)
@given(st.lists(_NAME, min_size=1, max_size=6))
def test_all_plain_is_plain_of_every_name(names: list[str]) -> None:
    raw = "\0".join(names).encode("utf-8", "surrogateescape")
    assert saved_format._all_plain(raw) == all(saved_format._plain(name) for name in names)


def _parts(good: bytes) -> tuple[bytes, dict[str, Any], int]:
    head = struct.calcsize("<8sIIQ32s")
    body = good[head:]
    (size,) = struct.unpack_from("<Q", body)
    return body, json.loads(body[8 : 8 + size]), (8 + size + 7) & ~7


def test_a_name_not_plain_or_a_number_used_twice_is_refused(tree: tuple[Path, Path]) -> None:  # noqa: F811
    """Names rewritten in place (their length kept, the checksum made right) to an absolute path, an empty
    component, a ``.`` or ``..`` component; a text file's number given to another text file: each refused."""
    root, _ = tree
    good = _saved_bytes(tree)
    identity = (os.stat(root).st_dev, os.stat(root).st_ino)
    body, meta, start = _parts(good)
    offset, size = meta["blobs"]["names"]
    names = body[start + offset : start + offset + size]
    first = names.split(b"\0")[0]
    assert len(first) >= 4
    for bad in (b"/" + first[1:], first[:-1] + b"/", b"./" + first[2:], b"../" + first[3:], b"a//" + first[3:]):
        hostile = body[: start + offset] + bad + body[start + offset + len(first) :]
        with pytest.raises(saved_format.Refused, match="file names"):
            decode(_with_body(good, hostile), str(root), identity)
    decode(good, str(root), identity)  # the file as written passes
    offset, size = meta["blobs"]["records"]
    records = np.frombuffer(body, "<i8", size // 8, start + offset).reshape(-1, 7).copy()
    text = np.flatnonzero(records[:, 5] == 0)
    assert len(text) >= 2
    records[text[1], 6] = records[text[0], 6]
    hostile = body[: start + offset] + records.tobytes() + body[start + offset + size :]
    with pytest.raises(saved_format.Refused, match="used twice"):
        decode(_with_body(good, hostile), str(root), identity)


def _old_known(snap: Snapshot) -> dict[str, tuple[tuple[int, ...], str, int]]:
    """The per-file loop ``load_known`` had before (the reference)."""
    racy = snap.saved_ns - RACY_NS
    known = {}
    for name, row in zip(snap.names, snap.records.tolist(), strict=True):
        if row[4] < racy:
            known[name] = (tuple(row[:5]), KINDS[row[5]], row[6])
    if snap.total > 2 * max(1, sum(1 for _, kind, _ in known.values() if kind == "t")):
        return {}  # more numbers than twice the live text files: built afresh
    return known


@pytest.mark.parametrize("racy", [(), (1,), (1, 3), (0, 2, 3)])
def test_load_known_keeps_what_the_per_file_rule_keeps(racy: tuple[int, ...]) -> None:
    """Records by path, with the files changed within ``RACY_NS`` of the save left out (read again)."""
    saved_ns = 10 * RACY_NS
    rows = [
        [1, 10 + at, 100 + at, 5, (saved_ns - RACY_NS // 2) if at in racy else 7 + at, kind, number]
        for at, (kind, number) in enumerate([(0, 0), (1, -1), (0, 1), (4, -1), (0, 2)])
    ]
    snap = Snapshot("/d", (1, 2), saved_ns, ["a", "b/c", "d", "e", "f/g/h"], np.array(rows, np.int64), [], 3)
    index = SimpleNamespace(
        saved=SimpleNamespace(load=lambda path, identity: snap),
        identity=(1, 2),
        path=Path("/d"),
        lock=threading.Lock(),
    )
    got = load_known(index)
    assert got == _old_known(snap)
    assert bool(got) == (racy != (0, 2, 3))  # the last: 3 numbers, 1 live text file
    assert list(got.values()) == list(_old_known(snap).values())
    assert all(type(stat_of) is tuple and all(type(n) is int for n in stat_of) for stat_of, _, _ in got.values())


_FIELD = st.integers(0, 3)
_CTIME = st.sampled_from([0, 3 * RACY_NS])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(_FIELD, _FIELD, _FIELD, _FIELD, st.sampled_from([0, 3 * RACY_NS]), st.integers(0, 4)), max_size=8
    ),
    st.lists(
        st.tuples(st.integers(-1, 9), st.tuples(_FIELD, _FIELD, _FIELD, _FIELD, _CTIME)),
        max_size=12,
    ),
    st.lists(st.integers(1, 2), min_size=12, max_size=12),
)
def test_vouched_rows_is_vouches_file_by_file(
    records: list[tuple[int, ...]], walked: list[tuple[int, tuple[int, ...]]], links: list[int]
) -> None:
    """The take up's child reports every file: ``vouched_rows`` checks them all in numpy, and keeps exactly the
    files ``vouches`` keeps against the records ``known_of`` gives (a record changed too close to the save, a kind
    the postings do not answer for, another link count, any other stat: not kept)."""
    saved_ns = 4 * RACY_NS  # a ctime of 3 * RACY_NS is within RACY_NS of the save: never vouched for
    rows = [[*fields, kind, at if kind == 0 else -1] for at, (*fields, kind) in enumerate(records)]
    names = [f"f{at}" for at in range(len(rows))]
    array = np.array(rows, np.int64).reshape(len(rows), 7)
    snap = Snapshot("/d", (1, 2), saved_ns, names, array, [], max(1, len(rows)))
    known = known_of(snap)
    assume(known is not None)
    assert known is not None
    places = np.array([at if at < len(rows) else -1 for at, _ in walked], np.int64)
    now = np.array([[*stat_of, links[n]] for n, (_, stat_of) in enumerate(walked)], np.int64).reshape(len(walked), 6)
    got = vouched_rows(snap, places, now).tolist()
    want = [
        (record := known.get(names[at]) if 0 <= at < len(rows) else None) is not None
        and vouches(record, stat_of, links[n])
        for n, (at, stat_of) in enumerate(walked)
    ]
    assert got == want
