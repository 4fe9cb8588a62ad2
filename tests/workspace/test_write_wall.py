"""``list_roots`` and the start-up line say which wall holds writes (issue 33 #1): the kernel's, or the checks.

Real ``rootbound serve`` subprocesses over stdio; the kernel here has Landlock, so the answer must name it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootbound.confine import landlock
from rootbound.mcp import RootsProvider
from tests.helpers.serve_process import serve, serve_cli, text_of

pytestmark = pytest.mark.skipif(landlock.abi_version() < 1, reason="needs Landlock in this kernel")


@pytest.mark.anyio
@pytest.mark.parametrize("writable", [True, False])
async def test_list_roots_names_the_write_wall(tmp_path: Path, writable: bool) -> None:
    args = [str(tmp_path), *(["--writable"] if writable else [])]
    async with serve("stdio", args, mode="legacy", provider=RootsProvider([tmp_path])) as client:
        result = await client.call_tool("list_roots", {})
        error, text = await text_of(client, "list_roots")
    assert not error
    structured = result.structured_content or {}
    if writable:
        assert f"writes: held beneath these roots by the kernel (Landlock ABI {landlock.abi_version()}" in text
        assert str(structured["writes"]).startswith("the kernel (Landlock")
    else:
        assert "writes:" not in text and "writes" not in structured


def test_the_start_up_line_names_it(tmp_path: Path) -> None:
    done = serve_cli(str(tmp_path), "--writable", "--no-sandbox")  # no input: serves nothing, exits at EOF
    assert "writes held beneath the roots by the kernel (Landlock ABI" in done.stderr, done.stderr
