"""``resources/subscribe`` of one URI: the resource opened through :meth:`Boundary.open` exactly as a read opens it
(outside, missing, ignored or refused: the same not-found), then the directory that holds it (a file's parent, or
the directory itself) opened beneath the roots and handed to :class:`~.watches.Watches`, which watches it through
that fd. A file that is a root of its own has no served parent to watch: it cannot be subscribed to.
"""

from __future__ import annotations

import contextlib
import stat
from dataclasses import dataclass

from mcp.shared.exceptions import MCPError

from rootbound.confine.boundary import LIST
from rootbound.core.errors import RootsError
from rootbound.core.uri import path_to_uri
from rootbound.search.rooted_fs import RootedFS
from rootbound.workspace.resources.addresses import bad_request, not_found, split_uri
from rootbound.workspace.resources.listings import served
from rootbound.workspace.resources.watches import Notify, Subscription, Watches, WatchesFull

__all__ = ["SubscribeRequest", "still_served", "subscribe", "watch_top_levels"]


@dataclass(frozen=True)
class SubscribeRequest:
    """One subscription: the URI as the client sent it (its notifications carry it back), the session it belongs
    to and how to tell it, the process's watches, and the ignore choice."""

    uri: str
    session: object
    notify: Notify
    watches: Watches
    show_ignored: bool = False


def subscribe(fs: RootedFS, request: SubscribeRequest) -> dict[str, object]:
    base, _ = split_uri(request.uri)
    try:
        with served(fs, request.uri, base, request.show_ignored) as (handle, st, display):
            if stat.S_ISDIR(st.st_mode):
                _watch(request, handle.fd, "")
                return {}
            if not stat.S_ISREG(st.st_mode):
                not_found(request.uri)
        parent, _, name = display.rpartition("/")
        with fs.boundary.open(parent or "/", LIST, resolver=fs.resolver) as directory:
            _watch(request, directory.fd, name)
    except (RootsError, OSError, ValueError, UnicodeError):
        not_found(request.uri)
    return {}


def still_served(fs: RootedFS, uri: str) -> bool:
    """Whether the subscribed ``uri`` is still served by ``fs``'s roots (after they changed): opened as a read
    opens it; the ignore files are not asked again (they did not change with the roots)."""
    try:
        base, _ = split_uri(uri)
        with served(fs, uri, base, True):
            return True
    except (MCPError, RootsError, OSError, ValueError, UnicodeError):
        return False


def _watch(request: SubscribeRequest, dir_fd: int, name: str) -> None:
    try:
        request.watches.subscribe(
            request.session, request.notify, dir_fd, Subscription(request.session, request.uri, name)
        )
    except WatchesFull as full:
        bad_request(str(full))
    except OSError:
        bad_request(
            "the kernel refused another inotify watch (fs.inotify.max_user_watches): unsubscribe from something, "
            "or raise the limit"
        )


def watch_top_levels(fs: RootedFS, session: object, notify: Notify, watches: Watches) -> int:
    """Watch each directory root's top level (what ``resources/list`` shows) for ``session``, which ``notify``
    tells of any change there; over a bound, or refused by the kernel, that root is not watched (its entries are
    still listed). Returns how many roots are watched."""
    watched = 0
    for root in fs.boundary:
        if root.kind != "dir":
            continue
        uri = path_to_uri(str(root.path))
        with contextlib.suppress(RootsError, OSError, WatchesFull), fs.boundary.open(str(root.path), LIST) as handle:
            watches.subscribe(session, notify, handle.fd, Subscription(session, uri, ""))
            watched += 1
    return watched
