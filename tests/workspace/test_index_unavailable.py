"""A server whose search index cannot be built because numpy cannot load says so in one line and scans.

Before, the index thread died on the ImportError with a traceback on stderr (the host's server log) and the index
stayed "building" for good. The failure is made real: a ``numpy`` package earlier on ``PYTHONPATH`` that raises
what numpy raises when its BLAS library is missing (many lines of advice, the cause last).
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from tests.helpers.greedy import answered, session
from tests.helpers.serve_process import http_serve_process

BROKEN_NUMPY = (
    'raise ImportError("\\nIMPORTANT: PLEASE READ THIS FOR ADVICE ON HOW TO SOLVE THIS ISSUE!\\n\\n'
    'libopenblas.so.0: cannot open shared object file: No such file or directory")\n'
)


@pytest.mark.timeout(600)
def test_an_index_that_cannot_import_numpy_is_one_line_on_stderr_and_every_grep_scans(tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    (shim / "numpy").mkdir(parents=True)
    (shim / "numpy" / "__init__.py").write_text(BROKEN_NUMPY)
    served = tmp_path / "served"
    (served / "a").mkdir(parents=True)
    for n in range(20):
        (served / "a" / f"f{n}.txt").write_text(f"alpha\nbeta {n}\n")
    path = os.pathsep.join(p for p in (str(shim), os.environ.get("PYTHONPATH", "")) if p)
    said_always = ["--index-status", "always"]  # every grep says how it was answered, not only the first
    with http_serve_process([*said_always, str(served)], env={"PYTHONPATH": path}) as (url, process):

        async def main() -> list[str]:
            texts = []
            async with session(url, [served]) as client:
                for _ in range(4):
                    texts.append(await answered(client, "grep", pattern="beta", path=str(served)))
                    texts.append(await answered(client, "search_files", pattern="*.txt", path=str(served)))
                    await anyio.sleep(0.5)
            return texts

        texts = anyio.run(main)
        process.terminate()
        process.wait(30)
        assert process.stderr is not None
        rest = process.stderr.read()
    for text in texts[::2]:
        assert text.count("beta") == 20, text
    for text in texts[2::2]:  # the first starts the build (after the URL line: all it says is in ``rest``)
        assert text.endswith("[scan: not indexed: its modules could not be imported]"), text
    assert "Traceback" not in rest, rest
    said = [line for line in rest.splitlines() if "index" in line]
    assert len(said) == 1, rest
    assert "search index off" in said[0] and "cannot import numpy" in said[0] and "libopenblas" in said[0], said
