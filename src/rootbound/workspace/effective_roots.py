"""Which roots a call is served with: the operator's DIRs held once, a roots snapshot held as one Boundary while
it is used, and what an empty roots list means (``docs/server.md``, the root policy table in ``server.py``).

Why a module of its own: this is the policy between the client's roots and the wall; ``server.py`` only wires it to
the MCP server. Nothing here opens a file: :class:`~rootbound.Boundary` takes the roots in.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mcp.server.context import ServerRequestContext

from rootbound.confine.boundary import Boundary, Dropped
from rootbound.core.roots import RootSet
from rootbound.mcp import RootsService
from rootbound.mcp._sdk_server import connection_of
from rootbound.workspace.lexical_allow import split_lexically
from rootbound.workspace.limits.fd_budget import RootBudget, RootsRefused, SnapshotUse

RECENT_SNAPSHOTS = 16
"""2026-07-28 roots snapshots kept held between the requests that carry them (see :class:`HeldBoundaries`)."""
RECENT_ROOTS = 256
"""At most this many roots in them together: each root holds descriptors (``--max-roots`` is per snapshot)."""
NO_DIRS_FIX = (
    'give the server the folder to serve: rootbound serve DIR (in the host\'s MCP config: "args": ["serve", '
    '"/path/to/project"]), or enable roots in the client'
)
NO_CAPABILITY_HELP = (
    "This server was started without directories, so it serves only the client's roots, and this client "
    f"declares none. Fix: {NO_DIRS_FIX}"
)
ROOTS_LIST_FAILED = (
    "the client failed to list its roots (its roots/list answered with an error), so nothing is served. Fix: "
    "fix the client's roots, or start the server with --ignore-client-roots to serve its directories whatever "
    "the client's roots are: rootbound serve --ignore-client-roots DIR"
)
IGNORED_ROOTS_WHY = (
    "the server runs with --ignore-client-roots: it serves the operator's directories and never asks the client "
    "for roots"
)


class HeldBoundaries:
    """Roots are taken in once per snapshot and held open, so re-pointing a root's path cannot move it.

    The operator's DIRs are taken in at start and held for the life of the process (:attr:`allowlist`); they are
    never resolved by name again: a client's roots are opened *beneath* their held fds, so the kernel keeps them
    inside the DIRs the operator gave even while a DIR's path is swapped for a symlink. A client's roots snapshot
    (the ``RootSet`` the service cached for a connection, or a modern request's own) gets one :class:`Boundary`,
    held as long as the snapshot lives. A root whose path stops naming the held directory (deleted, moved,
    replaced by a symlink) is dropped from then on: denied, never followed to its new target.

    A 2026-07-28 request carries its roots itself (``recurring``): each is a new claim, yet agents send the same
    roots on every call, so the last few such snapshots stay held between requests (:data:`RECENT_SNAPSHOTS`,
    :data:`RECENT_ROOTS`) and an equal one reuses them. Only while nothing changed: a snapshot that dropped a root
    when it was taken in is not kept (the root may exist by the next request), and a kept one whose root moved is
    taken in again, as the request's claim is now.
    """

    def __init__(
        self, dirs: Sequence[Path], budget: RootBudget | None = None, *, allowlist: Boundary | None = None
    ) -> None:
        self.dirs = tuple(dirs)
        self.allowlist = allowlist if allowlist is not None else Boundary(dirs) if dirs else None  # held at start
        self.budget = budget or RootBudget()  # issue 16 #2: roots per snapshot, and the process's fds
        self._held: weakref.WeakKeyDictionary[RootSet, Boundary] = weakref.WeakKeyDictionary()
        self._recent: OrderedDict[RootSet, int] = OrderedDict()  # strong keys: their entries above stay
        self._lock = threading.Lock()
        self._uses = SnapshotUse(self.budget.idle_release)  # issue 24 #2: idle snapshots make room when short
        self._owners: dict[RootSet, int] = {}  # snapshot -> live sessions whose current snapshot it is

    def own(self, roots: RootSet) -> None:
        """A session now serves ``roots`` (its cached snapshot): held at least until :meth:`disown`."""
        with self._lock:
            self._owners[roots] = self._owners.get(roots, 0) + 1

    def disown(self, roots: RootSet) -> None:
        """A session stopped serving ``roots`` (it ended, or its roots changed): when it was the last one, the
        snapshot's boundary closes now (deferred until operations on it finish), fds and write threads with it,
        whatever still refers to the ``RootSet`` object (issue 33 #2: an SDK timer's context kept whole sessions,
        and so their boundaries, alive for minutes)."""
        with self._lock:
            left = self._owners.get(roots, 0) - 1
            if left > 0:
                self._owners[roots] = left
                return
            self._owners.pop(roots, None)
            if roots in self._recent:
                return  # also a kept 2026-07-28 snapshot: its own bound (RECENT_SNAPSHOTS) releases it
            boundary = self._held.pop(roots, None)
        if boundary is not None:
            boundary.close()

    @contextlib.contextmanager
    def for_roots(self, roots: RootSet, *, recurring: bool = False) -> Iterator[Boundary]:
        """The boundary of a snapshot, kept open for the ``with`` block (a replacement elsewhere cannot close it
        under the caller). One ``lstat`` per effective root notices a root whose path moved; the DIRs are not
        looked at by name at all."""
        with self._holding(roots, wait=True, recurring=recurring) as boundary:
            assert boundary is not None  # waiting, it always has one
            yield boundary

    def held_for(
        self, roots: RootSet, *, recurring: bool = False
    ) -> contextlib.AbstractContextManager[Boundary | None]:
        """:meth:`for_roots` for a caller on the event loop, which must not wait: ``None`` when the snapshot is
        not held yet (taking it in opens paths by name) or another thread holds the lock (it may be doing that)."""
        return self._holding(roots, wait=False, recurring=recurring)

    @contextlib.contextmanager
    def _holding(self, roots: RootSet, *, wait: bool, recurring: bool) -> Iterator[Boundary | None]:
        taken = self._use(roots, wait=wait, recurring=recurring)
        if taken is None:
            yield None
            return
        boundary, use = taken
        try:
            yield boundary
        finally:
            use.__exit__(None, None, None)
            self._uses.leave(roots)

    def _use(
        self, roots: RootSet, *, wait: bool, recurring: bool
    ) -> tuple[Boundary, contextlib.AbstractContextManager[object]] | None:
        if not self._lock.acquire(blocking=wait):
            return None
        try:
            boundary = self._held.get(roots)
            if boundary is not None and boundary.closed:
                boundary = None
            stale = () if boundary is None else boundary.verify()
            if boundary is None or (recurring and stale):
                if not wait:
                    return None
                boundary, stale = self._take_in(roots, recurring), ()
            elif recurring and roots in self._recent:
                self._recent.move_to_end(roots)  # least recently used goes first
            if stale:
                # Keep only what still names the object taken in (fds shared, nothing resolved again by name).
                replaced, boundary = boundary, boundary.without(stale)
                self._held[roots] = boundary
                replaced.close()  # deferred until operations still running on it finish
            use = boundary.use()
            use.__enter__()  # under the lock: no replacement can close it before it is in use
            self._uses.enter(roots)
        finally:
            self._lock.release()
        return boundary, use

    def _take_in(self, roots: RootSet, recurring: bool) -> Boundary:
        try:
            self.budget.admit(len(roots))  # RootsRefused: a clear tool error (see _tool_guard)
        except RootsRefused:
            if not self._release_idle():
                raise
            self.budget.admit(len(roots))
        kept, refused = split_lexically(roots, self.dirs) if self.allowlist else (list(roots), [])
        boundary = Boundary(kept, allow=self.allowlist)
        moved = self._uses.changed(roots, boundary)  # released earlier: what moved meanwhile is not followed
        if moved:
            replaced, boundary = boundary, boundary.without(moved)
            replaced.close()
        settled = not boundary.dropped  # refusals by spelling alone cannot change; intake's may
        # Refused by spelling alone, with the reason every refusal outside the allowlist gives (issue 16 #4).
        boundary.dropped = tuple(Dropped(root, "not in allowlist") for root in refused) + boundary.dropped
        previous = self._held.pop(roots, None)  # popped, not overwritten: its key may be another, equal object
        self._held[roots] = boundary
        if previous is not None:
            previous.close()  # a kept snapshot taken in again: deferred until operations on it finish
        self._recent.pop(roots, None)
        if recurring and settled:
            self._recent[roots] = len(kept)
            while len(self._recent) > RECENT_SNAPSHOTS or sum(self._recent.values()) > RECENT_ROOTS:
                oldest, _ = self._recent.popitem(last=False)
                evicted = self._held.get(oldest)
                if evicted is not None and oldest is not roots:
                    evicted.close()  # deferred until operations on it finish; its entry goes with its key
        return boundary

    def _release_idle(self) -> int:
        """Release the snapshots unused for ``budget.idle_release`` s (an abandoned session's); how many."""
        idle = self._uses.idle(list(self._held.keys()))
        for roots in idle:
            boundary = self._held.pop(roots)
            self._recent.pop(roots, None)
            self._uses.released(roots, boundary)
            boundary.close()  # nobody uses it: its fds close now
        return len(idle)


@dataclass(frozen=True)
class Situation:
    """The roots a call is served with, where they came from, and (for ``list_roots``) why and how to fix it."""

    roots: RootSet
    source: str
    why: str | None = None
    fix: str | None = None


class SessionSnapshot:
    """The snapshot one handshake-era session serves, owned in :class:`HeldBoundaries` until the session ends or
    its roots change: a session's end closes what it held, by the connection's own close hook."""

    KEY: Final = "rootbound.serve.session_snapshot"

    def __init__(self, held: HeldBoundaries) -> None:
        self._held = held
        self._current: RootSet | None = None

    @classmethod
    def serve(cls, ctx: ServerRequestContext[Any, Any], held: HeldBoundaries, roots: RootSet) -> None:
        """Note that the session behind ``ctx`` is served ``roots`` now."""
        connection = connection_of(ctx)
        owner = connection.state.get(cls.KEY)
        if not isinstance(owner, cls):
            owner = connection.state[cls.KEY] = cls(held)
            connection.exit_stack.callback(owner.end)
        owner.use(roots)

    def use(self, roots: RootSet) -> None:
        previous = self._current
        if previous is roots:
            return
        self._held.own(roots)
        self._current = roots
        if previous is not None:
            self._held.disown(previous)

    def end(self) -> None:
        previous, self._current = self._current, None
        if previous is not None:
            self._held.disown(previous)


class EmptyRoots:
    """What an empty roots list means: a client with no workspace, or a client that withdrew its workspace.

    A client that declares roots and lists none may simply have no folder open (mcp-use answers ``[]`` whenever
    its user set none): while its roots have never been non-empty, it is served the DIRs, like a client that
    declares no roots. Once it has listed a root, an empty list withdraws everything at once (the stale- and
    withdrawn-roots guarantees; ``rootbound audit``'s ``empty-roots`` class). "Ever listed" is remembered per
    connection in the handshake era, and per process over stdio in 2026-07-28 (one client, no connection); a
    stateless 2026-07-28 HTTP request carries nothing to remember (a request with an empty list cannot be told from
    one that never had any), so there an empty list is served the DIRs: roots narrow, the DIRs are the wall (issue
    35). ``strict``: an empty list always serves nothing. Without DIRs there is nothing to fall back on.
    """

    KEY: Final = "rootbound.serve.listed_roots"

    def __init__(
        self, fallback: RootSet | None, *, strict: bool, one_client: bool, service: RootsService | None = None
    ) -> None:
        self.fallback = fallback
        self.service = service
        self.strict = strict
        self.one_client = one_client
        self._listed_here = False  # 2026-07-28 over stdio: the process's one client listed a root

    def settle(self, ctx: ServerRequestContext[Any, Any], roots: RootSet, *, modern: bool) -> Situation:
        if self.fallback is not None and roots is self.fallback:
            why = "the client declares no roots (or, over stateless HTTP in the handshake era, cannot be asked)"
            return Situation(roots, "operator directories", why)
        if roots:
            self._remember(ctx, modern)
            return Situation(roots, "client")
        if self.fallback is None:
            return Situation(
                roots,
                "client",
                "the client declares roots but lists none, and this server has no directories of its own",
                "add a folder in the client (a root), or start the server with one: rootbound serve DIR",
            )
        if self._listed(ctx, modern):
            return Situation(
                roots,
                "client",
                "the client withdrew every root (its roots list went from some roots to none)",
                "add a folder in the client (a root); nothing is served until it lists one again",
            )
        if self.strict:
            return Situation(
                roots,
                "client",
                "the client lists no roots, and this server runs with --strict-empty-roots (an empty list means "
                "no access)",
                "add a folder in the client (a root), or start the server without --strict-empty-roots to serve "
                "its directories to a client that has never listed a root",
            )
        if modern and not self.one_client:
            return Situation(
                self.fallback,
                "operator directories",
                "the client lists no roots, and a stateless HTTP request (2026-07-28) cannot show whether it ever "
                "listed any: an empty list is served the operator's directories (the rule for stateless HTTP; "
                "--strict-empty-roots refuses it instead)",
            )
        return Situation(
            self.fallback,
            "operator directories",
            "the client declares roots but has listed none on this connection: served as a client without a "
            "workspace; once it lists roots they are intersected with these, and emptying the list then withdraws "
            "everything",
        )

    def _remember(self, ctx: ServerRequestContext[Any, Any], modern: bool) -> None:
        if modern:
            self._listed_here = self._listed_here or self.one_client
        else:
            connection_of(ctx).state[self.KEY] = True

    def _listed(self, ctx: ServerRequestContext[Any, Any], modern: bool) -> bool:
        if modern:
            return self._listed_here
        if self.service is not None and self.service.ever_listed(ctx):
            return True  # any answer of the client's with a root, the warm-up at initialized included (issue 33 #5)
        return connection_of(ctx).state.get(self.KEY) is True
