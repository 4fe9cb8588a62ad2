"""RootsProvider without a server: the store, validation at the call site, the callback's answers and errors.

Runs on both SDK majors (tests/mcp/both): the context is whatever the installed SDK hands a roots callback.
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.shared.message import SessionMessage

from mcp import types
from rootbound import InvalidPath, InvalidRootsAnswer, InvalidRootURI, Root, RootLimits, RootSet, path_to_uri
from rootbound.mcp.client import RootsHandlerError, RootsListHandler, RootsProvider, _to_sdk_result
from tests.mcp.both.client_harness import make_context

ClientRequestContext = Any  # 2.x ClientRequestContext, 1.x RequestContext[ClientSession, Any]

pytestmark = pytest.mark.anyio


@pytest.fixture
def ctx() -> Iterator[ClientRequestContext]:
    """A request context around a real (unconnected) ClientSession, as the SDK builds it."""
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    out_send, out_receive = anyio.create_memory_object_stream[SessionMessage](1)
    session = ClientSession(receive, out_send)
    yield make_context(session, 7)
    for stream in (send, receive, out_send, out_receive):
        stream.close()


async def answer(provider: RootsProvider, ctx: ClientRequestContext) -> Any:
    result = await provider.list_roots(ctx)
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


# -- static roots -------------------------------------------------------------------------------------------


async def test_static_roots_are_canonical_named_and_deduplicated(ctx: ClientRequestContext) -> None:
    provider = RootsProvider(
        [
            Root("FILE://localhost/srv/a%20b/", "A"),
            PurePosixPath("/srv/é"),
            "/srv/c",
            "file:///srv/a%20b",  # duplicate of the first (another spelling): the first one wins, name kept
            Root("file:///srv/m", "M", {"k": [1, {"x": None}]}),
            PureWindowsPath("C:/Work/x y"),
        ]
    )
    assert await answer(provider, ctx) == {
        "roots": [
            {"uri": "file:///srv/a%20b", "name": "A"},
            {"uri": "file:///srv/%C3%A9"},
            {"uri": "file:///srv/c"},
            {"uri": "file:///srv/m", "name": "M", "_meta": {"k": [1, {"x": None}]}},
            {"uri": "file:///C:/Work/x%20y"},
        ]
    }
    assert provider.has_source


async def test_empty_static_roots_are_a_source(ctx: ClientRequestContext) -> None:
    provider = RootsProvider([])
    assert provider.has_source
    assert await answer(provider, ctx) == {"roots": []}


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (["https://example.com/x"], InvalidRootURI),
        (["file://evil.example/x"], InvalidRootURI),
        (["file:/x"], InvalidRootURI),
        (["file:///a/../b"], InvalidRootURI),
        (["file:///a%2Fb"], InvalidRootURI),
        (["file:///a?q"], InvalidRootURI),
        (["relative/path"], InvalidPath),
        (["/a/\x00b"], InvalidPath),
        ([42], InvalidPath),
        ("file:///a", InvalidRootsAnswer),  # a lone string where a collection belongs
        (Root("file:///a"), InvalidRootsAnswer),
        (None, InvalidRootsAnswer),
        ([Root("file:///a", "x" * 2000)], InvalidRootsAnswer),  # over RootLimits.max_name_length
    ],
)
async def test_invalid_input_raises_at_the_call_site_and_keeps_the_store(bad: Any, error: type[Exception]) -> None:
    provider = RootsProvider(["/srv/keep"])
    before = provider.roots
    with pytest.raises(error):
        await provider.set_roots(bad)
    if isinstance(bad, list):
        with pytest.raises(error):
            await provider.add(*bad)
        with pytest.raises(error):
            await provider.remove(*bad)
    assert provider.roots is before
    assert provider.roots.uris == ("file:///srv/keep",)


async def test_invalid_constructor_input_raises() -> None:
    with pytest.raises(InvalidRootURI):
        RootsProvider(["file://host/x"])
    with pytest.raises(ValueError, match="coalesce"):
        RootsProvider([], coalesce=-1)
    with pytest.raises(TypeError):
        RootsProvider(handler=42)  # type: ignore[arg-type]


async def test_limits_apply_to_the_store() -> None:
    provider = RootsProvider(["/a"], limits=RootLimits(max_roots=2))
    await provider.add("/b")
    with pytest.raises(InvalidRootsAnswer):
        await provider.add("/c")
    assert provider.roots.uris == ("file:///a", "file:///b")


async def test_add_remove_and_versions() -> None:
    provider = RootsProvider(["/a"])
    v0 = provider.roots.version
    await provider.add(Root.from_path("/b", "B"), "/a")
    assert list(provider.roots.uris) == ["file:///a", "file:///b"]
    v1 = provider.roots.version
    assert v1 > v0
    await provider.add("file:///a/")  # already there: no change, no new version
    assert provider.roots.version == v1
    await provider.remove("file://localhost/a", "/not/there")
    assert list(provider.roots.uris) == ["file:///b"]
    assert [r.name for r in provider.roots] == ["B"]
    assert provider.roots.version > v1
    await provider.set_roots(RootSet.of(["/x"]))
    assert list(provider.roots.uris) == ["file:///x"]


async def test_set_roots_gives_a_no_source_provider_a_source(ctx: ClientRequestContext) -> None:
    provider = RootsProvider()
    assert not provider.has_source
    assert await answer(provider, ctx) == {"code": -32601, "message": "Roots not supported"}
    await provider.set_roots(["/a"])
    assert provider.has_source
    assert await answer(provider, ctx) == {"roots": [{"uri": "file:///a"}]}


# -- the dynamic handler ------------------------------------------------------------------------------------


async def test_sync_and_async_handlers_receive_the_context(ctx: ClientRequestContext) -> None:
    seen: list[ClientRequestContext] = []

    def sync_handler(c: ClientRequestContext) -> list[str]:
        seen.append(c)
        return ["/h/sync"]

    async def async_handler(c: ClientRequestContext) -> RootSet:
        seen.append(c)
        return RootSet.of([Root("file:///h/async/", "Async")])

    assert await answer(RootsProvider(handler=sync_handler), ctx) == {"roots": [{"uri": "file:///h/sync"}]}
    assert await answer(RootsProvider(handler=async_handler), ctx) == {
        "roots": [{"uri": "file:///h/async", "name": "Async"}]
    }
    assert seen == [ctx, ctx]


async def test_handler_wins_over_static_roots(ctx: ClientRequestContext) -> None:
    provider: RootsProvider

    def handler(c: ClientRequestContext) -> list[Root]:
        return [*provider.roots, Root.from_path("/extra")]

    provider = RootsProvider(["/static"], handler=handler)
    assert await answer(provider, ctx) == {"roots": [{"uri": "file:///static"}, {"uri": "file:///extra"}]}
    await provider.set_roots(["/changed"])
    assert await answer(provider, ctx) == {"roots": [{"uri": "file:///changed"}, {"uri": "file:///extra"}]}


async def test_handler_may_return_an_sdk_result(ctx: ClientRequestContext) -> None:
    def handler(c: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///sdk/x", name="X")])  # type: ignore[arg-type]

    assert await answer(RootsProvider(handler=handler), ctx) == {"roots": [{"uri": "file:///sdk/x", "name": "X"}]}


@pytest.mark.parametrize(
    "junk",
    [
        None,
        42,
        "file:///a",
        b"file:///a",
        {"roots": []},
        [42],
        ["https://x.example/"],
        ["file://remote/x"],
        ["file:///a/%2e%2e/b"],
        [None],
        ["relative"],
        ["/a"] * 3 + ["/b", "/c"],  # over the limit below
    ],
)
async def test_junk_from_the_handler_is_a_generic_internal_error(junk: Any, ctx: ClientRequestContext) -> None:
    provider = RootsProvider(handler=lambda c: junk, limits=RootLimits(max_roots=2))
    assert await answer(provider, ctx) == {"code": -32603, "message": "Internal error"}


async def test_a_raising_handler_leaks_nothing_by_default(ctx: ClientRequestContext) -> None:
    async def handler(c: ClientRequestContext) -> list[str]:
        raise RuntimeError("secret /home/alice/.ssh")

    assert await answer(RootsProvider(handler=handler), ctx) == {"code": -32603, "message": "Internal error"}
    exposed = await answer(RootsProvider(handler=handler, expose_errors=True), ctx)
    assert exposed["code"] == -32603
    assert "secret /home/alice/.ssh" in exposed["message"]


async def test_roots_changed_bumps_the_version() -> None:
    provider = RootsProvider(handler=lambda c: [])
    await provider.roots_changed()
    assert provider.roots.version >= 2


# -- check_exists -------------------------------------------------------------------------------------------


async def test_check_exists_drops_vanished_roots(tmp_path: Path, ctx: ClientRequestContext) -> None:
    here, gone = tmp_path / "here", tmp_path / "gone"
    here.mkdir()
    gone.mkdir()
    provider = RootsProvider([here, gone, PureWindowsPath("C:/elsewhere")], check_exists=True)
    assert await answer(provider, ctx) == {"roots": [{"uri": path_to_uri(here)}, {"uri": path_to_uri(gone)}]}
    gone.rmdir()
    assert await answer(provider, ctx) == {"roots": [{"uri": path_to_uri(here)}]}
    assert len(provider.roots) == 3  # the store keeps them; only the answer is filtered
    assert await answer(RootsProvider([gone]), ctx) == {"roots": [{"uri": path_to_uri(gone)}]}


# -- capability decisions -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider_args", "version", "expected"),
    [
        ({"roots": ["/a"]}, "2025-11-25", {"listChanged": True}),
        ({"roots": ["/a"]}, "2024-11-05", {"listChanged": True}),
        ({"roots": ["/a"], "notify": False}, "2025-06-18", {"listChanged": False}),
        ({"roots": ["/a"]}, "2026-07-28", {}),
        ({"roots": ["/a"], "notify": False}, "2026-07-28", {}),
        ({"handler": lambda c: []}, "2026-07-28", {}),
        ({}, "2025-11-25", None),
        ({}, "2026-07-28", None),
    ],
)
async def test_capability_per_era(
    provider_args: dict[str, Any], version: str, expected: Any, ctx: ClientRequestContext
) -> None:
    provider = RootsProvider(**provider_args)
    capability = provider._rootbound_roots_capability(ctx.session, version)
    dumped = None if capability is None else capability.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert dumped == expected


async def test_client_kwargs_is_the_bound_callback() -> None:
    provider = RootsProvider(["/a"])
    assert provider.client_kwargs()["list_roots_callback"] == provider.list_roots
    assert provider.session_kwargs()["list_roots_callback"] == provider.list_roots


# -- roots_handler(): the provider as a roots function ------------------------------------------------------


async def test_the_handler_answers_roots_or_a_fixed_error() -> None:
    provider = RootsProvider(["/srv/a"])
    assert [str(root.uri) for root in await provider.roots_handler()(None)] == ["file:///srv/a"]
    with pytest.raises(RootsHandlerError, match=r"^Roots not supported$"):
        await RootsListHandler(RootsProvider())(None)

    def broken(ctx: Any) -> Any:
        raise RuntimeError("/secret/path")

    with pytest.raises(RootsHandlerError, match=r"^Internal error$"):  # the handler's text never leaves
        await RootsProvider(handler=broken).roots_handler()(None)


# -- URIs through the SDK's own Root model (pydantic FileUrl on both majors) ----------------------------------------


def test_pin_file_url_respells_some_uris_and_the_check_refuses_them() -> None:
    """The SDK's ``Root.uri`` is pydantic's ``FileUrl``, which re-spells some URIs; ``_to_sdk_result`` refuses any."""
    for raw, respelled in [("file:///srv/é", "file:///srv/%C3%A9"), ("file:///a/./b", "file:///a/b")]:
        dumped = types.Root.model_validate({"uri": raw}).model_dump(mode="json")
        assert dumped["uri"] == respelled
    root = Root("file:///srv/x")
    object.__setattr__(root, "uri", "file:///srv/é")  # a URI rootbound never makes, forced past its checks
    with pytest.raises(InvalidRootsAnswer, match="re-spell"):
        _to_sdk_result(RootSet((root,), 1))


def test_canonical_uris_survive_file_url_byte_for_byte() -> None:
    """Every URI rootbound makes passes the SDK's ``FileUrl`` unchanged, so the fail-closed check refuses no real root:
    a segment with each printable ASCII character but the separators, non-ASCII, a Windows drive."""
    chars = string.ascii_letters + string.digits + string.punctuation.replace("/", "").replace("\\", "") + " "
    paths: list[Any] = [PurePosixPath(f"/srv/a{char}b") for char in chars]
    paths += [PurePosixPath("/srv/é/日本/🙂"), PureWindowsPath("C:/Work/x y"), PureWindowsPath("D:/")]
    uris = [path_to_uri(path) for path in paths]
    result = _to_sdk_result(RootSet.of(uris))
    assert [str(root.uri) for root in result.roots] == uris
