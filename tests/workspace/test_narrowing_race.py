"""docs/threats.md 1.16 over the wire: ``rootbound serve DIR`` as a real subprocess, both eras, while a thread swaps
DIR with a symlink to an outside directory and back (``renameat2(RENAME_EXCHANGE)``).

The client declares the outside directory as its root (and DIR/sub), changing its roots every call so each call
gets a fresh roots snapshot. The server holds DIR from start-up and opens client roots beneath that held fd, so no
answer may ever carry a byte of the outside directory or list it as a root. A longer soak: ``bench/narrowing.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from rootbound.mcp import RootsProvider
from tests.helpers.serve_process import serve, text_of
from tests.helpers.swap import OUTSIDE, DirSwapperProcess, SwapArena

pytestmark = pytest.mark.anyio

MODES = ("legacy", "2026-07-28")
SECONDS = 2.5


@pytest.mark.parametrize("mode", MODES)
async def test_swapped_dir_never_serves_the_outside_dir(tmp_path: Path, mode: str) -> None:
    arena = SwapArena.create(tmp_path)
    secret = OUTSIDE.decode()
    claims = ([arena.outside], [arena.outside, arena.dir / "sub"])
    provider = RootsProvider(claims[0])
    calls = denied = 0
    with anyio.fail_after(120):
        async with serve("stdio", [str(arena.dir)], mode=mode, provider=provider) as client:
            await text_of(client, "list_roots")  # the session is up before the clock starts
            swapper = DirSwapperProcess(arena)
            swapper.start()
            try:
                deadline = time.monotonic() + SECONDS
                while time.monotonic() < deadline:
                    await provider.set_roots(claims[calls % 2])  # a new snapshot for the next call
                    calls += 1
                    for path in (arena.outside / "secret", arena.outside / "sub" / "secret", arena.dir / "secret"):
                        error, text = await text_of(client, "read_file", path=str(path))
                        assert secret not in text
                        denied += error
                    error, text = await text_of(client, "list_roots")
                    # Never an effective root (a root line starts with its URI); a refused claim is shown as such.
                    for line in text.splitlines():
                        assert not line.startswith(arena.outside.as_uri()), line
                        if arena.outside.as_uri() in line:
                            assert line.startswith("refused a client root: "), line
            finally:
                swapper.stop()
            # The race happened (DIR really moved under the server), and the server still answers from DIR.
            assert swapper.swaps > 50
            await provider.set_roots([arena.dir])
            await provider.flush()
            answer = (True, "")
            for _ in range(50):  # the server takes the new roots in on receipt of list_changed
                answer = await text_of(client, "read_file", path=str(arena.dir / "in.txt"))
                if not answer[0]:
                    break
                await anyio.sleep(0.05)
            assert answer == (False, "INSIDE-operator-dir")
    assert calls > 5
    assert denied == 3 * calls
