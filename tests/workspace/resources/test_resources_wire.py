"""The resources methods through real SDK clients on ``rootbound serve``: over stdio and over Streamable HTTP on
127.0.0.1, in both eras. Templates, a read with its content identity, a directory paged with
``resources/directory/read`` to its end, the extension declared, and the escape table answered with the one
not-found error."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict

from mcp import Client
from rootbound.core.escape_table import SPELLINGS
from rootbound.core.uri import path_to_uri
from rootbound.workspace.resources.addresses import EXTENSION
from tests.helpers.serve_process import serve
from tests.workspace.test_escape_table_wire import ENTRY, SECRET, plant

pytestmark = pytest.mark.anyio
MODES = ["legacy", "2026-07-28"]


class DirectoryPage(BaseModel):
    """SEP-2640's result, as the wire has it (extra fields kept: the test looks at them)."""

    model_config = ConfigDict(extra="allow")
    resources: list[dict[str, Any]]
    nextCursor: str | None = None


async def directory_read(client: Client, uri: str, cursor: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"uri": uri} | ({"cursor": cursor} if cursor else {})
    request = types.Request[dict[str, Any], str](method="resources/directory/read", params=params)
    page = await client.session.send_request(request, DirectoryPage)
    return page.model_dump(by_alias=True, exclude_none=True)


def workspace(base: Path) -> Path:
    root = base.resolve() / "work"
    (root / "many").mkdir(parents=True)
    (root / "notes.md").write_text("# notes\nline two\n")
    for n in range(450):
        (root / "many" / f"f{n:03}.txt").write_text(f"{n}\n")
    (root / "many" / "zsub").mkdir()
    return root


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_real_client_reads_and_pages_the_workspace(tmp_path: Path, transport: str, mode: str) -> None:
    root = workspace(tmp_path)
    args = [str(root)] if transport == "stdio" else ["--insecure-no-auth", str(root)]
    with anyio.fail_after(120):
        async with serve(transport, args, mode=mode, provider=None) as client:
            if mode == "legacy":  # the handshake era has no `extensions`: declared under `experimental`
                assert (client.server_capabilities.experimental or {})[EXTENSION]["directoryRead"] is True
            templates = await client.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == ["file:///{+path}"]
            listed = await client.list_resources()
            assert {r.name for r in listed.resources} == {"work", "many", "notes.md"}
            read = await client.read_resource(path_to_uri(root / "notes.md"))
            (content,) = read.contents
            assert isinstance(content, types.TextResourceContents) and content.text == "# notes\nline two\n"
            assert content.mime_type == "text/markdown"
            identity = (content.meta or {})[EXTENSION]
            assert identity["digest"] == "sha256:" + hashlib.sha256(b"# notes\nline two\n").hexdigest()
            assert identity["size"] == 17
            names: list[str] = []
            cursor = None
            pages = 0
            while True:
                page = await directory_read(client, path_to_uri(root / "many"), cursor)
                pages += 1
                names += [r["name"] for r in page["resources"]]
                assert all(set(r) <= {"uri", "name", "mimeType", "size"} for r in page["resources"])
                cursor = page.get("nextCursor")
                if not cursor:
                    break
            assert pages == 3 and names == [f"f{n:03}.txt" for n in range(450)] + ["zsub"]
            with pytest.raises(MCPError) as caught:
                await directory_read(client, path_to_uri(root / "notes.md"))
            assert caught.value.error.code == -32602 and caught.value.error.message != "Resource not found"
            with pytest.raises(MCPError) as caught:
                await client.read_resource("file:///etc/hostname")
            assert (caught.value.error.code, caught.value.error.message) == (-32602, "Resource not found")


@pytest.mark.parametrize("mode", MODES)
async def test_every_table_spelling_is_not_found_over_the_wire(tmp_path: Path, mode: str) -> None:
    root, layout = plant(tmp_path.resolve())
    with anyio.fail_after(180):
        async with serve("stdio", [str(root)], mode=mode, provider=None) as client:
            inside = await client.read_resource(path_to_uri(root / "inside.txt"))
            assert isinstance(inside.contents[0], types.TextResourceContents)
            for spelling in SPELLINGS:
                where = spelling.render(layout)
                uri = where if where.startswith("file:") else "file://" + where
                for method, target in (("read", uri + spelling.joiner + "secret"), ("directory", uri)):
                    with pytest.raises(MCPError) as caught:
                        await (client.read_resource(target) if method == "read" else directory_read(client, target))
                    error = caught.value.error
                    assert (error.code, error.message) == (-32602, "Resource not found"), (spelling, error)
                    assert SECRET not in repr(error) and ENTRY not in repr(error)
