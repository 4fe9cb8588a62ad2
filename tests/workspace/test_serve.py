"""``rootbound serve`` end to end: a real subprocess over stdio and over Streamable HTTP on 127.0.0.1, both eras,
every tool, the root policy table, ``--writable``, and bounded output."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mcp import MCPError
from rootbound import Root
from rootbound.cli import main as cli_main
from rootbound.mcp import RootsProvider
from tests.helpers.serve_process import serve, text_of

pytestmark = pytest.mark.anyio

MODES = ("legacy", "2026-07-28")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("serve").resolve()
    work = base / "work"
    for d in ("app/src", "app/.git", "lib", "big", "other"):
        (work / d).mkdir(parents=True)
    (work / "app" / "pyproject.toml").write_text("[project]\nname='app'\n")
    (work / "app" / "src" / "main.py").write_text("print('hi')  # TODO one\n")
    (work / "lib" / "package.json").write_text("{}\n")
    (work / "lib" / "notes.md").write_text("TODO two\nnothing\n")
    (work / "big" / "blob.txt").write_text("x" * 5000)
    for i in range(30):
        (work / "big" / f"f{i:02}.txt").write_text("needle\n" * 10)
    (work / "other" / "inside.txt").write_text("other root\n")
    (base / "secret.txt").write_text("SECRET\n")
    (work / "app" / "leak").symlink_to(base / "secret.txt")
    return base


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_every_tool(tree: Path, transport: str, mode: str) -> None:
    work = tree / "work"
    provider = RootsProvider([Root.from_path(work / "app", "App"), work / "lib"])
    with anyio.fail_after(60):
        async with serve(transport, [str(work)], mode=mode, provider=provider) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {
                "list_roots", "list_directory", "directory_tree", "read_file", "read_multiple_files",
                "read_media_file", "stat", "search_files", "grep", "find_projects",
            }  # fmt: skip
            error, text = await text_of(client, "list_roots")
            assert not error
            assert text.splitlines()[:2] == [f"{(work / 'app').as_uri()} (App) dir", f"{(work / 'lib').as_uri()} dir"]
            error, text = await text_of(client, "list_directory", path=".")
            assert (error, text.splitlines()) == (False, [".git/", "leak@", "pyproject.toml", "src/"])
            assert await text_of(client, "read_file", path="src/main.py") == (False, "print('hi')  # TODO one\n")
            error, text = await text_of(client, "read_file", path="src/main.py", offset=6, length=4)
            assert (error, text.splitlines()[0]) == (False, "'hi'")
            assert "[truncated: bytes 6-10 of 24" in text
            result = await client.call_tool("stat", {"path": str(work / "lib" / "notes.md")})
            assert not result.is_error
            info = result.structured_content
            assert isinstance(info, dict)
            assert (info["type"], info["size"], info["mime"]) == ("file", 17, "text/plain")
            error, text = await text_of(client, "stat", path=str(work / "lib" / "notes.md"))
            assert "type: file\nsize: 17\n" in text
            error, text = await text_of(client, "search_files", pattern="*.py")
            found, *answered_by = text.split("\n")  # a scan's first answer says why it scanned (issue 50 item 6)
            assert (error, found) == (False, str(work / "app" / "src" / "main.py"))
            # none when a saved index answered (issue 51: the tree is shared by this test's variants)
            assert answered_by == [] or re.fullmatch(r"\[scan: .+\]", answered_by[0]), answered_by
            error, text = await text_of(client, "grep", pattern="TODO")
            assert not error
            # app/leak, a symlink, is not followed, and the answer says so (issue 27).
            not_searched = "[not searched: 1 symlink (not followed; grep its target's path)]"
            shown = text.splitlines()  # which path answered was said once, by the first search (issue 50 item 6)
            assert shown == [
                f"{work / 'app' / 'src' / 'main.py'}:1:print('hi')  # TODO one",
                f"{work / 'lib' / 'notes.md'}:1:TODO two",
                not_searched,
            ]
            error, text = await text_of(client, "grep", pattern="TO+DO t", regex=True)
            assert (error, text) == (
                False,
                f"{work / 'lib' / 'notes.md'}:1:TODO two\n{not_searched}",
            )
            error, text = await text_of(client, "find_projects")
            assert (error, text.splitlines()) == (
                False,
                [f"{work / 'app'}  [.git, pyproject.toml]", f"{work / 'lib'}  [package.json]"],
            )
            # Denials name the reason class and never echo the input.
            for path, reason in [
                ("leak", "symlink escapes root"),
                (str(tree / "secret.txt"), "outside roots"),
                ("../../secret.txt", "outside roots"),
                (str(work / "other" / "inside.txt"), "outside roots"),
                ((work / "big" / "blob.txt").as_uri(), "outside roots"),
            ]:
                error, text = await text_of(client, "read_file", path=path)
                assert error, path
                assert f"({reason})" in text, text
                assert "secret" not in text and "inside" not in text and "blob" not in text
            # Writes are not even offered without --writable: an unknown tool (-32602) whose message names the flag.
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("write_file", {"path": "new.txt", "content": "x"})
            assert unknown.value.code == -32602
            assert unknown.value.message.startswith("write_file is a writing tool and this server is read-only")
            assert "rootbound serve --writable" in unknown.value.message
            # Narrowing in the handshake era reaches the live session.
            await provider.set_roots([work / "app"])
            await provider.flush()
            error, text = await text_of(client, "read_file", path=str(work / "lib" / "notes.md"))
            assert (error, text.endswith("(outside roots)")) == (True, True)


POLICY = [
    # (DIRs, client roots, expected list_roots first line or error code)
    ("dirs", "roots", "client ∩ dirs"),
    ("dirs", "none", "dirs"),
    ("none", "roots", "client"),
    ("none", "none", -32021),
    ("none", "slash", "refused"),
    ("dirs", "slash", "narrowed"),
]


@pytest.mark.parametrize(("dirs", "client", "expected"), POLICY)
@pytest.mark.parametrize("mode", MODES)
async def test_root_policy_table(tree: Path, dirs: str, client: str, expected: str | int, mode: str) -> None:
    work = tree / "work"
    args = [str(work / "app"), str(work / "lib")] if dirs == "dirs" else ["--trust-client-roots"]
    provider = None
    if client == "roots":
        provider = RootsProvider([work / "app", work / "other"])
    elif client == "slash":
        provider = RootsProvider(["/"])
    with anyio.fail_after(60):
        async with serve("stdio", args, mode=mode, provider=provider) as session:
            if expected == -32021:
                with pytest.raises(MCPError) as info:
                    await session.call_tool("read_file", {"path": str(work / "app" / "x")})
                assert info.value.code == -32021
                assert "rootbound serve DIR" in info.value.message  # says how to fix it
                error, text = await text_of(session, "list_roots")  # answers, with the same fix (issue 35)
                assert not error and "rootbound serve DIR" in text
                return
            error, text = await text_of(session, "list_roots")
    assert not error
    lines = text.splitlines()
    if expected == "client ∩ dirs":
        assert lines[0] == f"{(work / 'app').as_uri()} dir"
        # other/ is not in DIRs: dropped (shown by its canonical URI and the reason), not widened
        assert lines[1] == f"refused a client root: {(work / 'other').as_uri()} (not in allowlist)"
    elif expected == "dirs":
        assert lines[:2] == [f"{(work / 'app').as_uri()} dir", f"{(work / 'lib').as_uri()} dir"]
        assert lines[-1] == "source: operator directories"
    elif expected == "client":
        assert lines[:2] == [f"{(work / 'app').as_uri()} dir", f"{(work / 'other').as_uri()} dir"]
    elif expected == "refused":
        assert lines[:2] == [
            "(no roots: every path is denied)",
            "refused a client root: file:/// (filesystem root not allowed)",
        ]
        assert lines[2].startswith("no roots: every path is denied. Fix: have the client declare a root")
        assert lines[2].endswith("(no root the client declared could be used: see the reasons above)")
    elif expected == "narrowed":
        assert lines[:2] == [
            f"{(work / 'app').as_uri()} dir [narrowed to the allowlist]",
            f"{(work / 'lib').as_uri()} dir [narrowed to the allowlist]",
        ]


@pytest.mark.parametrize("mode", MODES)
async def test_writable(tmp_path: Path, mode: str) -> None:
    work = tmp_path.resolve()
    (work / "outside").mkdir()
    (work / "ws").mkdir()
    (work / "ws" / "dangling").symlink_to(work / "outside" / "planted.txt")
    (work / "ws" / "dangling-inside").symlink_to(work / "ws" / "absent.txt")
    provider = RootsProvider([work / "ws"])
    with anyio.fail_after(60):
        async with serve("stdio", [str(work), "--writable"], mode=mode, provider=provider) as client:
            assert "write_file" in {tool.name for tool in (await client.list_tools()).tools}
            error, text = await text_of(client, "write_file", path="hello.txt", content="héllo\n")
            assert (error, text) == (False, f"wrote 7 bytes to {work / 'ws' / 'hello.txt'}")
            assert (work / "ws" / "hello.txt").read_text() == "héllo\n"
            error, text = await text_of(client, "write_file", path="dangling", content="evil")
            assert (error, text) == (
                True,
                "a symlink leads outside the allowed roots: the link's target is outside the roots; list_roots shows "
                "what may be read (symlink escapes root)",
            )
            assert not (work / "outside" / "planted.txt").exists()
            error, text = await text_of(client, "write_file", path="dangling-inside", content="x")
            assert (error, text.endswith("(dangling symlink)")) == (True, True)
            assert not (work / "ws" / "absent.txt").exists()
            error, text = await text_of(client, "write_file", path=str(work / "outside" / "x.txt"), content="evil")
            assert (error, text.endswith("(outside roots)")) == (True, True)
            assert not (work / "outside" / "x.txt").exists()


async def test_output_is_bounded_with_a_marker(tree: Path) -> None:
    work = tree / "work"
    provider = RootsProvider([work / "big"])
    args = [str(work), "--max-read", "1000"]
    with anyio.fail_after(60):
        async with serve("stdio", args, mode="legacy", provider=provider) as client:
            error, text = await text_of(client, "read_file", path="blob.txt")
            assert not error
            assert text.startswith("x" * 1000)
            assert text.endswith("[truncated: bytes 0-1000 of 5000; read on with offset=1000]")
            error, text = await text_of(client, "grep", pattern="needle")
            lines = text.splitlines()
            assert not error
            if re.fullmatch(r"\[(index|scan: .+)\]", lines[-1]):  # said by a session's first search only
                lines.pop()
            assert len(lines) == 201  # 200 matches (the per-call cap) + the marker
            assert lines[-1] == "[truncated: the first 200 shown; narrow the request]"


def test_cli_help_and_bad_arguments(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        cli_main(["serve", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for needle in ("client roots ∩ DIRs", "-32021", "--writable", "--state-key-env", "--max-read", "--http"):
        assert needle in out
    assert cli_main(["serve", str(tmp_path / "missing")]) == 2
    assert "DIR does not exist" in capsys.readouterr().err
    assert cli_main(["serve", "--state-key-env", "ROOTBOUND_TEST_UNSET_VAR"]) == 2
    os.environ["ROOTBOUND_TEST_SHORT_KEY"] = "short"
    try:
        assert cli_main(["serve", "--state-key-env", "ROOTBOUND_TEST_SHORT_KEY"]) == 2
    finally:
        del os.environ["ROOTBOUND_TEST_SHORT_KEY"]
    # / as a DIR is refused like a client's root of /: the whole file system is not a workspace.
    assert cli_main(["serve", "/"]) == 2
    assert "DIR / would serve the whole file system" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--log-level", "LOUD"], "argument --log-level: expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
        (["--roots-timeout", "0"], "argument --roots-timeout: expected a number of seconds > 0"),
        (["--tool-timeout", "nan"], "argument --tool-timeout: expected a number of seconds > 0"),
        (["--http", "127.0.0.1:99999"], "argument --http: expected [HOST:]PORT with PORT from 0 to 65535"),
        (["--http", "nonsense"], "argument --http: expected [HOST:]PORT"),
        (["--max-read", "0"], "argument --max-read: expected a positive integer"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_flags_are_usage_errors_with_serves_usage(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as info:
        cli_main(["serve", *argv])
    assert info.value.code == 2
    err = capsys.readouterr().err
    # Two lines, not the usage block (issue 50 item 8): the error, and where every flag is.
    assert err.startswith(f"rootbound serve: error: {message}")
    assert err.endswith("\nrootbound serve --help lists every flag\n") and err.count("\n") == 2
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv", [["--version"], ["--help"], ["serve", "--help"], ["serve", "--log-level", "LOUD"], ["audit", "--help"]]
)
def test_answers_that_serve_nothing_do_not_load_the_sdk(argv: list[str]) -> None:
    """``--version``, help and usage errors answer in ~0.1 s: the SDK's imports (~0.9 s) wait for a server."""
    code = (
        "import sys\nfrom rootbound.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types', 'pydantic'))))"
    )
    result = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines()[-1] == "[]", result.stdout[-500:]


def test_startup_line_states_the_policy(tmp_path: Path) -> None:
    work = tmp_path.resolve()
    (work / "one.txt").write_text("x\n")
    process = subprocess.run(
        [sys.executable, "-m", "rootbound", "serve", str(work), str(work / "one.txt"), "--tool-timeout", "5"],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    lines = process.stderr.splitlines()
    policy, _, sandbox = lines[0].partition("; sandbox: ")
    assert policy == (
        f"rootbound serve: stdio; roots: client roots ∩ DIRs [{work}, {work / 'one.txt'} (a file)], or the DIRs "
        "when the client declares none; read-only; reads up to 1048576 bytes; tool timeout 5 s; roots timeout 10 s"
    )
    assert sandbox  # the kernel wall's state is part of the one line (tests/workspace/test_sandbox.py pins its text)
    assert len(lines) == 1


@pytest.mark.parametrize(("mode", "with_dirs"), [("legacy", False), ("legacy", True), ("2026-07-28", True)])
async def test_root_replaced_by_a_symlink_is_denied_not_followed(tmp_path: Path, mode: str, with_dirs: bool) -> None:
    base = tmp_path.resolve()
    app, outside = base / "ws" / "app", base / "outside"
    app.mkdir(parents=True)
    outside.mkdir()
    (app / "a.txt").write_text("inside\n")
    (outside / "a.txt").write_text("SECRET\n")
    provider = RootsProvider([app])
    args = [str(base / "ws")] if with_dirs else ["--trust-client-roots"]
    with anyio.fail_after(60):
        async with serve("stdio", args, mode=mode, provider=provider) as client:
            assert await text_of(client, "read_file", path=str(app / "a.txt")) == (False, "inside\n")
            app.rename(base / "ws" / "app-moved")
            app.symlink_to(outside)  # the root's path now leads outside
            for path in (str(app / "a.txt"), "a.txt"):
                error, text = await text_of(client, "read_file", path=path)
                assert error, text
                assert "SECRET" not in text
            error, text = await text_of(client, "list_roots")
            assert outside.as_uri() not in text
