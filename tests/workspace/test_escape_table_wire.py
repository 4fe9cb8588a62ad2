"""``rootbound serve`` over the wire against the shared escape table (:mod:`rootbound.core.escape_table`): the
spellings ``rootbound audit`` probes with and the library's escape tests use. One real stdio server, the real
SDK client; every spelling, as a file (``read_file``, ``stat``) and as a directory (``list_directory``), is an
error that neither shows the secret nor names a listing-only entry outside the root."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from rootbound.core.escape_table import LINKS, OUT, SPELLINGS, Layout, lookalikes, prefix_sibling
from tests.helpers.serve_process import serve, text_of

pytestmark = pytest.mark.anyio
SECRET = "SECRET-table-7f3a"
ENTRY = "listing-only-entry-5c1d"


def plant(base: Path) -> tuple[Path, Layout]:
    root = base / "work"
    (root / "sub").mkdir(parents=True)
    (root / "inside.txt").write_text("inside\n")
    layout = Layout(str(base), root.name)
    for name in (OUT, prefix_sibling(root.name), *lookalikes(root.name)):
        (base / name).mkdir()
        (base / name / "secret").write_text(f"{SECRET}\n")
        (base / name / ENTRY).write_text("x\n")
    for rel, target, is_dir in LINKS:
        os.symlink(target.format(**layout.values()), root / rel, target_is_directory=is_dir)
    return root, layout


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_every_table_spelling_is_refused_over_the_wire(tmp_path: Path, mode: str) -> None:
    root, layout = plant(tmp_path.resolve())
    with anyio.fail_after(120):
        async with serve("stdio", [str(root)], mode=mode, provider=None) as client:
            assert await text_of(client, "read_file", path=str(root / "inside.txt")) == (False, "inside\n")
            for spelling in SPELLINGS:
                where = spelling.render(layout)
                for tool, path in (
                    ("read_file", where + spelling.joiner + "secret"),
                    ("stat", where + spelling.joiner + "secret"),
                    ("list_directory", where),
                ):
                    error, text = await text_of(client, tool, path=path)
                    assert SECRET not in text and ENTRY not in text, (spelling, tool, text)
                    assert error, (spelling, tool, text)
