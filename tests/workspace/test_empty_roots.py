"""An empty roots list: a client with no workspace, or one that withdrew it (issue 26 #1).

``rootbound serve DIR``: a client that declares roots but has never listed one is served the DIR (mcp-use answers
``[]`` whenever its user set no roots); once it has listed a root, an empty list withdraws everything at once; a
stateless 2026-07-28 HTTP request cannot tell the two apart and is served the DIR (issue 35: the DIRs are the
wall, roots only narrow them); ``--strict-empty-roots`` always serves nothing; without DIRs there is nothing to
fall back on. ``list_roots`` says which, and how to fix it, in every case.
Real ``rootbound serve`` subprocesses, real SDK clients.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rootbound.mcp import RootsProvider
from tests.helpers.serve_process import serve, text_of

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
LASTING = [("stdio", "legacy"), ("stdio", "2026-07-28"), ("http", "legacy")]
"""Where the server can remember a client: a handshake-era connection, or the one client of a stdio process."""
TOKEN = "CONTENT-7f3a"
SECRET_LINE = f"{TOKEN}\n"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "app").mkdir(parents=True)
    (tmp_path / "ws" / "app" / "notes.md").write_text(SECRET_LINE)
    return tmp_path / "ws"


async def _read(client: object, path: Path) -> tuple[bool, str]:
    return await text_of(client, "read_file", path=str(path))  # type: ignore[arg-type]


@pytest.mark.parametrize(("transport", "mode"), LASTING)
async def test_never_listed_is_served_the_dirs(work: Path, transport: str, mode: str) -> None:
    provider = RootsProvider([])  # declares roots, lists none
    with anyio.fail_after(60):
        async with serve(transport, [str(work)], mode=mode, provider=provider) as client:
            assert await _read(client, work / "app" / "notes.md") == (False, SECRET_LINE)
            error, text = await text_of(client, "list_roots")
    assert not error
    lines = text.splitlines()
    assert lines[0] == f"{work.as_uri()} dir"
    assert lines[-1] == "source: operator directories"
    assert "why: the client declares roots but has listed none" in text


@pytest.mark.parametrize(("transport", "mode"), LASTING)
async def test_emptied_after_listing_withdraws_at_once(work: Path, transport: str, mode: str) -> None:
    provider = RootsProvider([work / "app"])
    with anyio.fail_after(60):
        async with serve(transport, [str(work)], mode=mode, provider=provider) as client:
            assert await _read(client, work / "app" / "notes.md") == (False, SECRET_LINE)
            await provider.set_roots([])
            await provider.flush()
            error, text = await _read(client, work / "app" / "notes.md")
            assert error and TOKEN not in text
            assert text.endswith("Fix: add a folder in the client (a root); nothing is served until it lists one again")
            error, text = await text_of(client, "list_roots")
            # Listing again later serves again (the client's roots ∩ the DIR, not the DIR).
            await provider.set_roots([work / "app"])
            await provider.flush()
            assert await _read(client, work / "app" / "notes.md") == (False, SECRET_LINE)
    assert not error
    assert text.splitlines()[0] == "(no roots: every path is denied)"
    assert "(the client withdrew every root (its roots list went from some roots to none))" in text
    assert "rootbound serve DIR" not in text  # the operator already gave one: not the fix
    assert text.splitlines()[-1] == "source: client"


async def test_stateless_http_serves_the_dirs_and_says_which_rule(work: Path) -> None:
    provider = RootsProvider([])
    with anyio.fail_after(60):
        async with serve("http", [str(work)], mode="2026-07-28", provider=provider) as client:
            assert await _read(client, work / "app" / "notes.md") == (False, SECRET_LINE)
            error, roots = await text_of(client, "list_roots")
    assert not error
    assert roots.splitlines()[0] == f"{work.as_uri()} dir"
    assert "a stateless HTTP request (2026-07-28) cannot show whether it ever listed any" in roots
    assert "(the rule for stateless HTTP; --strict-empty-roots refuses it instead)" in roots
    assert roots.splitlines()[-1] == "source: operator directories"


async def test_stateless_http_strict_flag_still_refuses(work: Path) -> None:
    provider = RootsProvider([])
    with anyio.fail_after(60):
        async with serve("http", ["--strict-empty-roots", str(work)], mode="2026-07-28", provider=provider) as client:
            error, text = await _read(client, work / "app" / "notes.md")
            assert error and TOKEN not in text
            error, roots = await text_of(client, "list_roots")
    assert not error
    assert "runs with --strict-empty-roots" in roots


@pytest.mark.parametrize("mode", ERAS)
async def test_strict_flag_serves_nothing_and_names_itself(work: Path, mode: str) -> None:
    provider = RootsProvider([])
    with anyio.fail_after(60):
        async with serve("stdio", ["--strict-empty-roots", str(work)], mode=mode, provider=provider) as client:
            error, text = await _read(client, work / "app" / "notes.md")
            assert error and TOKEN not in text
            error, roots = await text_of(client, "list_roots")
    assert not error
    assert "runs with --strict-empty-roots" in roots
    assert "start the server without --strict-empty-roots" in roots


@pytest.mark.parametrize("mode", ERAS)
async def test_no_dirs_nothing_to_fall_back_on(work: Path, mode: str) -> None:
    provider = RootsProvider([])
    with anyio.fail_after(60):
        async with serve("stdio", ["--trust-client-roots"], mode=mode, provider=provider) as client:
            error, text = await _read(client, work / "app" / "notes.md")
            assert error and TOKEN not in text
            error, roots = await text_of(client, "list_roots")
    assert not error
    assert "this server has no directories of its own" in roots
    assert "start the server with one: rootbound serve DIR" in roots


@pytest.mark.parametrize("mode", ERAS)
async def test_no_roots_capability_is_served_the_dirs_and_says_so(work: Path, mode: str) -> None:
    with anyio.fail_after(60):
        async with serve("stdio", [str(work)], mode=mode, provider=None) as client:
            assert await _read(client, work / "app" / "notes.md") == (False, SECRET_LINE)
            error, text = await text_of(client, "list_roots")
    assert not error
    assert "why: the client declares no roots" in text
    assert text.splitlines()[-1] == "source: operator directories"
