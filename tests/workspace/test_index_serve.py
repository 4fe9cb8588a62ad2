"""``rootbound serve`` and its search index as an operator runs it: built at start under the kernel sandbox, its
postings in the user's cache directory while it runs, removed at exit, and ``--clear-index``."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import pytest

from rootbound.search.index.registry import CACHE_ENV, cache_root
from tests.helpers.serve_process import serve, text_of

pytestmark = pytest.mark.anyio

NEVER_A_PID = "999999999"
"""Above the kernel's largest pid (2**22): the folder of a server that cannot be running."""


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_index_at_start_on_disk_under_the_sandbox_and_removed_at_exit(tmp_path: Path, transport: str) -> None:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    for i in range(40):
        (work / "src" / f"m{i}.py").write_text(f"def f{i}(): return 'needle {i}'\n" if i % 4 == 0 else "pass\n")
    index_root = tmp_path / "cache" / "rootbound" / "index"
    stale = index_root / NEVER_A_PID
    (stale / "1").mkdir(parents=True)
    env = {"ROOTBOUND_CACHE_HOME": str(tmp_path / "cache")}
    with anyio.fail_after(120):
        async with serve(transport, ["--index-at-start", str(work)], mode="legacy", provider=None, env=env) as client:
            # Built in the background from the start: searches scan until then, and say so once (issue 50 item 6).
            while not (index_root.is_dir() and any(index_root.rglob("*.npy"))):
                error, text = await text_of(client, "grep", pattern="needle")
                assert not error and "needle 0" in text, text
                await anyio.sleep(0.05)
            error, text = await text_of(client, "grep", pattern="needle")
            assert text.count("needle") == 10 and not text.endswith("]"), text  # no status line once said
            own = [folder for folder in index_root.iterdir() if folder.name != "saved"]
            assert len(own) == 1 and own[0].name != NEVER_A_PID  # the dead server's folder was removed at start
            assert any(own[0].rglob("*.npy"))  # the postings are on disk, mapped
            error, text = await text_of(client, "list_roots")
            assert "the search index's cache folder read-write" in text
    assert not list(own[0].rglob("*.npy"))  # removed when the server ended


def test_clear_index_removes_the_folders_of_servers_not_running(tmp_path: Path) -> None:
    index_root = tmp_path / "rootbound" / "index"
    (index_root / NEVER_A_PID / "1").mkdir(parents=True)
    (index_root / NEVER_A_PID / "1" / "seg00000-keys.npy").write_bytes(b"x")
    running = index_root / str(os.getpid())  # this process is alive: its folder stays
    running.mkdir()
    (index_root / "saved").mkdir(mode=0o700)
    (index_root / "saved" / "0123.rbi").write_bytes(b"x")  # a saved index (issue 51): removed too
    done = subprocess.run(
        [sys.executable, "-m", "rootbound", "serve", "--clear-index"],
        env={**{k: v for k, v in os.environ.items() if k != CACHE_ENV}, "XDG_CACHE_HOME": str(tmp_path)},  # XDG's
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"rootbound serve: removed 1 search index folder(s) of servers not running and 1 saved index(es) from "
        f"{index_root}\n"
    )
    assert sorted(p.name for p in index_root.iterdir()) == [str(os.getpid()), "saved"]
    assert list((index_root / "saved").iterdir()) == []


def test_rootbound_s_own_cache_variable_comes_before_xdg_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's servers keep their indexes out of the developer's own cache (``tests/conftest.py``) without
    moving every other program's cache (pip's, uv's) as ``XDG_CACHE_HOME`` would."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "own"))
    assert cache_root() == tmp_path / "own" / "rootbound" / "index"
    monkeypatch.delenv(CACHE_ENV)
    assert cache_root() == tmp_path / "xdg" / "rootbound" / "index"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_root() == Path(os.path.expanduser("~")) / ".cache" / "rootbound" / "index"


def test_the_suite_never_uses_the_developer_s_cache() -> None:
    """Set once for the session by ``tests/conftest.py``, inherited by every server the tests start."""
    assert os.environ.get(CACHE_ENV, "").startswith(os.path.realpath(tempfile.gettempdir()))
    assert not str(cache_root()).startswith(os.path.expanduser("~/.cache"))
